"""Object tracking: tracker adapters behind one interface, and per-object summaries.

Beside :mod:`avdnn.dnn` in the layers: filters use it, it never imports filters or graph.
The ``track`` filter (:mod:`avdnn.filters.track`) is its user; docs/tracking.md the manual.
"""

from __future__ import annotations

from avdnn.tracking.base import (
    KNOWN_TRACKERS,
    PARAMETERS,
    Tracker,
    TrackerSpec,
    create_tracker,
    list_trackers,
    register_tracker,
)
from avdnn.tracking.summary import TrackRecord, TrackSummary, TrackTotals

__all__ = [
    "KNOWN_TRACKERS",
    "PARAMETERS",
    "TrackRecord",
    "TrackSummary",
    "TrackTotals",
    "Tracker",
    "TrackerSpec",
    "create_tracker",
    "list_trackers",
    "register_tracker",
]
