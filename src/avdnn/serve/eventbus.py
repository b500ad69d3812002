"""The events of every pipeline on one bus, for ``GET /api/events``: a bounded queue per client.

Each source's run is started inside :func:`avdnn.events.listen` (:meth:`EventTap.attach`, entered
on the run's thread by ``OutputSet.start``'s ``scope``; the tap is its node agent's), so every
``events`` stage of its chain publishes to the tap's callback too, without a sink option: the
bus's :meth:`EventBus.publish` in the service's own process, or a relay that the head pulls
from a node's agent and publishes on its bus (:mod:`avdnn.serve.cluster`). ``publish`` runs on
the stage's thread (or the head's puller) and only appends: to a short ring of recent events
(replayed to a client that reconnects with ``Last-Event-ID``) and to each matching client's queue.
A queue is bounded: a client that reads slower than events come loses the oldest, counted as
dropped for the ``sse`` sink, and a pipeline never waits for a client; and at most
``max_event_clients`` clients are open at once (:class:`~avdnn.serve.slots.Slots`: one more is a
503). A client waits on an :class:`asyncio.Event` of its own loop, set from the stage's thread
with ``call_soon_threadsafe`` (at most one wake pending per client).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from avdnn.events import Subscription, listen
from avdnn.serve.slots import Slot, Slots

__all__ = ["RING", "SSE", "BusEvent", "Client", "EventBus", "EventCounters", "EventTap", "Publish"]

#: the name of the service's sink: the ListenerSink each run gets, and the clients' counts in /metrics
SSE = "sse"
#: recent events kept for clients reconnecting with Last-Event-ID
RING = 256
_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class EventCounters(Protocol):
    """What an event sink tells ``/metrics``: ``(sink, published, dropped)`` for each of its sinks.

    The service's :class:`EventBus` is one (its ``sse`` sink), its nodes another (the runs'
    ``listener`` sinks, and on a cluster the ``relay``); ``avdnn_events_published_total`` and
    ``avdnn_events_dropped_total`` read every one.
    """

    def event_counts(self) -> Iterable[tuple[str, int, int]]: ...


#: where a tap sends each event of a run: (pipeline, source, the event)
Publish = Callable[[str, str, dict[str, Any]], None]


class EventTap:
    """The runs' side of the events: each run's ``events`` stages publish to ``publish``, counted.

    Its counts are those of the runs' listener sinks (the ``listener`` row of ``/metrics``): the
    events they took, and those they lost (none unless ``publish`` failed)."""

    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self._lock = threading.Lock()
        self._subscriptions: list[Subscription] = []
        self._done = (0, 0)  # (published, dropped) of the subscriptions of ended runs

    @contextlib.contextmanager
    def attach(self, pipeline: str, source: str) -> Iterator[None]:
        """The scope of one run of ``pipeline``/``source``: its events stages publish to the tap."""
        with listen(callback=functools.partial(self._publish, pipeline, source), name=SSE) as sub:
            with self._lock:
                self._subscriptions.append(sub)
            try:
                yield
            finally:
                counts = (_published(sub), sub.dropped)  # the run has ended: its stages are closed
                with self._lock:
                    self._subscriptions.remove(sub)
                    sent, lost = self._done
                    self._done = (sent + counts[0], lost + counts[1])

    def counts(self) -> tuple[int, int]:
        """(published, dropped) of every run's listener sink so far, the running ones' included."""
        with self._lock:
            sent, lost = self._done
            live = list(self._subscriptions)
        for sub in live:
            sent, lost = sent + _published(sub), lost + sub.dropped
        return sent, lost


@dataclass(frozen=True)
class BusEvent:
    """One event as the clients get it: its id on the bus, where it came from, its SSE data."""

    id: int
    pipeline: str
    source: str
    type: str
    #: ``{"pipeline", "source", "event"}`` as JSON, made once for every client
    data: str


class Client:
    """One ``/api/events`` stream: its filters and its bounded queue (read on its event loop)."""

    def __init__(
        self, bus: EventBus, loop: asyncio.AbstractEventLoop, pipeline: str | None, source: str | None, limit: int
    ) -> None:
        self._bus = bus
        self._loop = loop
        self.pipeline = pipeline
        self.source = source
        self.limit = max(1, limit)
        self.queue: deque[BusEvent] = deque()
        self.dropped = 0
        self.closed = False
        self._ready = asyncio.Event()
        self._waking = False
        self.slot: Slot | None = None  # a wake is scheduled on the loop and has not run yet

    def wants(self, event: BusEvent) -> bool:
        return (self.pipeline is None or event.pipeline == self.pipeline) and (
            self.source is None or event.source == self.source
        )

    def _put(self, event: BusEvent) -> None:
        """Queue ``event`` (under the bus's lock, any thread); the oldest goes when the queue is full."""
        if len(self.queue) >= self.limit:
            self.queue.popleft()
            self.dropped += 1
            self._bus.dropped += 1
        self.queue.append(event)
        if not self._waking and not self.closed:
            self._waking = True
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # its loop has closed: the client is gone
                self.closed = True

    def _wake(self) -> None:
        with self._bus.lock:
            self._waking = False
        self._ready.set()

    async def next(self, timeout: float) -> list[BusEvent]:
        """The events queued now, oldest first, waiting up to ``timeout`` s for one ([] after it)."""
        with self._bus.lock:
            items = list(self.queue)
            self.queue.clear()
            if not items:
                self._ready.clear()
        if items:
            return items
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        with self._bus.lock:
            items = list(self.queue)
            self.queue.clear()
        return items


class EventBus:
    """Every pipeline's events, fanned out to the ``/api/events`` clients."""

    def __init__(self, limit: int = 256, max_clients: int = 32) -> None:
        self.limit = limit
        #: the clients' places: one is taken before a stream is answered (:meth:`reserve`)
        self.slots = Slots(max_clients, "event streams (max_event_clients)")
        self.lock = threading.Lock()
        self._clients: list[Client] = []
        self._ring: deque[BusEvent] = deque(maxlen=RING)
        self._next = 0
        #: events handed to a client's stream, and lost from a slow client's queue (the ``sse`` sink)
        self.published = 0
        self.dropped = 0

    # -- the runs' side (their taps' callbacks) ------------------------------------------

    def publish(self, pipeline: str, source: str, record: dict[str, Any]) -> None:
        """One event of a run (its tap's callback): queued for every client that wants it."""
        kind = str(record.get("type", ""))
        data = json.dumps(
            {"pipeline": pipeline, "source": source, "event": record}, ensure_ascii=False, separators=(",", ":")
        )
        with self.lock:
            self._next += 1
            event = BusEvent(self._next, pipeline, source, kind if _TYPE.match(kind) else "message", data)
            self._ring.append(event)
            for client in self._clients:
                if client.wants(event):
                    client._put(event)
            if any(c.closed for c in self._clients):  # a client whose loop has gone
                self._clients = [c for c in self._clients if not c.closed]

    # -- the clients' side (the event loop) -------------------------------------------------

    def open(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        pipeline: str | None = None,
        source: str | None = None,
        after: int | None = None,
        backlog: int = 0,
        slot: Slot | None = None,
    ) -> Client:
        """A new client (in ``slot``, taken with :meth:`reserve`; given back at :meth:`close`); the
        recent events it wants come first: those after ``after`` (its Last-Event-ID, a reconnection),
        else the last ``backlog`` of them (a page that just opened)."""
        client = Client(self, loop, pipeline, source, self.limit)
        client.slot = slot
        with self.lock:
            wanted = [e for e in self._ring if client.wants(e)]
            replay = [e for e in wanted if e.id > after] if after is not None else wanted[-backlog:] if backlog else []
            for event in replay:
                client._put(event)
            self._clients.append(client)
        return client

    def reserve(self) -> Slot:
        """A client's place, before its stream is answered (503 past ``max_event_clients``)."""
        return self.slots.take()

    def close(self, client: Client) -> None:
        with self.lock:
            client.closed = True
            if client in self._clients:
                self._clients.remove(client)
        if client.slot is not None:
            client.slot.release()

    def sent(self, n: int) -> None:
        """``n`` events were handed to a client's stream."""
        with self.lock:
            self.published += n

    def clients(self) -> int:
        with self.lock:
            return len(self._clients)

    # -- /metrics ---------------------------------------------------------------------------

    def event_counts(self) -> Iterable[tuple[str, int, int]]:
        """``(sink, published, dropped)`` of the clients (the runs' taps count the ``listener`` row)."""
        with self.lock:
            return [(SSE, self.published, self.dropped)]


def _published(sub: Subscription) -> int:
    return sum(sink.stats.snapshot()["published"] for sink in sub.sinks)
