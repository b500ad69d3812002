"""Per-object summary of a tracked stream: what each track was, when, and how sure.

Fed one frame's detections at a time (after a ``track`` filter), it keeps per track id the
first and last pts, the frames it was seen on (detected and predicted), the label by vote
(most frequent detect label over detected boxes, ties to the first seen) and the mean detect
confidence of its detected boxes. ``metadata_jsonl`` writes it at end of stream; Python users
feed it from ``avdnn.run`` themselves.

On a 24/7 input the tracker hands out ids for ever, so the records held are bounded: at most
``max_tracks`` (the most recently seen), and with ``max_idle`` none unseen for that many seconds
of stream time. A record that goes is *closed*: handed to ``on_closed`` (``metadata_jsonl``
writes its line then) and counted in :attr:`TrackSummary.totals`, which stay exact for every
track ever seen. Trackers retire a lost id after ``lost_track_buffer`` frames and never reuse
it, so a closed record is a finished one; an id seen again after its record closed starts a new
record (and counts again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from avdnn._util.lru import LruDict
from avdnn.media.detections import Detections

#: Track records held at once by default (the most recently seen); a few hundred bytes each.
MAX_TRACKS = 4096


@dataclass
class TrackRecord:
    """One track's running totals."""

    track_id: int
    first_pts: int | None
    last_pts: int | None
    first_time: float | None
    last_time: float | None
    frames: int = 0
    detected: int = 0
    confidence_sum: float = 0.0
    votes: Counter[str] = field(default_factory=Counter)

    @property
    def label(self) -> str:
        """The most frequent detect label (first seen wins a tie), or "" when only predicted."""
        return self.votes.most_common(1)[0][0] if self.votes else ""

    @property
    def mean_confidence(self) -> float | None:
        return self.confidence_sum / self.detected if self.detected else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "track_id": self.track_id,
            "label": self.label,
            "first_pts": self.first_pts,
            "last_pts": self.last_pts,
            "first_time": self.first_time,
            "last_time": self.last_time,
            "frames": self.frames,
            "detected_frames": self.detected,
            "mean_confidence": self.mean_confidence,
            "labels": dict(self.votes),
        }


@dataclass
class TrackTotals:
    """Totals over every track a summary saw, the closed ones included."""

    #: records started (one per track id, unless an id came back after its record closed)
    tracks: int = 0
    #: records closed by the bound (no longer in :meth:`TrackSummary.records`)
    closed: int = 0
    #: frames summed over the tracks (a frame with three tracks counts three), and of those detected
    frames: int = 0
    detected: int = 0
    first_id: int | None = None
    last_id: int | None = None


class TrackSummary:
    """Running per-track totals; ``add`` once per frame, ``records`` at the end (module docstring).

    ``max_tracks``: records held at once (None: :data:`MAX_TRACKS`; the least recently seen closes first); ``max_idle``:
    seconds of stream time a record may go unseen before it closes (None: no age bound);
    ``on_closed``: called with each record that closes, in closing order.
    """

    def __init__(
        self,
        *,
        max_tracks: int | None = None,
        max_idle: float | None = None,
        on_closed: Callable[[TrackRecord], None] | None = None,
    ) -> None:
        self._on_closed = on_closed
        self.max_idle = max_idle
        self._tracks: LruDict[int, TrackRecord] = LruDict(max_tracks or MAX_TRACKS, self._close)
        self.totals = TrackTotals()

    def _close(self, _tid: int, rec: TrackRecord) -> None:
        self.totals.closed += 1
        if self._on_closed is not None:
            self._on_closed(rec)

    def add(self, detections: Detections | None, pts: int | None = None, time: float | None = None) -> None:
        """Count one frame's tracked boxes (boxes with ``track_id`` -1 are not objects yet)."""
        if detections is None:
            return
        pts = detections.pts if pts is None else pts
        totals = self.totals
        seen: set[int] = set()
        for tid, label, conf, pred in zip(
            detections.track_ids.tolist(),
            detections.labels,
            detections.confidence.tolist(),
            detections.predicted_mask.tolist(),
            strict=True,
        ):
            if tid < 0 or tid in seen:
                continue
            seen.add(tid)
            rec = self._tracks.get(tid)  # the most recent now: the bound closes others first
            if rec is None:
                rec = TrackRecord(tid, pts, pts, time, time)
                self._tracks[tid] = rec
                totals.tracks += 1
                totals.first_id = tid if totals.first_id is None else min(totals.first_id, tid)
                totals.last_id = tid if totals.last_id is None else max(totals.last_id, tid)
            rec.last_pts, rec.last_time = pts, time
            rec.frames += 1
            totals.frames += 1
            if not pred:
                rec.detected += 1
                totals.detected += 1
                rec.confidence_sum += conf
                rec.votes[label] += 1
        if self.max_idle is not None and time is not None:
            while (head := self._tracks.oldest()) is not None:
                last = head[1].last_time
                if last is None or time - last <= self.max_idle:
                    break
                self._tracks.evict_oldest()

    def records(self) -> list[TrackRecord]:
        """Every track still held (not closed), by id; with nothing closed, every track seen."""
        return sorted(self._tracks.values(), key=lambda rec: rec.track_id)

    def close_all(self) -> None:
        """Close every record held (end of stream): each goes to ``on_closed``, least recent first."""
        while len(self._tracks):
            self._tracks.evict_oldest()

    def __len__(self) -> int:
        """Tracks seen, the closed ones included."""
        return self.totals.tracks
