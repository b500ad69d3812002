"""The adapter over roboflow's ``trackers`` (SORT, ByteTrack, OC-SORT, BoT-SORT, C-BIoU).

``trackers`` takes and returns ``supervision.Detections`` and may reorder and drop rows; the
adapter sends each box's index along in ``data`` so every input box comes back in its own
place with its ``tracker_id``, and nothing else about the box is touched (labels,
classifications, confidences and FFmpeg's integer boxes stay the detector's).

Times go to the library as timestamps (its variable-rate mode), so a detector that runs on
every Nth frame gives the Kalman filters the real gap. ``predict`` on a skipped frame runs the
library's own predict step on a copy of the tracker state taken after the last real update
(``copy.deepcopy``; a few small arrays per track), advanced to the skipped frame's time, and
returns ``tracked_objects`` for the tracks that update matched. Updating the real tracker with
an empty frame instead would delete every track still waiting for ``minimum_consecutive_frames``
(trackers drops immature unmatched tracks), so with an interval of 2 or more an object arriving
while others are tracked would never get an id (tests/tracking checks this).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from avdnn.errors import InvalidArgumentError
from avdnn.media.detections import Detections
from avdnn.tracking.base import TrackerSpec, load_class

#: What a predicted box inherits from the last detection of its track: label, class id, confidence.
_Last = tuple[str, int, float]


class RoboflowTracker:
    """One stream's tracker from ``trackers``; see the module docstring."""

    def __init__(self, spec: TrackerSpec, frame_rate: float, params: Mapping[str, float]) -> None:
        import supervision as sv

        cls = load_class(spec.target, spec)
        kwargs: dict[str, Any] = {spec.params[k]: v for k, v in params.items()}
        for name in ("lost_track_buffer", "minimum_consecutive_frames"):
            if spec.params.get(name) in kwargs:
                kwargs[spec.params[name]] = int(kwargs[spec.params[name]])
        self._sv = sv
        self.spec = spec
        try:
            self.tracker = cls(frame_rate=float(frame_rate), **kwargs, **spec.fixed)
        except ValueError as exc:  # trackers' documented refusal of a parameter (negative buffer, bad rate)
            raise InvalidArgumentError(f"tracker '{spec.name}': {exc}", option="tracker") from exc
        self._ghost: Any = None
        self._last: dict[int, _Last] = {}
        self._alive: frozenset[int] | None = None
        self._frame_size: tuple[int, int] = (0, 0)
        self._source = ""

    def _sv_detections(self, det: Detections) -> Any:
        return self._sv.Detections(
            xyxy=np.asarray(det.xyxy, dtype=np.float32).reshape(-1, 4),
            confidence=np.asarray(det.confidence, dtype=np.float32),
            class_id=np.asarray(det.class_id, dtype=int),
            data={"avdnn_index": np.arange(len(det))},
        )

    def update(self, detections: Detections, time: float, image: np.ndarray | None = None) -> Detections:
        kwargs: dict[str, Any] = {"timestamp": float(time)}
        if self.spec.wants_image:
            kwargs["frame"] = image
        out = self.tracker.update(self._sv_detections(detections), **kwargs)
        ids = np.full(len(detections), -1, dtype=np.int32)
        if len(out):
            ids[np.asarray(out.data["avdnn_index"], dtype=np.intp)] = np.asarray(out.tracker_id, dtype=np.int32)
        self._ghost = None
        self._alive = None
        self._frame_size, self._source = detections.frame_size, detections.source
        self._last = {
            int(t): (detections.labels[i], int(detections.class_id[i]), float(detections.confidence[i]))
            for i, t in enumerate(ids.tolist())
            if t >= 0
        }
        return detections.with_tracks(ids)

    def alive(self) -> frozenset[int]:
        """The confirmed ids the tracker still holds after the last update (lost ones included)."""
        if self._alive is None:
            ids = np.asarray(self.tracker.tracked_objects.tracker_id).tolist()
            self._alive = frozenset(int(t) for t in ids if int(t) >= 0)
        return self._alive

    def predict(self, time: float) -> Detections:
        if not self._last:
            return Detections.empty(self._frame_size, self._source)
        if self._ghost is None:
            self._ghost = copy.deepcopy(self.tracker)
        kwargs: dict[str, Any] = {"timestamp": float(time)}
        self._ghost.update(self._sv.Detections.empty(), **kwargs)
        objects = self._ghost.tracked_objects
        keep = [(i, int(t)) for i, t in enumerate(np.asarray(objects.tracker_id).tolist()) if int(t) in self._last]
        keep.sort(key=lambda it: it[1])
        if not keep:
            return Detections.empty(self._frame_size, self._source)
        rows = [self._last[t] for _, t in keep]
        xyxy = np.asarray(objects.xyxy, dtype=np.float32)[[i for i, _ in keep]]
        xyxy[:, 2:] = np.maximum(xyxy[:, 2:], xyxy[:, :2])  # a Kalman state can invert a shrinking box
        return Detections(
            xyxy=xyxy,
            confidence=np.array([c for _, _, c in rows]),
            class_id=np.array([k for _, k, _ in rows]),
            labels=tuple(lb for lb, _, _ in rows),
            source=self._source,
            frame_size=self._frame_size,
            track_id=np.array([t for _, t in keep]),
            predicted=np.ones(len(keep), bool),
        )
