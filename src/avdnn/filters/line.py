"""line: a directed counting line over tracked boxes: crossings in and out, per class.

``line=name=gate:points=320_0|320_ih`` after ``track`` (as many lines as you write). Walking from
the first point to the second, *in* is a crossing from the right-hand side to the left-hand side
of the line as seen on the picture (supervision's ``LineZone`` in), *out* the other way. Points
are pixels of the frame this filter sees, or expressions of its size (``iw``, ``ih``). The
counting rules (once per object and direction, a box on the line, going round an end, ids -1,
predicted boxes, ``margin``) are :mod:`avdnn.events.lines`; the manual is docs/events.md.

Each frame leaves with the line's counts so far in its analytics side data and the frame's
``cross`` events; the run's summary ends with the line's final counts per class.
"""

from __future__ import annotations

from typing import Any, ClassVar

from avdnn.events.lines import LineCounter
from avdnn.events.record import FrameAnalytics
from avdnn.filters import _analytics as common
from avdnn.filters.options import Option


class LineFilter(common.CountingFilter):
    """Count tracked objects crossing a directed line; pass every frame on with the line's counts."""

    name: ClassVar[str] = "line"
    description: ClassVar[str] = "Count tracked objects crossing a directed line (avdnn)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("name", "string", None, help="the line's name (default: the instance name, line@NAME, or 'line')"),
        Option("points", "string", None, help="the line: X_Y|X_Y (from, to) in pixels or iw/ih expressions"),
        common.ANCHOR,
        Option("margin", "float", 0, 0, 1e6, help="pixels either side of the line that count as on it"),
        common.CLASSES,
        common.LOST,
    )
    counter: LineCounter

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.line_name = str(values.get("name") or common.instance_name(self.label, "line"))
        self.counter = LineCounter(
            self.line_name,
            common.points(values, self.label, at_least=2, at_most=2),
            anchor=common.anchor(values),
            margin=float(values.get("margin") or 0),
            classes=common.classes(values.get("classes")),
            lost=float(values.get("lost", 1.0)),
        )

    def record(self, analytics: FrameAnalytics) -> None:
        analytics.lines[self.line_name] = self.counter.state()


__all__ = ["LineFilter"]
