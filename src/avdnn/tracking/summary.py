"""Per-object summary of a tracked stream: what each track was, when, and how sure.

Fed one frame's detections at a time (after a ``track`` filter), it keeps per track id the
first and last pts, the frames it was seen on (detected and predicted), the label by vote
(most frequent detect label over detected boxes, ties to the first seen) and the mean detect
confidence of its detected boxes. ``metadata_jsonl`` writes it at end of stream; Python users
feed it from ``avdnn.run`` themselves.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from avdnn.media.detections import Detections


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


class TrackSummary:
    """Running per-track totals; ``add`` once per frame, ``records`` at the end."""

    def __init__(self) -> None:
        self._tracks: dict[int, TrackRecord] = {}

    def add(self, detections: Detections | None, pts: int | None = None, time: float | None = None) -> None:
        """Count one frame's tracked boxes (boxes with ``track_id`` -1 are not objects yet)."""
        if detections is None:
            return
        pts = detections.pts if pts is None else pts
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
            rec = self._tracks.get(tid)
            if rec is None:
                rec = self._tracks[tid] = TrackRecord(tid, pts, pts, time, time)
            rec.last_pts, rec.last_time = pts, time
            rec.frames += 1
            if not pred:
                rec.detected += 1
                rec.confidence_sum += conf
                rec.votes[label] += 1

    def records(self) -> list[TrackRecord]:
        """Every track seen, by id."""
        return [self._tracks[k] for k in sorted(self._tracks)]

    def __len__(self) -> int:
        return len(self._tracks)
