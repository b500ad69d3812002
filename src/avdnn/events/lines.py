"""A directed counting line over tracked boxes: crossings in and out, per class.

Rules (docs/events.md has them with pictures in words):

* the line goes from its first point A to its second point B; walking from A to B on the
  picture, *in* is a crossing from the right-hand side to the left-hand side, *out* the other
  way (supervision's ``LineZone`` in/out: a line drawn left to right counts an object moving up
  the picture as in);
* a box counts by its anchor (bottom centre by default); boxes without a confirmed track
  (``track_id`` -1) never count and leave no state behind (supervision issue #2578);
* an anchor on the line, or closer to it than ``margin`` pixels, is on neither side: a box
  sitting on the line changes nothing, and counts once it leaves on the other side (not when it
  goes back to the side it came from);
* a crossing is counted when the anchor's move from its last position off the line to its
  position now passes through the segment A-B itself: an object going round an end of the line
  does not cross it;
* a crossing counts once per object and direction: an object that crosses in, back out and in
  again counts one in and one out (jitter of a box on the line cannot inflate the counts);
* boxes predicted by the tracker between inference intervals count as the tracker's estimate;
* ``classes``: only objects whose label (by vote) is listed count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from avdnn.errors import InvalidArgumentError
from avdnn.events.geometry import Points, anchor_points, box_scale, crosses_segment, format_point, side_of_line
from avdnn.events.record import Event, LineState, Shape
from avdnn.events.tracks import DEFAULT_LOST, TrackBook, box_fields
from avdnn.media.detections import Detections

IN, OUT = "in", "out"


@dataclass
class _Side:
    side: int = 0  # +1 left, -1 right, 0 not yet off the line
    where: np.ndarray | None = None  # the anchor when it was last off the line
    counted: set[str] = field(default_factory=set)


class LineCounter:
    """One line's counting state over one stream; :meth:`update` once per frame."""

    section = "lines"

    def __init__(
        self,
        name: str,
        points: Points,
        *,
        anchor: str = "bottom_center",
        margin: float = 0.0,
        classes: Sequence[str] = (),
        lost: float = DEFAULT_LOST,
    ) -> None:
        self.name = name
        self.points = points
        self.anchor = anchor
        self.margin = margin
        self.classes = frozenset(classes)
        self.book = TrackBook(lost)
        self.a: np.ndarray | None = None
        self.b: np.ndarray | None = None
        self._size: tuple[int, int] | None = None
        self._sides: dict[int, _Side] = {}
        self.crossed_in: Counter[str] = Counter()
        self.crossed_out: Counter[str] = Counter()

    def resize(self, width: int, height: int) -> None:
        if self._size != (width, height):
            a, b = self.points.resolve(width, height)
            if float(np.hypot(*(b - a))) == 0:
                raise InvalidArgumentError(f"line '{self.name}': its two points are the same", option="points")
            self.a, self.b, self._size = a, b, (width, height)

    def update(
        self,
        det: Detections | None,
        size: tuple[int, int],
        time: float,
        pts: int | None,
        alive: frozenset[int] | None = None,
    ) -> list[Event]:
        """Count one frame; returns its ``cross`` events in box order."""
        self.resize(*size)
        assert self.a is not None and self.b is not None
        det = det if det is not None else Detections.empty(size)
        rows = self.book.observe(det, time, pts)
        events: list[Event] = []
        if rows:
            points = anchor_points(det, rows, self.anchor, box_scale(det.frame_size, size))
            dist = side_of_line(points, self.a, self.b)
            for i, p, d in zip(rows, points, dist.tolist(), strict=True):
                events += self._observe(det, i, p, d)
        seen = {int(det.track_ids[i]) for i in rows}
        for tid in self.book.gone(time, alive, seen):
            self.book.forget(tid)
            self._sides.pop(tid, None)
        return events

    def _observe(self, det: Detections, i: int, p: np.ndarray, dist: float) -> list[Event]:
        tid = int(det.track_ids[i])
        state = self._sides.setdefault(tid, _Side())
        if abs(dist) <= self.margin:
            return []  # on the line: neither side
        side = 1 if dist > 0 else -1
        before, where = state.side, state.where
        state.side, state.where = side, p
        if before == 0 or side == before or where is None:
            return []
        assert self.a is not None and self.b is not None
        if not crosses_segment(where, p, self.a, self.b):
            return []  # went round an end of the line
        direction = IN if side > 0 else OUT
        label = self.book.tracks[tid].label
        if direction in state.counted or (self.classes and label not in self.classes):
            return []
        state.counted.add(direction)
        (self.crossed_in if direction == IN else self.crossed_out)[label] += 1
        event: Event = {"type": "cross", "track_id": tid, "label": label, **box_fields(det, i)}
        event.update(line=self.name, direction=direction)
        return [event]

    def state(self) -> LineState:
        return LineState(crossed_in=dict(self.crossed_in), crossed_out=dict(self.crossed_out), shape=self.shape)

    @property
    def shape(self) -> Shape | None:
        if self.a is None or self.b is None or self._size is None:
            return None
        return ((float(self.a[0]), float(self.a[1])), (float(self.b[0]), float(self.b[1]))), self._size

    # -- the run's report ----------------------------------------------------------------

    def summary_lines(self) -> list[str]:
        labels = sorted(set(self.crossed_in) | set(self.crossed_out))
        lines = [f"line {self.name}: in {sum(self.crossed_in.values())}, out {sum(self.crossed_out.values())}"]
        lines += [f"  {k}: in {self.crossed_in[k]}, out {self.crossed_out[k]}" for k in labels]
        return lines

    def as_dict(self) -> dict[str, object]:
        shown = (
            f"{format_point(self.a)}|{format_point(self.b)}"
            if self.a is not None and self.b is not None
            else self.points.text
        )
        return {
            "name": self.name,
            "points": shown,
            "anchor": self.anchor,
            "in": dict(self.crossed_in),
            "out": dict(self.crossed_out),
        }


__all__ = ["IN", "OUT", "LineCounter"]
