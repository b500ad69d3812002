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

from typing import Any, ClassVar

from avdnn.events.record import FrameAnalytics
from avdnn.events.zones import ZoneCounter
from avdnn.filters import _analytics as common
from avdnn.filters.options import INT_MAX, Option


class ZoneFilter(common.CountingFilter):
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
        Option(
            "mask_overlap",
            "float",
            0,
            0,
            1,
            help="an object with a mask is inside when this share of its mask is (0: by its anchor) (avdnn)",
        ),
    )
    counter: ZoneCounter

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
            mask_overlap=float(values.get("mask_overlap") or 0),
        )

    def record(self, analytics: FrameAnalytics) -> None:
        analytics.zones[self.zone_name] = self.counter.state()
        for tid in self.counter.inside():
            analytics.membership[tid] = (*analytics.membership.get(tid, ()), self.zone_name)


__all__ = ["ZoneFilter"]
