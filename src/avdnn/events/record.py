"""What the analytics stages attach to a frame: zone and line state, and the events of the frame.

A :class:`FrameAnalytics` rides in :attr:`avdnn.media.frame.SideData.analytics` next to the
detections, so every stage after ``zone``/``line``/``events`` sees it (``metadata_jsonl``
writes it, ``showinfo`` prints it, ``drawzones`` draws it). Stages copy it before changing it
(:func:`analytics_for`), so a frame shared by two branches never sees the other's changes.

Zone and line stages append their events to :attr:`FrameAnalytics.events`; an ``events`` stage
completes them (stream, sequence number, the object's state) and puts what it published in
:attr:`FrameAnalytics.published`, which is what ``metadata_jsonl`` writes. Events produced
after the last frame (the ``end`` of every object still tracked at end of
stream) have no frame to ride on: the ``events`` stage appends them to :class:`LateEvents`,
which every frame it handled points to, and ``metadata_jsonl`` writes them at its own end.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from avdnn.media.frame import Frame

#: One event as published: a JSON-ready dict (the schema is ``avdnn/events/data/event-v1.schema.json``).
Event = dict[str, Any]


class LateEvents:
    """Events an ``events`` stage produced after its last frame (end of stream, close)."""

    def __init__(self) -> None:
        self.events: list[Event] = []


#: A shape in the pixels of the frame its stage saw: ((x, y), ...), and that frame's (width, height).
Shape = tuple[tuple[tuple[float, float], ...], tuple[int, int]]


@dataclass
class ZoneState:
    """A zone after this frame: who is inside (track id -> label) and the counts so far, per label."""

    inside: dict[int, str] = field(default_factory=dict)
    entered: dict[str, int] = field(default_factory=dict)
    exited: dict[str, int] = field(default_factory=dict)
    #: its polygon, for drawzones (not written to JSON: it does not change)
    shape: Shape | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"inside": sorted(self.inside), "entered": dict(self.entered), "exited": dict(self.exited)}


@dataclass
class LineState:
    """A line after this frame: crossings so far per label, in and out."""

    crossed_in: dict[str, int] = field(default_factory=dict)
    crossed_out: dict[str, int] = field(default_factory=dict)
    #: its two points (from, to), for drawzones
    shape: Shape | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"in": dict(self.crossed_in), "out": dict(self.crossed_out)}


@dataclass
class FrameAnalytics:
    """The analytics of one frame; see the module docstring."""

    #: Confirmed track ids the tracker still holds (set by ``track``); None: no tracker said.
    alive: frozenset[int] | None = None
    zones: dict[str, ZoneState] = field(default_factory=dict)
    lines: dict[str, LineState] = field(default_factory=dict)
    #: track id -> the zones it is in after this frame (in the order the zone filters run)
    membership: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: The zone and line events of this frame (``enter``, ``exit``, ``loiter``, ``cross``), for the events stage.
    events: list[Event] = field(default_factory=list)
    #: The events an ``events`` stage published on this frame, complete (the schema's), in order.
    published: list[Event] = field(default_factory=list)
    late: LateEvents | None = None

    def copy(self) -> FrameAnalytics:
        """A copy whose dicts and lists can be changed without touching this one."""
        return dataclasses.replace(
            self,
            zones=dict(self.zones),
            lines=dict(self.lines),
            membership=dict(self.membership),
            events=list(self.events),
            published=list(self.published),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``analytics`` field of a ``metadata_jsonl`` frame line."""
        out: dict[str, Any] = {}
        if self.zones:
            out["zones"] = {name: z.to_dict() for name, z in self.zones.items()}
        if self.lines:
            out["lines"] = {name: ln.to_dict() for name, ln in self.lines.items()}
        return out


def analytics_for(frame: Frame) -> FrameAnalytics:
    """The frame's analytics, copied (with its side data) so the caller may change them."""
    frame.side_data = frame.side_data.copy()
    current = frame.side_data.analytics
    analytics = current.copy() if isinstance(current, FrameAnalytics) else FrameAnalytics()
    frame.side_data.analytics = analytics
    return analytics


def analytics_of(frame: Frame) -> FrameAnalytics | None:
    """The frame's analytics as they are (read only), or None."""
    current = frame.side_data.analytics
    return current if isinstance(current, FrameAnalytics) else None


__all__ = ["Event", "FrameAnalytics", "LateEvents", "LineState", "Shape", "ZoneState", "analytics_for", "analytics_of"]
