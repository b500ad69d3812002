"""What the zone, line and events filters share: option rows, a frame's time, class lists, and
the counting filter (a zone's or a line's counter fed each frame's detections).

A frame's time is its pts in seconds; a frame without pts counts at the stream's frame rate
(the ``track`` filter's rule), so dwell times and cooldowns are stream time, not wall time: a
file analysed at 10x real time gives the same numbers as the live camera.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Protocol

from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.events.geometry import ANCHOR_CONSTS, KEYPOINT_PREFIX, Points, anchor_name
from avdnn.events.record import Event, FrameAnalytics, analytics_for
from avdnn.events.tracks import DEFAULT_LOST
from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame


class AnchorOption(Option):
    """``anchor``: FFmpeg-style named constants, or avdnn's ``keypoint:NAME`` (a pose model's keypoint;
    the bare ``:NAME`` after ``keypoint`` joins it, as ``model=zoo:NAME`` does)."""

    def parse(self, text: str) -> Any:
        if text.startswith(KEYPOINT_PREFIX):
            return anchor_name(text)
        return super().parse(text)


ANCHOR = AnchorOption(
    "anchor",
    "int",
    ANCHOR_CONSTS["bottom_center"],
    0,
    len(ANCHOR_CONSTS) - 1,
    help="the point of a box that counts (or keypoint:NAME)",
    consts=ANCHOR_CONSTS,
    joins_bare=(KEYPOINT_PREFIX[:-1],),
)
CLASSES = Option("classes", "string", None, help="count only these labels: car|person (default: every label)")
LOST = Option(
    "lost",
    "float",
    DEFAULT_LOST,
    0,
    86400,
    help="seconds unseen before an object is gone (only when no track filter says it dropped it)",
)


def classes(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (text or "").split("|") if c.strip())


def points(values: dict[str, object], label: str, *, at_least: int, at_most: int | None = None) -> Points:
    text = values.get("points")
    if not text:
        shape = "X_Y|X_Y" if at_most == 2 else "X_Y|X_Y|X_Y..."
        raise InvalidArgumentError(
            f"no points given: points={shape} (pixels, or iw/ih expressions)", filter=label, option="points"
        )
    try:
        return Points.parse(str(text), at_least=at_least, at_most=at_most)
    except InvalidArgumentError as exc:
        raise exc.with_context(filter=label) from None


def anchor(values: dict[str, object]) -> str:
    value = values.get("anchor", ANCHOR_CONSTS["bottom_center"])
    return anchor_name(value if isinstance(value, int | str) else 0)


def instance_name(label: str, fallback: str) -> str:
    """``zone@bay`` -> ``bay``; no instance name -> ``fallback``."""
    _, at, instance = label.partition("@")
    return instance if at and instance else fallback


class FrameClock:
    """The time of each frame in seconds (see the module docstring)."""

    def __init__(self) -> None:
        self.rate: Fraction | None = None
        self.count = 0

    def __call__(self, frame: Frame) -> float:
        t = frame.time
        n, self.count = self.count, self.count + 1
        if t is not None and math.isfinite(t):
            return float(t)
        return n / float(self.rate) if self.rate else n / 25.0


class Counter(Protocol):
    """A zone's or a line's counter (:mod:`avdnn.events.zones`, :mod:`avdnn.events.lines`)."""

    def resize(self, width: int, height: int) -> None: ...

    def update(
        self,
        det: Detections | None,
        size: tuple[int, int],
        time: float,
        pts: int | None,
        alive: frozenset[int] | None = None,
    ) -> list[Event]: ...


class CountingFilter(Filter):
    """A filter that feeds each frame's detections to its :attr:`counter` and passes the frame on
    with the frame's events and what :meth:`record` adds to its analytics side data."""

    counter: Counter

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.clock = FrameClock()

    def output_rate(self, in_rate: Fraction | None) -> Fraction | None:
        self.clock.rate = in_rate
        return in_rate

    def configure(self, frame: Frame) -> None:
        super().configure(frame)
        try:
            self.counter.resize(frame.width, frame.height)
        except AvdnnError as exc:
            raise exc.with_context(filter=self.label) from None

    def filter(self, frame: Frame) -> list[Frame]:
        time = self.clock(frame)
        analytics = analytics_for(frame)
        try:
            events = self.counter.update(
                frame.side_data.detections, (frame.width, frame.height), time, frame.pts, analytics.alive
            )
        except AvdnnError as exc:
            raise exc.with_context(filter=self.label) from None
        analytics.events.extend(events)
        self.record(analytics)
        return [frame]

    def record(self, analytics: FrameAnalytics) -> None:
        """Put the counter's state into the frame's analytics."""
        raise NotImplementedError

    def reports(self) -> list[Any]:
        """What this stage adds to the run's accounting: the counter's counts."""
        return [self.counter]


__all__ = [
    "ANCHOR",
    "CLASSES",
    "LOST",
    "CountingFilter",
    "FrameClock",
    "anchor",
    "classes",
    "instance_name",
    "points",
]
