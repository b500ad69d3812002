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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from avdnn.events.geometry import Points, anchor_points, box_scale, format_point, inside_polygon, mask_inside
from avdnn.events.record import Event, Shape, ZoneState
from avdnn.events.tracks import DEFAULT_LOST, TrackBook, box_fields
from avdnn.media.detections import Detections


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
        self.objects: dict[str, set[int]] = {}
        #: per label: the dwell times of finished visits, seconds
        self.dwells: dict[str, list[float]] = {}
        #: per track id: its total dwell time so far (finished visits), seconds
        self.dwell_by_object: dict[int, float] = {}
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
                    self.objects.setdefault(label, set()).add(tid)
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
        self.dwells.setdefault(label, []).append(dwell)
        self.dwell_by_object[tid] = self.dwell_by_object.get(tid, 0.0) + dwell

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

    def _dwell_now(self) -> dict[str, list[float]]:
        """Finished visits plus the ones still going (up to the last time seen inside), per label."""
        out = {k: list(v) for k, v in self.dwells.items()}
        for tid, visit in self._visits.items():
            info = self.book.tracks.get(tid)
            if visit.inside and info is not None:
                out.setdefault(info.label, []).append(visit.last_inside - visit.entered_at)
        return out

    def summary_lines(self) -> list[str]:
        inside = self.inside()
        labels = sorted(set(self.entered) | set(self.exited) | set(inside.values()))
        objects = sum(len(v) for v in self.objects.values())
        head = (
            f"zone {self.name}: inside {len(inside)}, entered {sum(self.entered.values())}"
            f" ({objects} object{'' if objects == 1 else 's'}), exited {sum(self.exited.values())}"
        )
        lines = [head]
        dwell = self._dwell_now()
        for label in labels:
            d = dwell.get(label, [])
            times = f", dwell mean {np.mean(d):.1f} s, max {max(d):.1f} s" if d else ""
            now = sum(1 for v in inside.values() if v == label)
            lines.append(f"  {label}: inside {now}, entered {self.entered[label]}, exited {self.exited[label]}{times}")
        return lines

    def as_dict(self) -> dict[str, object]:
        dwell = self._dwell_now()
        per_object = dict(self.dwell_by_object)
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
            "objects": {k: len(v) for k, v in self.objects.items()},
            "dwell": {k: {"visits": len(v), "mean": float(np.mean(v)), "max": max(v)} for k, v in dwell.items() if v},
            "dwell_by_object": {str(k): v for k, v in sorted(per_object.items())},
        }


__all__ = ["ZoneCounter"]
