"""Overlap decoding, the chain and encoding with bounded hand-offs between threads.

PyAV releases the GIL while libavcodec decodes and encodes, and the DNN runtimes release it
while they infer, so a decoder thread feeding the chain and an encoder thread draining it
keep both cores busy. The hand-offs are bounded :class:`Channel` s (memory stays bounded),
carry frames in order (one producer, one consumer each), and carry errors: a failure on
either side reaches the other as an exception, and a consumer that stops early cancels the
producer, which then stops at its next frame. Waits are on conditions, never sleeps, and the
joins are bounded (:mod:`avdnn._util.joins`): a thread stuck where no flag reaches it is left
behind with what it still uses, released when it ends.
"""

from __future__ import annotations

import contextlib
import errno
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from avdnn._util import joins
from avdnn._util.joins import OwnedThread
from avdnn.errors import IOFailureError

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


class Prefetch(Generic[T]):
    """``source`` run on its own thread, ``depth`` items ahead of the consumer (an iterator of its items).

    :meth:`close` cancels the producer and joins its thread (bounded: ``join_timeout``, None for
    :data:`~avdnn._util.joins.JOIN_TIMEOUT`), so whoever owns the underlying resource can close it
    safely afterwards; a producer still running after the bound (stuck in a read) is left behind,
    and what it uses is released by :meth:`then` when it ends. ``channel`` replaces the plain
    bounded channel (a live input's drop queue, run.livequeue).
    """

    def __init__(
        self,
        source: Iterator[T],
        depth: int,
        *,
        name: str,
        channel: Channel[T] | None = None,
        join_timeout: float | None = None,
    ) -> None:
        self._source = source
        self._chan: Channel[T] = channel if channel is not None else Channel(depth)
        self._join_timeout = join_timeout
        self._done = False
        self._thread = OwnedThread(self._produce, name=name)
        self._thread.start()

    def _produce(self) -> None:
        chan, source = self._chan, self._source
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

    def __iter__(self) -> Prefetch[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        try:
            item = self._chan.get()
        except BaseException:
            self.close()
            raise
        if item is _END:
            self.close()
            raise StopIteration
        return item  # type: ignore[no-any-return]

    def close(self) -> bool:
        """Stop the producer and wait for it (bounded); False: it was left behind (see :meth:`then`)."""
        self._done = True
        self._chan.cancel()
        return self._thread.join(self._join_timeout)

    def then(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the producer has ended (at once if it has): a left-behind one's releases."""
        self._thread.then(fn)


def prefetch(source: Iterator[T], depth: int, *, name: str, channel: Channel[T] | None = None) -> Prefetch[T]:
    """``Prefetch(source, depth, ...)``: ``source`` run on its own thread, ``depth`` items ahead."""
    return Prefetch(source, depth, name=name, channel=channel)


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
        self._thread = OwnedThread(self._run, name=name)
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

    def finish(self, timeout: float | None = None) -> None:
        """Wait until every queued item is consumed; raise the consumer's error.

        The wait is bounded (``timeout``, None: :data:`~avdnn._util.joins.JOIN_TIMEOUT`): a consumer
        still busy after it (a write to a pipe nobody reads) is left behind with
        :class:`WriterStuckError`, and what it writes into is released by :meth:`then` when it ends.
        """
        self._chan.end()
        if not self._thread.join(timeout):
            self._chan.cancel()  # it takes nothing more once its item is done
            raise WriterStuckError(self._thread.name, joins.JOIN_TIMEOUT if timeout is None else timeout)
        if self.error is not None:
            raise self.error

    @property
    def left_behind(self) -> bool:
        """Whether :meth:`finish` gave up waiting for the consumer (it may still be running)."""
        return self._thread.left_behind

    def then(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the consumer's thread has ended (at once if it has)."""
        self._thread.then(fn)


class WriterStuckError(IOFailureError):
    """The writer thread did not finish within its bound: AVERROR(ETIMEDOUT); the output is left unfinished."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(
            f"{name}: still writing after {seconds:g} s; the output is left unfinished", code=-errno.ETIMEDOUT
        )
