"""Object life-cycle events: ``new``, ``update``, ``end``, and the common fields of every event.

Fed one frame at a time after ``track`` (and after any ``zone``/``line`` stages), it keeps one
record per confirmed track and turns what changes into events, in this order on a frame:

* ``new`` when a track is confirmed (the first box with its ``track_id`` >= 0);
* the frame's zone and line events (``enter``, ``exit``, ``loiter``, ``cross``) as they came;
* ``update`` when something a user cares about changed: the zones the object is in, its label
  (by vote, :mod:`avdnn.events.tracks`), its read text, or it became stationary or moving again; ``changes``
  names the fields and ``previous`` holds their old values (Frigate's ``before``/``after``);
* ``end`` when the tracker dropped the object (``reason: lost``), or at end of stream for the
  objects still tracked (``reason: eos``).

Every event then carries: ``stream``, ``seq`` (0, 1, 2... per ``events`` stage: a subscriber sees
a gap or a repeat at once), the object's ``track_id``, ``label``, ``class_id``, ``score``,
``box`` (x0, y0, x1, y1 in pixels), ``predicted``, the frame's ``pts``, ``time`` and index
``frame``, ``zones``, ``stationary``, ``top_score``, ``first_time``, the object's read ``text``
and ``text_score`` (decided per track by vote upstream) and the ``keypoints`` of its best-scored
box with their ``keypoint_names``, when it has them, and, with snapshots on, the best-scored view
so far (:mod:`avdnn.events.snapshot`). A text that changes (first decided) is an ``update``.

Stationary: an object whose box keeps an IoU of at least ``stationary_iou`` with where it
stopped for ``stationary`` seconds (Frigate's rule in seconds rather than frames).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from avdnn.errors import InvalidArgumentError
from avdnn.events.record import Event
from avdnn.events.schema import SCHEMA_VERSION
from avdnn.events.snapshot import Snapshot, crop
from avdnn.events.tracks import DEFAULT_LOST, TrackBook, box_fields
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame

log = logging.getLogger("avdnn.events")

#: ended objects remembered for events that arrive after their end
ENDED_KEPT = 256


def iou(a: list[float], b: list[float]) -> float:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@dataclass
class _Object:
    track_id: int
    first_time: float
    label: str
    zones: tuple[str, ...]
    fields: dict[str, Any]
    top_score: float = 0.0
    stationary: bool = False
    still_box: list[float] = field(default_factory=list)
    still_since: float = 0.0
    snapshot: Snapshot | None = None
    last_time: float = 0.0
    #: the read text (by vote upstream: avdnn.tracking.textvote) and the keypoints of the best box
    text: str = ""
    text_score: float = 0.0
    keypoints: list[list[float]] | None = None
    keypoint_names: tuple[str, ...] = ()


class ObjectEvents:
    """The life cycle of the objects of one stream; :meth:`update` once per frame, :meth:`finish` at its end."""

    section = "events"

    def __init__(
        self,
        stream: str,
        *,
        stationary: float = 0.0,
        stationary_iou: float = 0.6,
        snapshot: bool = False,
        lost: float = DEFAULT_LOST,
    ) -> None:
        self.stream = stream
        self.stationary = stationary
        self.stationary_iou = stationary_iou
        self.snapshot = snapshot
        self.book = TrackBook(lost)
        self.objects: dict[int, _Object] = {}
        #: the last objects ended, for a zone's late event about one (a zone with a longer ``lost``)
        self._ended: OrderedDict[int, _Object] = OrderedDict()
        self.seq = 0
        #: events produced so far, by type
        self.counts: dict[str, int] = {}
        self._last: tuple[int | None, float, int] = (None, 0.0, 0)

    def update(
        self,
        det: Detections | None,
        frame: Frame,
        time: float,
        n: int,
        *,
        alive: frozenset[int] | None = None,
        membership: dict[int, tuple[str, ...]] | None = None,
        upstream: list[Event] | None = None,
    ) -> list[Event]:
        """This frame's events, complete (see the module docstring for the order)."""
        pts = frame.pts
        self._last = (pts, time, n)
        det = det if det is not None else Detections.empty((frame.width, frame.height))
        membership = membership or {}
        rows = self.book.observe(det, time, pts)
        news: list[Event] = []
        updates: list[Event] = []
        for i in rows:
            tid = int(det.track_ids[i])
            obj = self.objects.get(tid)
            fields = box_fields(det, i)
            label = self.book.tracks[tid].label
            zones = membership.get(tid, ())
            if obj is None:
                obj = self.objects[tid] = _Object(tid, time, label, zones, fields, still_since=time)
                obj.still_box = list(fields["box"])
                obj.text, obj.text_score = _text(det, i) or ("", 0.0)
                self._observe(obj, det, i, frame, time)
                news.append(self._complete({"type": "new", "track_id": tid, "label": label, **fields}, obj))
                continue
            previous: dict[str, Any] = {}
            if label != obj.label:
                previous["label"], obj.label = obj.label, label
            text = _text(det, i)
            if text is not None and text[0] != obj.text:
                previous["text"] = obj.text
                obj.text, obj.text_score = text
            if zones != obj.zones:
                previous["zones"], obj.zones = list(obj.zones), zones
            obj.fields = fields
            if self._observe(obj, det, i, frame, time):
                previous["stationary"] = not obj.stationary
            if previous:
                event = {"type": "update", "track_id": tid, "label": obj.label, **fields}
                event.update(changes=list(previous), previous=previous)
                updates.append(self._complete(event, obj))
        seen = {int(det.track_ids[i]) for i in rows}
        middle = [self._complete_upstream(e, time) for e in upstream or ()]
        ends = [self._end(tid, "lost") for tid in self.book.gone(time, alive, seen)]
        return self._number([*news, *middle, *updates, *(e for e in ends if e is not None)], pts, time, n)

    def finish(self) -> list[Event]:
        """``end`` (``reason: eos``) for every object still tracked, with the last frame's pts and time."""
        ends = [self._end(tid, "eos") for tid in sorted(self.objects)]
        pts, time, n = self._last
        return self._number([e for e in ends if e is not None], pts, time, n)

    # -- per object ----------------------------------------------------------------------

    def _observe(self, obj: _Object, det: Detections, i: int, frame: Frame, time: float) -> bool:
        """Score, snapshot and stationarity; returns whether it became stationary or moving on this box."""
        obj.last_time = time
        score = float(det.confidence[i])
        box: list[float] = obj.fields["box"]
        if not det.predicted_mask[i] and score > obj.top_score:
            obj.top_score = score
            if det.keypoints is not None and not np.isnan(det.keypoints[i]).any():
                obj.keypoints, obj.keypoint_names = det.keypoints[i].tolist(), det.keypoint_names
            if self.snapshot:
                try:
                    shot = crop(frame, np.asarray(box) * _to_frame(det, frame))
                except InvalidArgumentError as exc:  # a pixel format without a plane table (a hardware frame)
                    log.warning("events: no snapshots for %s frames: %s", frame.format, exc.message)
                    self.snapshot, shot = False, None
                if shot is not None:
                    obj.snapshot = Snapshot(shot, score, frame.pts, time)
        if self.stationary <= 0:
            return False
        if iou(box, obj.still_box) >= self.stationary_iou:
            if not obj.stationary and time - obj.still_since >= self.stationary:
                obj.stationary = True
                return True
            return False
        obj.still_box, obj.still_since = list(box), time
        if obj.stationary:
            obj.stationary = False
            return True
        return False

    def _end(self, tid: int, reason: str) -> Event | None:
        self.book.forget(tid)
        obj = self.objects.pop(tid, None)
        if obj is None:
            return None
        self._ended[tid] = obj
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        event = {"type": "end", "track_id": tid, "label": obj.label, **obj.fields}
        event.update(reason=reason, duration=obj.last_time - obj.first_time)
        return self._complete(event, obj)

    def _complete(self, event: Event, obj: _Object) -> Event:
        event.update(zones=list(obj.zones), stationary=obj.stationary, top_score=obj.top_score)
        event["first_time"] = obj.first_time
        if obj.text:
            event.update(text=obj.text, text_score=obj.text_score)
        if obj.keypoints is not None:
            event.update(keypoints=obj.keypoints, keypoint_names=list(obj.keypoint_names))
        if obj.snapshot is not None:
            event["snapshot"] = obj.snapshot.to_dict()
        return event

    def _complete_upstream(self, event: Event, time: float) -> Event:
        """A zone or line event with the object's state (a copy: the zone's own stays as it made it)."""
        tid = int(event.get("track_id", -1))
        obj = self.objects.get(tid) or self._ended.get(tid)
        out = dict(event)
        if obj is None:  # never seen here (a stage before that saw other boxes): what the event itself says
            obj = _Object(
                tid, float(out.get("time", 0.0)), str(out.get("label", "")), (), {}, float(out.get("score", 0))
            )
        return self._complete(out, obj)

    def _number(self, events: list[Event], pts: int | None, time: float, n: int) -> list[Event]:
        """Put the common head on each event (version, type, stream, seq, pts, time, frame) in a fixed key order."""
        out = []
        for event in events:
            head: Event = {"version": SCHEMA_VERSION, "type": event["type"], "stream": self.stream, "seq": self.seq}
            head.update(pts=pts, time=time, frame=n)
            head.update((k, v) for k, v in event.items() if k not in head)
            self.seq += 1
            self.counts[head["type"]] = self.counts.get(head["type"], 0) + 1
            out.append(head)
        return out

    # -- the run's report ----------------------------------------------------------------

    def summary_lines(self) -> list[str]:
        by_type = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return [f"events of stream '{self.stream}': produced {self.seq}{f' ({by_type})' if by_type else ''}"]

    def as_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "produced": self.seq, "by_type": dict(self.counts)}


def _text(det: Detections, i: int) -> tuple[str, float] | None:
    """Box ``i``'s read text and score, None when it has none."""
    if det.text is None or not det.text[i] or det.text_score is None:
        return None
    return det.text[i], float(det.text_score[i])


def _to_frame(det: Detections, frame: Frame) -> np.ndarray:
    fw, fh = det.frame_size
    if not fw or not fh:
        return np.ones(4)
    sx, sy = frame.width / fw, frame.height / fh
    return np.array([sx, sy, sx, sy])


__all__ = ["ObjectEvents", "iou"]
