"""What every analytics stage needs to know about the tracks it sees: labels by vote, and who is gone.

The boxes of one object change label from frame to frame (an SSD says ``person``, then
``bicycle``, for the same rider). Counting by the label of one frame would count one object in
two classes, so every stage labels an object by vote: the most frequent detect label over its
*detected* boxes so far (predicted boxes repeat the last one), ties to the first seen, as
:class:`avdnn.tracking.TrackSummary` does.

A track is gone when the tracker says so (the ``track`` filter puts the ids it still holds in
:attr:`FrameAnalytics.alive`): that is the tracker's ``lost_track_buffer``, so an object missed
for a few frames stays the same object. Without a tracker's word (detections with ids made
elsewhere) a track is gone once it has not been seen for ``lost`` seconds. A stage forgets a
gone track, so memory stays bounded on a stream that never ends.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from avdnn.media.detections import Detections

#: Seconds unseen before a track counts as gone when no tracker says (the ``lost`` option's default).
DEFAULT_LOST = 1.0


@dataclass
class TrackInfo:
    """One track as a stage knows it."""

    track_id: int
    first_time: float
    first_pts: int | None
    last_time: float
    last_pts: int | None
    votes: Counter[str] = field(default_factory=Counter)
    last_label: str = ""

    @property
    def label(self) -> str:
        """The label by vote (see the module docstring); the last label while only predicted."""
        return self.votes.most_common(1)[0][0] if self.votes else self.last_label


class TrackBook:
    """The tracks seen so far and still present; ``observe`` once per frame, then ``gone``."""

    def __init__(self, lost: float = DEFAULT_LOST) -> None:
        self.lost = lost
        self.tracks: dict[int, TrackInfo] = {}

    def observe(self, det: Detections, time: float, pts: int | None) -> list[int]:
        """Count this frame's boxes; returns the row of each confirmed box's first appearance
        on this frame (a track id twice on one frame counts once: its first row)."""
        rows: list[int] = []
        seen: set[int] = set()
        ids = det.track_ids.tolist()
        predicted = det.predicted_mask.tolist()
        for i, tid in enumerate(ids):
            if tid < 0 or tid in seen:
                continue
            seen.add(tid)
            rows.append(i)
            info = self.tracks.get(tid)
            if info is None:
                info = self.tracks[tid] = TrackInfo(tid, time, pts, time, pts)
            info.last_time, info.last_pts = time, pts
            info.last_label = det.labels[i]
            if not predicted[i]:
                info.votes[det.labels[i]] += 1
        return rows

    def gone(self, time: float, alive: frozenset[int] | None, seen: set[int]) -> list[int]:
        """Tracks that ended by this frame (the tracker dropped them, or unseen for ``lost`` s), by id."""
        if alive is not None:
            out = [t for t in self.tracks if t not in alive and t not in seen]
        else:
            out = [t for t, info in self.tracks.items() if t not in seen and time - info.last_time > self.lost]
        return sorted(out)

    def forget(self, track_id: int) -> TrackInfo | None:
        return self.tracks.pop(track_id, None)


def box_fields(det: Detections, i: int) -> dict[str, Any]:
    """An event's fields about box ``i`` of ``det`` (class, score, box, predicted)."""
    xyxy: list[float] = np.asarray(det.xyxy[i], dtype=np.float64).tolist()
    return {
        "class_id": int(det.class_id[i]),
        "score": float(det.confidence[i]),
        "box": xyxy,
        "predicted": bool(det.predicted_mask[i]),
    }


__all__ = ["DEFAULT_LOST", "TrackBook", "TrackInfo", "box_fields"]
