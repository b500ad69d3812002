"""zone: a polygon over tracked boxes: who is inside, entries and exits per class, dwell time.

``zone=name=bay:points=100_200|400_200|400_270|100_270`` after ``track`` (as many zones as you
write, each its own filter). Points are pixels of the frame this filter sees, or expressions of
its size (``iw``, ``ih``): ``zone=name=left:points=0_0|iw/2_0|iw/2_ih|0_ih``. The counting rules
(anchor, inertia, predicted boxes, ids -1, loitering) are :mod:`avdnn.events.zones`; the manual is
docs/events.md.

Each frame leaves with the zone's state in its analytics side data (who is inside, the counts so
far) and the frame's ``enter``/``exit``/``loiter`` events, for ``events`` (which completes and
publishes them), ``metadata_jsonl``, ``showinfo`` and ``drawzones``. The run's summary ends with
the zone's final counts per class.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar

from avdnn.errors import AvdnnError
from avdnn.events.record import analytics_for
from avdnn.events.zones import ZoneCounter
from avdnn.filters import _analytics as common
from avdnn.filters.base import Filter
from avdnn.filters.options import INT_MAX, Option
from avdnn.media.frame import Frame


class ZoneFilter(Filter):
    """Count tracked objects in a polygon; pass every frame on with the zone's state."""

    name: ClassVar[str] = "zone"
    description: ClassVar[str] = "Count tracked objects inside a polygon zone (avdnn)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("name", "string", None, help="the zone's name (default: the instance name, zone@NAME, or 'zone')"),
        Option("points", "string", None, help="the polygon: X_Y|X_Y|X_Y... in pixels or iw/ih expressions"),
        common.ANCHOR,
        Option("inertia", "int", 1, 1, INT_MAX, help="consecutive frames inside (outside) before entering (leaving)"),
        Option("loiter", "duration", 0, 0, 86400, help="seconds inside before a loiter event (0: none)"),
        common.CLASSES,
        common.LOST,
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.zone_name = str(values.get("name") or common.instance_name(self.label, "zone"))
        self.counter = ZoneCounter(
            self.zone_name,
            common.points(values, self.label, at_least=3),
            anchor=common.anchor(values),
            inertia=int(values.get("inertia") or 1),
            loiter=float(values.get("loiter") or 0),
            classes=common.classes(values.get("classes")),
            lost=float(values.get("lost", 1.0)),
        )
        self.clock = common.FrameClock()

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
        analytics.zones[self.zone_name] = self.counter.state()
        for tid in self.counter.inside():
            analytics.membership[tid] = (*analytics.membership.get(tid, ()), self.zone_name)
        return [frame]

    def reports(self) -> list[Any]:
        """What this stage adds to the run's accounting: the zone's counts."""
        return [self.counter]


__all__ = ["ZoneFilter"]
