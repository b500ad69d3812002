"""A polygon zone over tracked boxes: who is inside, entries and exits per class, dwell time.

Rules (docs/events.md has them with examples):

* a box counts by its anchor (:mod:`avdnn.events.geometry`); a point on the polygon's edge is
  inside;
* boxes without a confirmed track (``track_id`` -1) never count and leave no state behind;
* boxes the tracker predicted on frames the detector skipped count as detected ones: they are
  the tracker's estimate of where the object is (their events say ``"predicted": true``);
* ``inertia`` N: an object must be seen inside (or outside) on N consecutive observations before
  it enters (or leaves), as Frigate's zone inertia; the enter time is that of the first of them;
* each entry is a visit: an object that leaves and comes back enters twice (``objects`` counts
  the distinct objects); dwell time is from the enter time to the exit time, or to the last
  time the object was seen inside when the tracker drops it (an ``exit`` with ``reason: lost``);
* ``loiter`` S > 0: a ``loiter`` event once per visit when the dwell time reaches S seconds;
* ``classes``: only objects whose label (by vote) is listed count; the others are ignored.

Memory stays flat on a stream that never ends: the state of an object is dropped when its track
is gone, the dwell times are kept as totals per label, and what is kept per object id (whether it
was counted among ``objects``, its dwell in ``dwell_by_object``) is bounded to the
:data:`OBJECTS_KEPT` most recent objects; older ones are forgotten, oldest first, and counted
(``forgotten`` in :meth:`ZoneCounter.as_dict`): a forgotten object that comes back counts as a
new one in ``objects``.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from avdnn.events.geometry import Points, anchor_points, box_scale, format_point, inside_polygon, mask_inside
from avdnn.events.record import Event, Shape, ZoneState
from avdnn.events.tracks import DEFAULT_LOST, TrackBook, box_fields
from avdnn.media.detections import Detections

#: object ids a zone remembers (counted among ``objects``, dwell per object), the most recent first
OBJECTS_KEPT = 4096


@dataclass
class _Dwell:
    """The finished visits of one label: how many, their total and longest dwell (seconds)."""

    visits: int = 0
    total: float = 0.0
    longest: float = 0.0

    def add(self, dwell: float) -> None:
        self.visits += 1
        self.total += dwell
        self.longest = max(self.longest, dwell)  # a dwell is never negative


@dataclass
class _Visit:
    inside: bool = False
    streak: int = 0
    streak_time: float = 0.0
    entered_at: float = 0.0
    last_inside: float = 0.0
    loitered: bool = False
    #: the box fields of its last observation (an exit of a lost object still says where it was)
    fields: dict[str, Any] | None = None


class ZoneCounter:
    """One zone's counting state over one stream; :meth:`update` once per frame."""

    section = "zones"

    def __init__(
        self,
        name: str,
        points: Points,
        *,
        anchor: str = "bottom_center",
        inertia: int = 1,
        loiter: float = 0.0,
        classes: Sequence[str] = (),
        lost: float = DEFAULT_LOST,
        kept: int = OBJECTS_KEPT,
        mask_overlap: float = 0.0,
    ) -> None:
        self.name = name
        self.mask_overlap = mask_overlap  # > 0: an object with a mask is inside by its mask's share
        self.points = points
        self.anchor = anchor
        self.inertia = max(1, inertia)
        self.loiter = loiter
        self.classes = frozenset(classes)
        self.book = TrackBook(lost)
        self.polygon: np.ndarray | None = None
        self._size: tuple[int, int] | None = None
        self._visits: dict[int, _Visit] = {}
        self.entered: Counter[str] = Counter()
        self.exited: Counter[str] = Counter()
        #: per label: the distinct objects that entered
        self.objects: Counter[str] = Counter()
        #: per label: the finished visits
        self.dwells: dict[str, _Dwell] = {}
        self.kept = max(1, kept)
        #: the ``kept`` objects that entered most recently or left: each one's total dwell of finished
        #: visits (seconds; None before its first exit); an id here is counted in ``objects`` already
        self._kept: OrderedDict[int, float | None] = OrderedDict()
        #: objects dropped from that table for the bound, oldest first
        self.forgotten = 0
        self.frames = 0

    def resize(self, width: int, height: int) -> None:
        """Resolve the points for this frame size (once per size)."""
        if self._size != (width, height):
            self.polygon = self.points.resolve(width, height)
            self._size = (width, height)

    def update(
        self,
        det: Detections | None,
        size: tuple[int, int],
        time: float,
        pts: int | None,
        alive: frozenset[int] | None = None,
    ) -> list[Event]:
        """Count one frame; returns its enter/exit/loiter events, by box order then exits of gone tracks."""
        self.resize(*size)
        assert self.polygon is not None
        self.frames += 1
        det = det if det is not None else Detections.empty(size)
        rows = self.book.observe(det, time, pts)
        events: list[Event] = []
        seen = {int(det.track_ids[i]) for i in rows}
        if rows:
            scale = box_scale(det.frame_size, size)
            inside = inside_polygon(anchor_points(det, rows, self.anchor, scale), self.polygon)
            if self.mask_overlap > 0:
                inside = mask_inside(det, rows, self.polygon, scale, self.mask_overlap, inside)
            for i, is_in in zip(rows, inside.tolist(), strict=True):
                events += self._observe(det, i, bool(is_in), time, pts)
        for tid in self.book.gone(time, alive, seen):
            info = self.book.forget(tid)
            visit = self._visits.pop(tid, None)
            if info is not None and visit is not None and visit.inside:
                dwell = visit.last_inside - visit.entered_at
                self._count_exit(info.label, tid, dwell)
                events.append(
                    {
                        "type": "exit",
                        "track_id": tid,
                        "label": info.label,
                        **(visit.fields or {}),
                        "zone": self.name,
                        "dwell": dwell,
                        "reason": "lost",
                    }
                )
        return events

    def _observe(self, det: Detections, i: int, is_in: bool, time: float, pts: int | None) -> list[Event]:
        tid = int(det.track_ids[i])
        info = self.book.tracks[tid]
        if self.classes and info.label not in self.classes:
            return []
        visit = self._visits.setdefault(tid, _Visit())
        visit.fields = box_fields(det, i)
        out: list[Event] = []
        if is_in == visit.inside:
            visit.streak = 0
        else:
            visit.streak += 1
            if visit.streak == 1:
                visit.streak_time = time
            if visit.streak >= self.inertia:
                visit.inside, visit.streak = is_in, 0
                label = info.label
                if is_in:
                    visit.entered_at, visit.loitered = visit.streak_time, False
                    self.entered[label] += 1
                    if tid not in self._kept:
                        self.objects[label] += 1
                    self._keep(tid, self._kept.get(tid))
                    out.append(self._event("enter", det, i, label, {"since": visit.entered_at}))
                else:
                    dwell = visit.streak_time - visit.entered_at
                    self._count_exit(label, tid, dwell)
                    out.append(self._event("exit", det, i, label, {"dwell": dwell}))
        if visit.inside:
            visit.last_inside = time
            if self.loiter > 0 and not visit.loitered and time - visit.entered_at >= self.loiter:
                visit.loitered = True
                out.append(self._event("loiter", det, i, info.label, {"dwell": time - visit.entered_at}))
        return out

    def _event(self, kind: str, det: Detections, i: int, label: str, extra: dict[str, object]) -> Event:
        event: Event = {"type": kind, "track_id": int(det.track_ids[i]), "label": label, **box_fields(det, i)}
        event["zone"] = self.name
        event.update(extra)
        return event

    def _count_exit(self, label: str, tid: int, dwell: float) -> None:
        self.exited[label] += 1
        self.dwells.setdefault(label, _Dwell()).add(dwell)
        self._keep(tid, (self._kept.get(tid) or 0.0) + dwell)

    def _keep(self, tid: int, dwell: float | None) -> None:
        """Object ``tid`` as the most recent of the kept ones; beyond ``kept`` the oldest is forgotten."""
        self._kept[tid] = dwell
        self._kept.move_to_end(tid)
        while len(self._kept) > self.kept:
            self._kept.popitem(last=False)
            self.forgotten += 1

    @property
    def dwell_by_object(self) -> dict[int, float]:
        """Track id -> its total dwell of finished visits (seconds), of the kept objects that left once."""
        return {tid: dwell for tid, dwell in self._kept.items() if dwell is not None}

    def inside(self) -> dict[int, str]:
        """Track id -> label of the objects inside now."""
        return {t: self.book.tracks[t].label for t, v in self._visits.items() if v.inside and t in self.book.tracks}

    def state(self) -> ZoneState:
        return ZoneState(inside=self.inside(), entered=dict(self.entered), exited=dict(self.exited), shape=self.shape)

    @property
    def shape(self) -> Shape | None:
        if self.polygon is None or self._size is None:
            return None
        return tuple((float(x), float(y)) for x, y in self.polygon), self._size

    # -- the run's report ----------------------------------------------------------------

    def _dwell_now(self) -> dict[str, _Dwell]:
        """Finished visits plus the ones still going (up to the last time seen inside), per label."""
        out = {k: _Dwell(v.visits, v.total, v.longest) for k, v in self.dwells.items()}
        for tid, visit in self._visits.items():
            info = self.book.tracks.get(tid)
            if visit.inside and info is not None:
                out.setdefault(info.label, _Dwell()).add(visit.last_inside - visit.entered_at)
        return out

    def summary_lines(self) -> list[str]:
        inside = self.inside()
        labels = sorted(set(self.entered) | set(self.exited) | set(inside.values()))
        objects = sum(self.objects.values())
        head = (
            f"zone {self.name}: inside {len(inside)}, entered {sum(self.entered.values())}"
            f" ({objects} object{'' if objects == 1 else 's'}), exited {sum(self.exited.values())}"
        )
        lines = [head]
        dwell = self._dwell_now()
        for label in labels:
            d = dwell.get(label)
            times = f", dwell mean {d.total / d.visits:.1f} s, max {d.longest:.1f} s" if d and d.visits else ""
            now = sum(1 for v in inside.values() if v == label)
            lines.append(f"  {label}: inside {now}, entered {self.entered[label]}, exited {self.exited[label]}{times}")
        return lines

    def as_dict(self) -> dict[str, object]:
        dwell = self._dwell_now()
        per_object = self.dwell_by_object
        for tid, visit in self._visits.items():
            if visit.inside:
                per_object[tid] = per_object.get(tid, 0.0) + visit.last_inside - visit.entered_at
        return {
            "name": self.name,
            "points": "|".join(format_point(p) for p in self.polygon) if self.polygon is not None else self.points.text,
            "anchor": self.anchor,
            "inside": sorted(self.inside()),
            "entered": dict(self.entered),
            "exited": dict(self.exited),
            "objects": dict(self.objects),
            "dwell": {
                k: {"visits": v.visits, "mean": v.total / v.visits, "max": v.longest}
                for k, v in dwell.items()
                if v.visits
            },
            "dwell_by_object": {str(k): v for k, v in sorted(per_object.items())},
            "forgotten": self.forgotten,
        }


__all__ = ["OBJECTS_KEPT", "ZoneCounter"]
