"""Overlap decoding, the chain and encoding with bounded hand-offs between threads.

PyAV releases the GIL while libavcodec decodes and encodes, and the DNN runtimes release it
while they infer, so a decoder thread feeding the chain and an encoder thread draining it
keep both cores busy. The hand-offs are bounded :class:`Channel` s (memory stays bounded),
carry frames in order (one producer, one consumer each), and carry errors: a failure on
either side reaches the other as an exception, and a consumer that stops early cancels the
producer, which then stops at its next frame. Waits are on conditions, never sleeps.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_END = object()


class Cancelled(Exception):
    """The other side of a channel stopped early; the producer should stop quietly."""


class Channel(Generic[T]):
    """A bounded FIFO between one producer and one consumer thread, with end and error."""

    def __init__(self, depth: int) -> None:
        self._items: deque[Any] = deque()
        self._depth = max(1, depth)
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._ended = False
        self._cancelled = False
        #: items the consumer never took: queued when it cancelled, or offered after (counted, for
        #: the accounting: they are the frames read ahead of a run that stopped early)
        self.refused = 0

    def put(self, item: T) -> None:
        """Blocks while full; raises Cancelled once the consumer has gone."""
        with self._cond:
            while len(self._items) >= self._depth and not self._cancelled:
                self._cond.wait()
            if self._cancelled:
                self.refused += 1
                raise Cancelled
            self._items.append(item)
            self._cond.notify_all()

    def end(self, error: BaseException | None = None) -> None:
        """No more items; ``error`` is raised to the consumer after the items before it."""
        with self._cond:
            self._ended = True
            self._error = error
            self._cond.notify_all()

    def cancel(self) -> int:
        """The consumer stops: wake and stop the producer; drop what is queued (returns how many)."""
        with self._cond:
            self._cancelled = True
            dropped = len(self._items)
            self.refused += dropped
            self._items.clear()
            self._cond.notify_all()
            return dropped

    def get(self) -> Any:
        """The next item, or ``_END``; raises the producer's error after its last item."""
        with self._cond:
            while not self._items and not self._ended:
                self._cond.wait()
            if self._items:
                item = self._items.popleft()
                self._cond.notify_all()
                return item
            if self._error is not None:
                raise self._error
            return _END

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)


def prefetch(source: Iterator[T], depth: int, *, name: str, channel: Channel[T] | None = None) -> Iterator[T]:
    """Run ``source`` on its own thread, ``depth`` items ahead of the consumer.

    Closing the returned generator cancels the producer and joins its thread, so whoever
    owns the underlying resource can close it safely afterwards. ``channel`` replaces the
    plain bounded channel (a live input's drop queue, run.livequeue).
    """
    chan: Channel[T] = channel if channel is not None else Channel(depth)

    def produce() -> None:
        try:
            for item in source:
                chan.put(item)
        except Cancelled:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            chan.end(exc)
            return
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()
        chan.end()

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = chan.get()
            if item is _END:
                return
            yield item
    finally:
        chan.cancel()
        thread.join()


class Writer:
    """Feeds a consumer function from a thread of its own, through a bounded channel.

    ``put`` raises the consumer's first error; ``finish`` waits for the last item and
    raises it too. ``stopped`` becomes true when the consumer asks for no more (a frame
    limit was reached). ``on_stop`` is called on the writer's thread when it stops early
    (limit or error), so a producer blocked elsewhere can be told at once.
    """

    def __init__(
        self, consume: Callable[[Any], bool], depth: int, *, name: str, on_stop: Callable[[], None] | None = None
    ) -> None:
        self._consume = consume
        self._on_stop = on_stop
        self._chan: Channel[Any] = Channel(depth)
        self.error: BaseException | None = None
        self.stopped = threading.Event()
        #: items offered after the consumer stopped (counted by the producer's thread only)
        self._offered_late = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                item = self._chan.get()
                if item is _END:
                    return
                if not self._consume(item):
                    self._stop()
                    self.stopped.set()
                    self._chan.cancel()  # counted (Channel.refused) and dropped under one lock: none slips by
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the producer
            self.error = exc
            self._stop()
            self._chan.cancel()

    def _stop(self) -> None:
        if self._on_stop is not None:
            with contextlib.suppress(Exception):  # a failed interrupt only means a slower stop
                self._on_stop()

    @property
    def unwritten(self) -> int:
        """Items accepted or offered after the consumer stopped, never consumed. Each counter has
        one writer (the channel's, under its lock; the producer's own), so no update is lost: the
        two threads once both did ``+= 1`` on one attribute and a -frames:v run lost a frame."""
        return self._chan.refused + self._offered_late

    def put(self, item: Any) -> bool:
        """Queue one item; False once the consumer stopped; raises its error."""
        if self.error is not None:
            raise self.error
        if self.stopped.is_set():
            self._offered_late += 1
            return False
        try:
            self._chan.put(item)
        except Cancelled:
            if self.error is not None:
                raise self.error from None
            return False  # Channel.refused counted it
        return True

    def finish(self) -> None:
        """Wait until every queued item is consumed; raise the consumer's error."""
        self._chan.end()
        self._thread.join()
        if self.error is not None:
            raise self.error
