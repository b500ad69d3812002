"""Boxes become events: zones, lines, object life-cycle events, and publishing them.

Beside :mod:`avdnn.tracking` in the layers (it may use media, errors, _util and tracking; filters
use it). The filters ``zone``, ``line``, ``events`` and ``drawzones`` (:mod:`avdnn.filters`) are
its users; docs/events.md is the manual.

* :mod:`~avdnn.events.geometry`: points, anchors, polygons and directed lines;
* :mod:`~avdnn.events.zones`, :mod:`~avdnn.events.lines`: the counting rules;
* :mod:`~avdnn.events.objects`: ``new``/``update``/``end`` and every event's common fields;
* :mod:`~avdnn.events.record`: what travels on a frame (:class:`FrameAnalytics`);
* :mod:`~avdnn.events.schema`: the versioned JSON Schema of an event;
* :mod:`~avdnn.events.sinks`: the sink table (file, MQTT, webhook, in-process) and its accounting.
"""

from __future__ import annotations

from avdnn.events.geometry import ANCHORS, Points
from avdnn.events.lines import LineCounter
from avdnn.events.objects import ObjectEvents
from avdnn.events.record import Event, FrameAnalytics, LateEvents, LineState, ZoneState, analytics_for, analytics_of
from avdnn.events.schema import SCHEMA_VERSION, event_schema, validate_event
from avdnn.events.sinks import (
    SINKS,
    Message,
    Sink,
    SinkOptions,
    SinkSpec,
    SinkStats,
    Subscription,
    current_listeners,
    list_sinks,
    listen,
    open_sink,
    register_sink,
)
from avdnn.events.zones import ZoneCounter

__all__ = [
    "ANCHORS",
    "SCHEMA_VERSION",
    "SINKS",
    "Event",
    "FrameAnalytics",
    "LateEvents",
    "LineCounter",
    "LineState",
    "Message",
    "ObjectEvents",
    "Points",
    "Sink",
    "SinkOptions",
    "SinkSpec",
    "SinkStats",
    "Subscription",
    "ZoneCounter",
    "ZoneState",
    "analytics_for",
    "analytics_of",
    "current_listeners",
    "event_schema",
    "list_sinks",
    "listen",
    "open_sink",
    "register_sink",
    "validate_event",
]
