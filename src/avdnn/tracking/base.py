"""The tracker seam: one small interface, one table of tracker names.

A tracker turns per-frame :class:`~avdnn.media.detections.Detections` into objects: ``update``
takes the boxes the detector found on a frame and returns them with their ``track_id``;
``predict`` returns where the confirmed objects of the last update are expected on a frame the
detector skipped (``dnn_detect`` ``interval``), flagged ``predicted``. An instance holds the
state of one stream: it is never shared between streams, even when the detector's model is.

The algorithms are not written here. Each row of :data:`KNOWN_TRACKERS` names a tracker of a
maintained library and the adapter module that speaks to it (today roboflow's ``trackers``, see
:mod:`avdnn.tracking.roboflow`); another library is one more adapter module and its rows.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from avdnn.errors import BackendUnavailableError, InvalidArgumentError
from avdnn.media.detections import Detections

#: The tracking parameters avdnn exposes (the ``track`` filter's option names, trackers' own names).
PARAMETERS: tuple[str, ...] = (
    "track_activation_threshold",
    "lost_track_buffer",
    "minimum_iou_threshold",
    "minimum_consecutive_frames",
    "high_conf_det_threshold",
)


@runtime_checkable
class Tracker(Protocol):
    """One stream's tracker. Times are the frames' presentation times in seconds, increasing."""

    def update(self, detections: Detections, time: float, image: np.ndarray | None = None) -> Detections:
        """The same boxes, in the same order, with ``track_id`` (-1: no confirmed track yet)."""
        ...

    def predict(self, time: float) -> Detections:
        """The predicted boxes of the objects the last ``update`` saw, at ``time`` (``predicted`` set)."""
        ...


@runtime_checkable
class ReportsAlive(Protocol):
    """A tracker that also says which confirmed ids it still holds (the events' ``end`` comes from it)."""

    def alive(self) -> frozenset[int]:
        """Confirmed track ids kept after the last ``update``, the ones lost but not yet dropped included."""
        ...


@dataclass(frozen=True)
class TrackerSpec:
    """A row of the tracker table.

    ``params`` maps avdnn's parameter names to the library's keyword for this tracker, and
    ``defaults`` holds the library's defaults for them (what ``-1`` means in the ``track``
    filter; a test checks them against the installed library's signatures). ``wants_image``:
    the tracker uses the picture (BoT-SORT's camera motion compensation), as a BGR array.
    """

    name: str
    adapter: str  # "module:Class" in avdnn.tracking
    target: str  # the library's "module:Class"
    requires: str  # the importable module of the library
    extra: str
    params: Mapping[str, str]
    defaults: Mapping[str, float]
    description: str
    wants_image: bool = False
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def installed(self) -> bool:
        return importlib.util.find_spec(self.requires) is not None


def _rf(
    name: str,
    cls: str,
    description: str,
    defaults: dict[str, float],
    *,
    iou_kw: str = "minimum_iou_threshold",
    wants_image: bool = False,
) -> TrackerSpec:
    params = {p: (iou_kw if p == "minimum_iou_threshold" else p) for p in PARAMETERS if p in defaults}
    return TrackerSpec(
        name=name,
        adapter="roboflow:RoboflowTracker",
        target=f"trackers:{cls}",
        requires="trackers",
        extra="track",
        params=params,
        defaults=defaults,
        description=description,
        wants_image=wants_image,
    )


#: tracker name -> spec. Defaults copied from trackers 2.6 (tests/tracking checks them against the library).
KNOWN_TRACKERS: dict[str, TrackerSpec] = {
    "bytetrack": _rf(
        "bytetrack",
        "ByteTrackTracker",
        "ByteTrack: two-stage IoU matching, low scores revive tracks",
        {
            "track_activation_threshold": 0.7,
            "lost_track_buffer": 30,
            "minimum_iou_threshold": 0.1,
            "minimum_consecutive_frames": 2,
            "high_conf_det_threshold": 0.6,
        },
    ),
    "sort": _rf(
        "sort",
        "SORTTracker",
        "SORT: Kalman filter and one IoU matching",
        {
            "track_activation_threshold": 0.25,
            "lost_track_buffer": 30,
            "minimum_iou_threshold": 0.3,
            "minimum_consecutive_frames": 3,
        },
    ),
    "ocsort": _rf(
        "ocsort",
        "OCSORTTracker",
        "OC-SORT: observation-centric re-update and direction consistency",
        {
            "lost_track_buffer": 30,
            "minimum_iou_threshold": 0.3,
            "minimum_consecutive_frames": 3,
            "high_conf_det_threshold": 0.6,
        },
    ),
    "botsort": _rf(
        "botsort",
        "BoTSORTTracker",
        "BoT-SORT: ByteTrack with camera motion compensation",
        {
            "track_activation_threshold": 0.7,
            "lost_track_buffer": 30,
            "minimum_iou_threshold": 0.2,
            "minimum_consecutive_frames": 2,
            "high_conf_det_threshold": 0.6,
        },
        iou_kw="minimum_iou_threshold_first_assoc",
        wants_image=True,
    ),
    "cbiou": _rf(
        "cbiou",
        "CBIoUTracker",
        "C-BIoU: buffered IoU for fast, irregular motion",
        {
            "track_activation_threshold": 0.7,
            "lost_track_buffer": 30,
            "minimum_iou_threshold": 0.2,
            "minimum_consecutive_frames": 2,
            "high_conf_det_threshold": 0.6,
        },
        iou_kw="minimum_iou_threshold_first_assoc",
    ),
}


def register_tracker(spec: TrackerSpec) -> None:
    """Add a tracker row; a name may be registered once."""
    if spec.name in KNOWN_TRACKERS:
        raise InvalidArgumentError(f"tracker '{spec.name}' is already registered")
    KNOWN_TRACKERS[spec.name] = spec


def list_trackers() -> list[str]:
    return list(KNOWN_TRACKERS)


def tracker_spec(name: str) -> TrackerSpec:
    try:
        return KNOWN_TRACKERS[name]
    except KeyError:
        raise InvalidArgumentError(
            f"unknown tracker '{name}' (known: {', '.join(KNOWN_TRACKERS)})", option="tracker"
        ) from None


def load_class(target: str, spec: TrackerSpec) -> Any:
    """``module:Class`` imported now; a missing library is BackendUnavailableError with the pip command."""
    module, _, attr = target.partition(":")
    if not spec.installed():
        raise BackendUnavailableError(
            f"tracker '{spec.name}' needs {spec.requires}, which is not installed: pip install 'avdnn[{spec.extra}]'",
            option="tracker",
        )
    return getattr(importlib.import_module(module), attr)


def create_tracker(name: str, frame_rate: float, **params: float) -> Tracker:
    """A fresh tracker for one stream. ``params`` use avdnn's names; unset ones take the library's defaults.

    A parameter this tracker does not have is an error (an option nobody consumes is never ignored).
    """
    spec = tracker_spec(name)
    unknown = sorted(set(params) - set(spec.params))
    if unknown:
        raise InvalidArgumentError(
            f"tracker '{name}' has no parameter {', '.join(unknown)} (it takes: {', '.join(spec.params)})",
            option=unknown[0],
        )
    adapter = load_class(f"avdnn.tracking.{spec.adapter}", spec)
    tracker: Tracker = adapter(spec, frame_rate, params)
    return tracker


__all__ = [
    "KNOWN_TRACKERS",
    "PARAMETERS",
    "ReportsAlive",
    "Tracker",
    "TrackerSpec",
    "create_tracker",
    "list_trackers",
    "register_tracker",
    "tracker_spec",
]
