"""Events to an MQTT broker with paho-mqtt 2.x: reconnect with back-off, a bounded backlog, every message counted.

``mqtt=mqtt://[user[:password]@]host[:port][/topic]`` (``pip install 'avdnn[events]'``). The topic
is a template (default ``avdnn/{stream}/events``) of the event's ``{stream}``, ``{type}``,
``{label}`` and ``{track_id}``; each value is made topic-safe (:func:`topic_safe`: ``%``, ``+``,
``#``, ``/`` and the characters MQTT forbids become ``%XX``, an empty value ``_``), so a label
cannot add a level, a wildcard or an empty topic. With ``state=1`` every change of a zone or line count is also
published *retained* to ``<root>/{stream}/zone/<name>`` and ``<root>/{stream}/line/<name>``
(``<root>``: the topic's first level, ``avdnn`` by default), so a client that subscribes later
gets the current counts at once; with ``frames=1`` each frame's record goes to
``<root>/{stream}/frames``. ``qos`` 0 or 1 (default 1), ``client_id`` (default
``avdnn-<pid>-<n>``). The password never prints: the sink shows its URL redacted.

While the broker is away nothing blocks: messages wait in the backlog (``buffer`` of them; the
oldest goes, counted, when it is full), paho reconnects with back-off (0.5 s doubling to 8 s),
and the backlog is sent when the broker is back. A QoS 1 message sent but not acknowledged when
the connection broke is kept by paho and sent again (with DUP) after the reconnect, so a broker
restart loses nothing (delivery is at least once: a subscriber may see a repeat, ``seq`` tells).
A QoS 0 message in paho's socket queue when the connection broke is lost and counted as
``connection lost``. At the end of the run the sink waits up to ``flush_timeout`` seconds for
the backlog and the acknowledgements, then counts what is left as ``undelivered at close``.
A message paho refuses to publish (a topic or payload over MQTT's limits) is dropped and
counted with paho's reason; the delivery thread goes on.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from avdnn._util.redact import redact_url
from avdnn.errors import BackendUnavailableError, InvalidArgumentError
from avdnn.events.sinks.base import UNDELIVERED, Backlog, Message, Sink, SinkOptions, log

DEFAULT_PORT = 1883
DEFAULT_TOPIC = "avdnn/{stream}/events"
#: paho's reconnect back-off, seconds (reconnect_delay_set)
RECONNECT_MIN, RECONNECT_MAX = 0.5, 8.0
#: messages handed to paho and not yet acknowledged, at most (the rest waits in the backlog)
MAX_INFLIGHT = 64
CONNECTION_LOST = "connection lost (qos 0)"
#: what a topic template may name
TOPIC_FIELDS = ("stream", "type", "label", "track_id")

_ids = itertools.count()

#: what a topic-safe value escapes: the escape itself, a level, the wildcards, and what MQTT
#: forbids or mosquitto refuses in a topic (controls, surrogates, non-characters)
_NONCHARS = "".join(chr(plane << 16 | low) for plane in range(17) for low in (0xFFFE, 0xFFFF))
_UNSAFE = re.compile("[%+#/\x00-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef" + re.escape(_NONCHARS) + "]")


def topic_safe(value: object) -> str:
    """``value`` as one topic level: each unsafe character as ``%XX`` of its UTF-8 bytes, ``""`` as ``_``."""
    text = str(value)
    if not text:
        return "_"
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogatepass")), text)


def _paho() -> Any:
    try:
        import paho.mqtt.client as client
    except ImportError:
        raise BackendUnavailableError(
            "the mqtt events sink needs paho-mqtt, which is not installed: pip install 'avdnn[events]'",
            option="mqtt",
        ) from None
    return client


def parse_mqtt_url(url: str) -> tuple[str, int, str | None, str | None, str]:
    """(host, port, user, password, topic template) of ``mqtt://[user[:password]@]host[:port][/topic]``."""
    parts = urlsplit(url)
    if parts.scheme != "mqtt" or not parts.hostname:
        raise InvalidArgumentError(
            f"'{redact_url(url)}' is not an MQTT URL: mqtt://[user[:password]@]host[:port][/topic]", option="mqtt"
        )
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise InvalidArgumentError(f"'{redact_url(url)}': bad port", option="mqtt") from None
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    topic = unquote(parts.path.lstrip("/")) or DEFAULT_TOPIC
    if "#" in topic or "+" in topic:
        raise InvalidArgumentError(f"topic '{topic}': wildcards are for subscribing, not publishing", option="mqtt")
    if "\x00" in topic:
        raise InvalidArgumentError("topic: MQTT allows no NUL character in a topic", option="mqtt")
    try:
        topic.format_map(dict.fromkeys(TOPIC_FIELDS, "x"))
    except (KeyError, ValueError, IndexError) as exc:
        names = ", ".join("{" + f + "}" for f in TOPIC_FIELDS)
        raise InvalidArgumentError(
            f"topic '{topic}': {type(exc).__name__} {exc} (a template of {names})", option="mqtt"
        ) from None
    return parts.hostname, port, user, password, topic


class MqttSink(Sink):
    """One paho client, its network thread, and a delivery thread over the backlog."""

    kind: ClassVar[str] = "mqtt"

    def __init__(self, target: str, options: SinkOptions) -> None:
        super().__init__(redact_url(target))
        mqtt = self._mqtt = _paho()
        self.host, self.port, user, password, self.topic = parse_mqtt_url(target)
        self.root = self.topic.split("/", 1)[0]
        self.stream = options.stream
        self.qos = int(options.qos)
        self.flush_timeout = options.flush_timeout
        self.backlog = Backlog(self, options.buffer)
        self._inflight: dict[int, Message] = {}
        self._acked_early: set[int] = set()
        self._connected = False
        self._ever_connected = False
        self._closing = False  # the run ended: deliver what is left, take nothing new
        self._stop = False  # flush_timeout is over: the delivery thread stops
        self._handing: Message | None = None  # taken from the backlog, being handed to paho
        client_id = options.client_id or f"avdnn-{os.getpid()}-{next(_ids)}"
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311, clean_session=True
        )
        if user is not None:
            self.client.username_pw_set(user, password)
        self.client.reconnect_delay_set(min_delay=RECONNECT_MIN, max_delay=RECONNECT_MAX)
        self.client.max_inflight_messages_set(MAX_INFLIGHT)
        self.client.on_connect = self._on_connect
        self.client.on_connect_fail = self._on_connect_fail
        self.client.on_disconnect = self._on_disconnect
        self.client.on_publish = self._on_publish
        self.stats.state = "connecting"
        self.client.connect_async(self.host, self.port, keepalive=30)
        self.client.loop_start()
        self._worker = threading.Thread(target=self._deliver, name="avdnn-mqtt", daemon=True)
        self._worker.start()

    # -- the caller's side -----------------------------------------------------------------

    def send(self, message: Message) -> None:
        if not self._closing:
            self.backlog.put(message)
            return
        with self.lock:
            self._given(message)
            self.stats.dropped["sent after close"] += 1

    def held(self) -> int:
        return len(self.backlog.items) + len(self._inflight) + (self._handing is not None)

    def topic_for(self, message: Message) -> str:
        rec = message.record
        stream = topic_safe(self.stream)
        if message.kind == "state" and message.subject is not None:
            return f"{self.root}/{stream}/{topic_safe(message.subject[0])}/{topic_safe(message.subject[1])}"
        if message.kind == "frame":
            return f"{self.root}/{stream}/frames"
        fields = {"stream": stream, "type": topic_safe(rec.get("type", "")), "label": topic_safe(rec.get("label", ""))}
        fields["track_id"] = topic_safe(rec.get("track_id", ""))
        return self.topic.format_map(fields)

    # -- the delivery thread ---------------------------------------------------------------

    def _deliver(self) -> None:
        ready = self.backlog.ready
        while True:
            with ready:
                while not self._stop and not (self._closing and not self.backlog.items):
                    if self._connected and self.backlog.items and len(self._inflight) < MAX_INFLIGHT:
                        break
                    ready.wait(0.5)
                if self._stop or not self.backlog.items:
                    return  # closing, and nothing left to hand over (or no more time for it)
                message = self._handing = self.backlog.items.popleft()
            qos = 0 if message.kind == "frame" else self.qos
            try:
                info = self.client.publish(
                    self.topic_for(message), message.payload, qos=qos, retain=message.kind == "state"
                )
            except ValueError as exc:  # paho's refusal of this message (a topic too long...): it alone goes
                with ready:
                    self._handing = None
                    self._refused(f"refused by paho: {exc}")
                    ready.notify_all()
                continue
            no_conn = info.rc == self._mqtt.MQTT_ERR_NO_CONN
            with ready:
                self._handing = None
                if no_conn and qos == 0:
                    self.backlog.items.appendleft(message)  # not sent: the connection just went away
                    self._connected = False
                    continue
                if info.rc != 0 and not no_conn:  # paho's own refusal (never seen: our window is below its limits)
                    self._refused(f"refused by paho: {self._mqtt.error_string(info.rc)}")
                    continue
                # a QoS 1 message refused for want of a connection stays with paho, which sends it on reconnect
                if info.mid in self._acked_early:
                    self._acked_early.discard(info.mid)
                    self.stats.published += 1
                else:
                    self._inflight[info.mid] = message
                ready.notify_all()

    def _refused(self, cause: str) -> None:
        """Count a message paho would not take; log a cause the first time (called under the lock)."""
        if not self.stats.dropped[cause]:
            log.warning("events: mqtt '%s': a message dropped: %s (such messages are counted)", self.stats.name, cause)
        self.stats.dropped[cause] += 1

    # -- paho's callbacks (its network thread) ----------------------------------------------

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        with self.backlog.ready:
            if reason_code.is_failure:
                self._set_error(f"broker refused the connection: {reason_code}")
                return
            if self._ever_connected:
                self.stats.reconnects += 1
                log.info("events: mqtt '%s': connected again (%d waiting)", self.stats.name, self.held())
            self._connected = self._ever_connected = True
            self.stats.state = "connected"
            self.stats.last_error = ""  # the problem it reported is over
            self.backlog.ready.notify_all()

    def _on_connect_fail(self, client: Any, userdata: Any) -> None:
        with self.lock:
            self._set_error(f"cannot reach the broker at {self.host}:{self.port}")

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        with self.backlog.ready:
            was = self._connected
            self._connected = False
            lost = [mid for mid, m in self._inflight.items() if m.kind == "frame" or self.qos == 0]
            for mid in lost:
                del self._inflight[mid]
            if lost:
                self.stats.dropped[CONNECTION_LOST] += len(lost)
            if self._closing:
                self.stats.state = "closed"
                return
            self.stats.state = "reconnecting"
            if was:
                log.warning(
                    "events: mqtt '%s': connection lost (%s); reconnecting with back-off, %d message(s) waiting",
                    self.stats.name,
                    reason_code,
                    self.held(),
                )

    def _on_publish(self, client: Any, userdata: Any, mid: int, reason_code: Any, properties: Any) -> None:
        with self.backlog.ready:
            if self._inflight.pop(mid, None) is not None:
                self.stats.published += 1
            else:
                self._acked_early.add(mid)
            self.backlog.ready.notify_all()

    def _set_error(self, text: str) -> None:
        """Record a connection problem; log it when it is new (called under the lock)."""
        self.stats.state = "reconnecting" if self._ever_connected else "connecting"
        if text != self.stats.last_error:
            self.stats.last_error = text
            log.warning(
                "events: mqtt '%s': %s; retrying with back-off, events wait in a buffer of %d",
                self.stats.name,
                text,
                self.backlog.limit,
            )

    # -- the end ------------------------------------------------------------------------

    def close(self) -> None:
        ready = self.backlog.ready
        with ready:
            self._closing = True
            ready.notify_all()
            self.backlog.drain(self.flush_timeout)
            self._stop = True
            ready.notify_all()
        self._worker.join(timeout=5.0)  # it is at most in one publish call
        self.client.disconnect()
        self.client.loop_stop()
        with ready:
            left = self.held()
            self.backlog.drop_all(UNDELIVERED)
            stuck = len(self._inflight) + (self._handing is not None)
            if stuck:
                self.stats.dropped[UNDELIVERED] += stuck
                self._inflight.clear()
                self._handing = None
            self.stats.state = "closed"
        if left:
            log.warning(
                "events: mqtt '%s': %d message(s) not delivered within flush_timeout=%g s (counted as dropped)",
                self.stats.name,
                left,
                self.flush_timeout,
            )
        super().close()


__all__ = ["DEFAULT_TOPIC", "MqttSink", "parse_mqtt_url", "topic_safe"]
