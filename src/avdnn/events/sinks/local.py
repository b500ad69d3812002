"""Events in-process: a subscription that the API (and ``avdnn serve``) attaches to the runs it starts.

:func:`listen` opens a :class:`Subscription` for the ``events`` stages built inside its ``with``
block, on this thread and on the threads a run starts from it (the scope is a context variable,
and :mod:`avdnn.api` copies the context into its threads)::

    with avdnn.events.listen() as sub:
        avdnn.run("in.mp4", "dnn_detect=...,track,line=gate:0_200|640_200,events", output="out.mkv")
    for event in sub.drain():
        print(event["type"], event["track_id"])

Each stage built in scope gets a :class:`ListenerSink` for it, with its own counters in the run's
accounting. The subscription is a bounded queue (``maxsize``): when the consumer falls behind the
newest event is refused and counted as dropped (``queue full``), so a slow consumer never slows
the video. With ``callback=`` each event is instead handed to the callback on the stage's thread
(keep it short); an exception it raises drops that event (counted, logged once with its traceback).
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from avdnn.events.record import Event
from avdnn.events.sinks.base import Message, Sink, log

QUEUE_FULL = "queue full"

_scope: contextvars.ContextVar[tuple[Subscription, ...]] = contextvars.ContextVar("avdnn_event_listeners", default=())


class Subscription:
    """Events of the runs started inside :func:`listen`: a bounded queue, or a callback."""

    def __init__(self, maxsize: int = 10000, callback: Callable[[Event], Any] | None = None, name: str = "") -> None:
        self.maxsize = maxsize
        self.callback = callback
        self.name = name or ("callback" if callback is not None else "queue")
        self.queue: queue.Queue[Event] = queue.Queue(maxsize)
        #: the sinks attached to this subscription (one per events stage), for their counters
        self.sinks: list[ListenerSink] = []

    def get(self, timeout: float | None = None) -> Event:
        """The next event; ``queue.Empty`` after ``timeout`` seconds."""
        return self.queue.get(timeout=timeout)

    def drain(self) -> list[Event]:
        """Every event waiting now, oldest first."""
        out = []
        with contextlib.suppress(queue.Empty):
            while True:
                out.append(self.queue.get_nowait())
        return out

    def __iter__(self) -> Iterator[Event]:
        return iter(self.drain())

    @property
    def dropped(self) -> int:
        return sum(sum(s.stats.dropped.values()) for s in self.sinks)


class ListenerSink(Sink):
    """One events stage's messages to one :class:`Subscription`."""

    kind: ClassVar[str] = "listener"

    def __init__(self, subscription: Subscription) -> None:
        super().__init__(subscription.name)
        self.subscription = subscription
        self.stats.state = "open"
        self._busy = 0  # events handed to the callback that has not returned yet
        subscription.sinks.append(self)

    def send(self, message: Message) -> None:
        if message.kind != "event":
            return  # a subscription takes events (per-frame records stay in files and MQTT)
        callback = self.subscription.callback
        if callback is None:
            with self.lock:
                self._given(message)
                try:
                    self.subscription.queue.put_nowait(message.record)
                except queue.Full:
                    self.stats.dropped[QUEUE_FULL] += 1
                else:
                    self.stats.published += 1
            return
        with self.lock:
            self._given(message)
            self._busy += 1
        try:
            callback(message.record)
        except Exception as exc:  # noqa: BLE001 - the user's code: counted and shown, the run goes on
            cause = f"callback raised {type(exc).__name__}"
            with self.lock:
                self._busy -= 1
                first = not self.stats.dropped[cause]
                self.stats.dropped[cause] += 1
            if first:
                log.warning("events: listener callback failed (the run goes on)", exc_info=exc)
            return
        with self.lock:
            self._busy -= 1
            self.stats.published += 1

    def held(self) -> int:
        return self._busy


@contextlib.contextmanager
def listen(
    callback: Callable[[Event], Any] | None = None, *, maxsize: int = 10000, name: str = ""
) -> Iterator[Subscription]:
    """Subscribe to the events of every ``events`` stage built inside the block (see the module docstring)."""
    sub = Subscription(maxsize, callback, name)
    token = _scope.set((*_scope.get(), sub))
    try:
        yield sub
    finally:
        _scope.reset(token)


def current_listeners() -> tuple[Subscription, ...]:
    """The subscriptions in scope here (what an events stage built now attaches to)."""
    return _scope.get()


__all__ = ["QUEUE_FULL", "ListenerSink", "Subscription", "current_listeners", "listen"]
