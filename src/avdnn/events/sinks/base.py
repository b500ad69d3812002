"""The sink contract, its accounting, and the bounded backlog the network sinks share.

A sink takes messages (an event, a per-frame record, a retained state) from the ``events``
stage with :meth:`Sink.send`, which never blocks the frame path: a network sink only appends to
its backlog, and a thread of its own delivers. Every message a sink was given is, at any moment,
exactly one of

* **published**: the endpoint took it (the broker acknowledged a QoS 1 message, a QoS 0 one was
  written to the socket, the webhook answered 2xx, the OS took the whole line);
* **buffered**: waiting in the backlog or in flight (sent, not yet acknowledged);
* **dropped**, by cause: the backlog was full while the endpoint was away (the oldest message
  goes), the endpoint refused it, a webhook cooldown, or it was still undelivered when the run
  ended and the endpoint did not come back within ``flush_timeout``.

:class:`SinkStats` reads the counters and the backlog under the sink's one lock, so
``published + buffered + dropped == produced`` holds in every snapshot; the run's accounting
(:class:`avdnn.run.stats.RunStats`) reports each sink, and flags a sink that still holds
messages after it was closed. Names are shown redacted (:func:`avdnn._util.redact.redact_url`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

log = logging.getLogger("avdnn.events")

#: Why a message was dropped (the causes the summary and the metrics show).
BUFFER_FULL = "buffer full"
UNDELIVERED = "undelivered at close"
COOLDOWN = "cooldown"


@dataclass(frozen=True)
class Message:
    """One thing to publish: what it is, its record, and that record as JSON (made once for every sink)."""

    kind: str  # "event", "frame" or "state"
    record: dict[str, Any]
    payload: bytes = b""
    #: for "state": which zone or line ("zone", "bay")
    subject: tuple[str, str] | None = None

    @classmethod
    def of(cls, kind: str, record: dict[str, Any], subject: tuple[str, str] | None = None) -> Message:
        payload = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        return cls(kind, record, payload, subject)


@dataclass(frozen=True)
class SinkOptions:
    """What the ``events`` stage's options say to its sinks (each sink reads its own)."""

    stream: str = "default"
    buffer: int = 1000
    flush_timeout: float = 3.0
    qos: int = 1
    client_id: str = ""
    timeout: float = 5.0
    retries: int = 3
    cooldown: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    #: the run's -y: whether a file sink may replace an existing file (media.output.sidefile)
    overwrite: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class SinkStats:
    """Live counters of one sink (thread-safe); see the module docstring for what they mean."""

    section: ClassVar[str] = "sinks"

    def __init__(self, kind: str, name: str, lock: threading.Lock | threading.RLock, held: Callable[[], int]) -> None:
        self.kind = kind
        self.name = name
        self._lock = lock
        self._held = held
        self.produced = 0
        self.published = 0
        self.dropped: Counter[str] = Counter()
        #: by message kind: how many of ``produced`` were events, frames, states
        self.kinds: Counter[str] = Counter()
        self.reconnects = 0
        self.state = "starting"
        self.last_error = ""
        self.closed = False

    @property
    def buffered(self) -> int:
        with self._lock:
            return self._held()

    def snapshot(self) -> dict[str, Any]:
        """Every counter at one instant (taken under the sink's lock)."""
        with self._lock:
            return {
                "kind": self.kind,
                "name": self.name,
                "produced": self.produced,
                "published": self.published,
                "buffered": self._held(),
                "dropped": dict(self.dropped),
                "messages": dict(self.kinds),
                "reconnects": self.reconnects,
                "state": self.state,
                "last_error": self.last_error,
            }

    def as_dict(self) -> dict[str, Any]:
        return self.snapshot()

    def violations(self) -> list[str]:
        snap = self.snapshot()
        dropped = sum(snap["dropped"].values())
        bad = []
        if snap["produced"] != snap["published"] + dropped + snap["buffered"]:
            bad.append(
                f"events sink {self.kind} '{self.name}' was given {snap['produced']} message(s) but accounts for "
                f"{snap['published'] + dropped + snap['buffered']}"
            )
        if self.closed and snap["buffered"]:
            bad.append(f"events sink {self.kind} '{self.name}' still holds {snap['buffered']} message(s) after close")
        return bad

    def summary_lines(self) -> list[str]:
        snap = self.snapshot()
        causes = ", ".join(f"{k} {v}" for k, v in snap["dropped"].items())
        dropped = sum(snap["dropped"].values())
        what = ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in sorted(snap["messages"].items())) or "nothing"
        line = (
            f"events to {self.kind} '{self.name}': {what}: published {snap['published']}, "
            f"dropped {dropped}{f' ({causes})' if causes else ''}, buffered {snap['buffered']}"
        )
        if snap["reconnects"]:
            line += f", reconnected {snap['reconnects']} time(s)"
        return [line]


class Sink:
    """Base of every sink: the lock, the counters, and the two calls the ``events`` stage makes."""

    kind: ClassVar[str] = ""

    def __init__(self, name: str) -> None:
        self.lock = threading.RLock()
        self.stats = SinkStats(self.kind, name, self.lock, self.held)

    def held(self) -> int:
        """Messages given and not yet published or dropped (called under :attr:`lock`)."""
        return 0

    def send(self, message: Message) -> None:
        """Take one message; never blocks on the endpoint."""
        raise NotImplementedError

    def close(self) -> None:
        """Deliver what is buffered within ``flush_timeout``, count the rest as dropped, stop."""
        self.stats.closed = True
        self.stats.state = "closed"

    def _given(self, message: Message) -> None:
        """Count a message as produced (call under the lock)."""
        self.stats.produced += 1
        self.stats.kinds[message.kind] += 1


class Backlog:
    """A bounded FIFO of messages waiting for their endpoint, shared by a sink's caller and its thread.

    When it is full the *oldest* message is dropped (counted as ``buffer full``): after an
    outage the subscriber gets the latest events, and the order of those it gets is kept.
    """

    def __init__(self, sink: Sink, limit: int) -> None:
        self.sink = sink
        self.limit = max(1, limit)
        self.items: deque[Message] = deque()
        self.ready = threading.Condition(sink.lock)

    def put(self, message: Message) -> None:
        with self.ready:
            self.sink._given(message)
            if len(self.items) >= self.limit:
                self.items.popleft()
                self.sink.stats.dropped[BUFFER_FULL] += 1
            self.items.append(message)
            self.ready.notify_all()

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the sink's thread to deliver what the sink holds (at close)."""
        deadline = time.monotonic() + timeout
        with self.ready:
            while self.sink.held() and (left := deadline - time.monotonic()) > 0:
                self.ready.wait(min(0.1, left))

    def drop_all(self, cause: str) -> int:
        """Count everything still waiting as dropped (call under the lock)."""
        n = len(self.items)
        if n:
            self.sink.stats.dropped[cause] += n
            self.items.clear()
        return n


__all__ = [
    "BUFFER_FULL",
    "COOLDOWN",
    "UNDELIVERED",
    "Backlog",
    "Message",
    "Sink",
    "SinkOptions",
    "SinkStats",
    "log",
]
