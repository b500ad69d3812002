"""events: object life-cycle events, completed zone/line events, and publishing them all.

``events=stream=cam1:mqtt=mqtt://user:pass@broker:1883/avdnn/{stream}/events:file=ev.jsonl`` after
``track`` and the ``zone``/``line`` filters. Per frame it turns the tracks into ``new``/``update``/
``end`` events (:mod:`avdnn.events.objects`), completes the frame's ``enter``/``exit``/``loiter``/
``cross`` events with the object's state, numbers them (``seq``) and hands each to every sink it
has (:mod:`avdnn.events.sinks`: ``file``, ``mqtt``, ``webhook``, and the in-process subscriptions
of :func:`avdnn.events.listen`). A URL in an option needs no escaping of its ``:`` (the bare
values after ``mqtt=mqtt`` or ``webhook=http`` belong to the URL); a ``=`` in a password is
written ``%3D``. Sinks never block the frames; what they publish, hold and drop is counted per
sink in the run's accounting and summary. The manual is docs/events.md.

The frame leaves with the published events in its analytics side data (``metadata_jsonl`` after
``events`` writes them between the frame lines). The ``end`` events of the objects still tracked
at end of stream are published at flush (or at close, when the run stopped early) and written by
``metadata_jsonl`` at its end.
"""

from __future__ import annotations

import logging
import re
from fractions import Fraction
from typing import Any, ClassVar

from avdnn.errors import AvdnnError
from avdnn.events.objects import ObjectEvents
from avdnn.events.record import Event, FrameAnalytics, LateEvents, analytics_for
from avdnn.events.sinks import SINKS, ListenerSink, Message, Sink, SinkOptions, current_listeners, open_sink
from avdnn.events.sinks.webhook import parse_headers
from avdnn.filters import _analytics as common
from avdnn.filters.base import Filter
from avdnn.filters.metadata_jsonl import frame_record
from avdnn.filters.options import INT_MAX, Option
from avdnn.media.frame import Frame
from avdnn.media.output.sidefile import current_overwrite

log = logging.getLogger("avdnn.filters")

#: options whose value is a URL: after a scheme (or a URL) the next bare ``:value`` is still the URL's
_URL_OPTIONS = ("mqtt", "webhook")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")

EVENTS_OPTIONS: tuple[Option, ...] = (
    Option(
        "stream", "string", None, help="the stream's name in events and topics (default: events@NAME, or 'default')"
    ),
    Option("file", "string", None, help="write the events as JSON Lines to this file (- = stdout)", writes=True),
    Option("mqtt", "string", None, help="publish to mqtt://[user[:pass]@]host[:port][/topic template]"),
    Option("webhook", "string", None, help="POST each event as JSON to this http(s):// URL"),
    Option("qos", "int", 1, 0, 1, help="MQTT quality of service of the events"),
    Option("client_id", "string", None, help="MQTT client id (default: avdnn-<pid>-<n>)"),
    Option("state", "bool", False, 0, 1, help="MQTT: publish zone and line counts retained when they change"),
    Option("frames", "bool", False, 0, 1, help="also publish each frame's record (file, MQTT)"),
    Option("timeout", "float", 5.0, 0.01, 3600, help="webhook: seconds per attempt"),
    Option("retries", "int", 3, 0, 100, help="webhook: attempts after the first, with back-off"),
    Option("cooldown", "float", 0.0, 0, 86400, help="webhook: seconds between two posts about one object"),
    Option("headers", "string", None, help="webhook: extra headers, Name=value|Name=value"),
    Option("buffer", "int", 1000, 1, INT_MAX, help="messages a network sink holds while its endpoint is away"),
    Option("flush_timeout", "float", 3.0, 0, 3600, help="seconds at the end to deliver what is buffered"),
    Option("direct", "bool", False, 0, 1, help="file: flush after every line"),
    Option("snapshot", "bool", False, 0, 1, help="add a JPEG of the object's best-scored view to its events"),
    Option("stationary", "float", 10.0, 0, 86400, help="seconds still before an object is stationary (0: never)"),
    Option("stationary_iou", "float", 0.6, 0, 1, help="IoU with where it stopped that still counts as still"),
    common.LOST,
)


class EventsFilter(Filter):
    """Make and publish the events of a tracked stream; pass every frame on."""

    name: ClassVar[str] = "events"
    description: ClassVar[str] = "Object, zone and line events to files, MQTT and webhooks (avdnn)."
    options: ClassVar[tuple[Option, ...]] = EVENTS_OPTIONS

    @classmethod
    def joins(cls, key: str, value: str) -> bool:
        """``mqtt=mqtt://host:1883/t``: the bare values after a URL option's scheme are the URL's."""
        return key in _URL_OPTIONS and ("://" in value or _SCHEME.fullmatch(value) is not None)

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.stream = str(values.get("stream") or common.instance_name(self.label, "default"))
        self.objects = ObjectEvents(
            self.stream,
            stationary=float(values.get("stationary", 10.0)),
            stationary_iou=float(values.get("stationary_iou", 0.6)),
            snapshot=bool(values.get("snapshot")),
            lost=float(values.get("lost", 1.0)),
        )
        self.state = bool(values.get("state"))
        self.frames = bool(values.get("frames"))
        self.late = LateEvents()
        self.clock = common.FrameClock()
        self.count = 0
        self._finished = False
        self._closed = False
        self._states: dict[tuple[str, str], dict[str, Any]] = {}
        try:
            options = SinkOptions(
                stream=self.stream,
                buffer=int(values.get("buffer", 1000)),
                flush_timeout=float(values.get("flush_timeout", 3.0)),
                qos=int(values.get("qos", 1)),
                client_id=str(values.get("client_id") or ""),
                timeout=float(values.get("timeout", 5.0)),
                retries=int(values.get("retries", 3)),
                cooldown=float(values.get("cooldown", 0.0)),
                headers=parse_headers(str(values.get("headers") or "")),
                overwrite=current_overwrite(),
                extra={"direct": bool(values.get("direct"))},
            )
            self.sinks: list[Sink] = []
            for kind, spec in SINKS.items():
                target = values.get(kind) if spec.option else None
                if target:
                    self.sinks.append(open_sink(kind, str(target), options))
            self.sinks += [ListenerSink(sub) for sub in current_listeners()]
        except AvdnnError as exc:
            self._close_sinks()
            raise exc.with_context(filter=self.label) from None
        except BaseException:
            self._close_sinks()
            raise

    def output_rate(self, in_rate: Fraction | None) -> Fraction | None:
        self.clock.rate = in_rate
        return in_rate

    def filter(self, frame: Frame) -> list[Frame]:
        time = self.clock(frame)
        analytics = analytics_for(frame)
        events = self.objects.update(
            frame.side_data.detections,
            frame,
            time,
            self.count,
            alive=analytics.alive,
            membership=analytics.membership,
            upstream=analytics.events,
        )
        analytics.published = events
        analytics.late = self.late
        self._publish(events)
        if self.state:
            self._publish_states(analytics, frame, time)
        if self.frames:
            record = frame_record(frame, self.count)
            record["stream"] = self.stream
            if analytics.to_dict():
                record["analytics"] = analytics.to_dict()
            self._send(Message.of("frame", record))
        self.count += 1
        return [frame]

    def _send(self, message: Message) -> None:
        for sink in self.sinks:
            sink.send(message)

    def _publish(self, events: list[Event]) -> None:
        for event in events:
            self._send(Message.of("event", event))

    def _publish_states(self, analytics: FrameAnalytics, frame: Frame, time: float) -> None:
        """Zone and line counts, retained, each time they change (MQTT ``state=1``)."""
        items = [("zone", k, v.to_dict()) for k, v in analytics.zones.items()]
        items += [("line", k, v.to_dict()) for k, v in analytics.lines.items()]
        for kind, name, body in items:
            if self._states.get((kind, name)) == body:
                continue
            self._states[(kind, name)] = body
            record = {"version": 1, "type": kind, "stream": self.stream, "name": name, "pts": frame.pts, "time": time}
            record.update(body)
            self._send(Message.of("state", record, subject=(kind, name)))

    def _finish(self) -> None:
        """The ``end`` of every object still tracked, once (end of stream, or close after an early stop)."""
        if self._finished:
            return
        self._finished = True
        ends = self.objects.finish()
        self.late.events.extend(ends)
        self._publish(ends)

    def flush(self) -> list[Frame]:
        self._finish()
        return []

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.configured:
            self._finish()
        self._close_sinks()

    def _close_sinks(self) -> None:
        for sink in getattr(self, "sinks", ()):
            try:
                sink.close()
            except Exception:
                log.warning("%s: closing the %s sink failed", self.label, sink.kind, exc_info=True)

    def reports(self) -> list[Any]:
        """What this stage adds to the run's accounting: its events by type, and each sink's counters."""
        return [self.objects, *(sink.stats for sink in self.sinks)]


__all__ = ["EventsFilter"]
