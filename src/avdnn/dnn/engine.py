"""The one execution engine: tasks in submission order over a pool of requests, sync or async.

FFmpeg's DNN backends each repeat the same queueing code (reference s.1.4-1.10) and each got
it slightly wrong (a failed async run never completes its task; errors are lost behind EOF).
Here it exists once, with the seed patches' semantics, for every backend. This module is the
request scheduling; what a batch is, how it runs and how its tasks complete is
:mod:`avdnn.dnn.batching`, which :class:`Engine` builds on:

* a :class:`Task` per frame holds one or more inferences (:class:`Item`, FFmpeg's lltask);
* ``nireq`` reusable :class:`Request` slots each run one batch of up to ``batch_size`` items
  at a time;
* ``async=True`` hands each started request to its slot's persistent worker thread (started
  once, at the slot's first use; FFmpeg starts a thread per request run, which costs more
  than a small model's inference) or to the backend's native async API; ``async=False``
  runs it inline. Both produce the same bytes;
* :meth:`Engine.submit` blocks while every request is busy, so at most
  ``nireq * batch_size`` items are in flight;
* :meth:`Engine.get_result` releases tasks strictly in submission order and waits on a
  condition (never a sleep loop);
* :meth:`Engine.flush` runs the partial last batch and raises its real error; a worker that
  cannot start raises AVERROR_EXTERNAL for EAGAIN and AVERROR(errno) otherwise (seed 001);
* each request's input buffer is grow-only (seed 002): reused, reallocated only for a larger
  batch, released at :meth:`Engine.close`, which waits for in-flight requests with a bound;
  what must not run under a request still in flight after it (freeing the backend model) waits
  for the last one to end (:meth:`Engine.when_idle`).
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from avdnn.dnn.batching import Batcher, RunBatch
from avdnn.dnn.config import EngineOptions
from avdnn.dnn.interface import DNNAsyncStatusType, DoneCallback
from avdnn.dnn.tasks import (
    EngineStats,
    Item,
    Request,
    Result,
    Task,
    auto_nireq,
    failure,
    worker_start_error,
)
from avdnn.errors import AvdnnError, ExitRequestedError, InvalidArgumentError

__all__ = [
    "Engine",
    "EngineOptions",
    "EngineStats",
    "Item",
    "Request",
    "Result",
    "Task",
    "auto_nireq",
    "worker_start_error",
]

log = logging.getLogger("avdnn.dnn")

StartAsync = Callable[[np.ndarray, DoneCallback], None]


class Engine(Batcher):
    """Runs a backend's ``run_batch`` over submitted tasks with FFmpeg's request semantics.

    ``options`` (default :class:`EngineOptions`'s) may be changed field by field with keywords:
    ``Engine(run, nireq=2, batch_size=4)``. ``start_async``: the backend's native async API.
    """

    def __init__(
        self,
        run_batch: RunBatch,
        options: EngineOptions | None = None,
        *,
        start_async: StartAsync | None = None,
        **changes: Any,
    ) -> None:
        options = options if options is not None else EngineOptions()
        if changes:
            options = replace(options, **changes)
        super().__init__(run_batch, options)
        self.options = options
        self.start_async = start_async
        self.nireq = options.nireq or auto_nireq()
        self.async_mode = options.async_mode
        self.close_timeout = options.close_timeout
        self._tasks: deque[Task] = deque()
        self._requests = [Request(i) for i in range(self.nireq)]
        self._free: deque[Request] = deque(self._requests)
        self._busy = 0
        self._closed = False
        self._interrupted = False
        self._next_index = 0
        #: run once no request is in flight (when_idle); taken under the lock, run after it
        self._when_idle: list[Callable[[], None]] = []
        self._idle_due: list[Callable[[], None]] = []
        # workers of an engine nobody closed still stop when it is collected
        weakref.finalize(self, _stop_workers, self._requests)

    # -- FFmpeg's execute_model -----------------------------------------------------------

    def submit(self, payload: Any, items: Sequence[Item]) -> Task:
        """Queue one task; dispatch every full batch. Blocks while all requests are busy.

        A task without items completes at once (a frame with nothing to infer). Raises the
        error of a worker that could not start; the items it carried fail with that error.
        """
        with self._cond:
            if self._closed:
                raise InvalidArgumentError(f"{self.name}: execute after close")
            task = Task(payload, self._next_index, todo=len(items), results=[None] * len(items))
            self._next_index += 1
            self._tasks.append(task)
            self.stats.tasks += 1
        for slot, item in enumerate(items):
            item.task, item.slot = task, slot
        self._queue(items)
        return task

    # -- FFmpeg's get_result ----------------------------------------------------------------

    def get_result(self, wait: bool = False, timeout: float | None = None) -> Result:
        """The oldest task's outcome, in submission order.

        EMPTY_QUEUE when nothing was submitted; NOT_READY while the oldest task runs (with
        ``wait`` this blocks on a condition until it completes or ``timeout`` passes, but
        never for a task whose items wait for a batch to fill: flush first); SUCCESS or
        FAIL (with the task's first error) once it is complete, and the task leaves.
        """
        with self._cond:
            if self._interrupted:
                raise self._exit()
            if not self._tasks:
                return Result(DNNAsyncStatusType.EMPTY_QUEUE)
            head = self._tasks[0]
            if not head.complete and wait:
                self._cond.wait_for(
                    lambda: head.complete or head.dispatched < head.todo or self._closed or self._interrupted, timeout
                )
                if self._interrupted:
                    raise self._exit()
            if not head.complete:
                return Result(DNNAsyncStatusType.NOT_READY)
            self._tasks.popleft()
        return head.result()

    @property
    def in_flight(self) -> int:
        """Requests running now (started and not yet completed)."""
        with self._cond:
            return self._busy

    @property
    def queued(self) -> int:
        """Tasks submitted and not yet taken by get_result."""
        with self._cond:
            return len(self._tasks)

    # -- FFmpeg's flush -------------------------------------------------------------------

    def flush(self) -> None:
        """End of stream: run the partial last batch; raise its real error."""
        try:
            self.faults.hit("flush")
        except BaseException as exc:  # the items still pending must not wait forever
            err = failure(exc, "flush")
            self._fail_items(self._take_pending(len(self._pending)), err)
            if err is exc:
                raise
            raise err from exc
        while self._pending:
            self._dispatch(len(self._pending), in_flush=True)

    # -- stopping early -------------------------------------------------------------------

    def interrupt(self) -> None:
        """The run is stopping (any thread): a submit or get_result that waits now, or is
        called later, raises ExitRequestedError instead. ``close`` still follows."""
        with self._cond:
            self._interrupted = True
            self._cond.notify_all()

    def _exit(self, who: str | None = None) -> ExitRequestedError:
        return ExitRequestedError(f"{who or self.name}: the run is stopping")

    # -- close ----------------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> bool:
        """Wait (bounded) for in-flight requests, then drop every task and buffer.

        Returns False when requests were still running at the deadline; they are abandoned
        (their workers are daemons, complete into nothing and then exit).
        """
        limit = self.close_timeout if timeout is None else timeout
        with self._cond:
            self._closed = True
            self._cond.notify_all()  # wake a submit blocked on a free request, and waiters
            idle = self._cond.wait_for(lambda: self._busy == 0, limit)
            dropped = len(self._tasks)
            self._tasks.clear()
            pending = self._pending
            self._pending = []
            for req in self._requests:
                req.free()
            self.stats.buffer_bytes = 0
        del pending
        self._stop_workers()  # each worker exits after the job it runs, if any
        if not idle:
            log.warning(
                "%s: %d inference request(s) still running after %.1fs; abandoned (the model is freed when they end)",
                self.name,
                self._busy,
                limit,
            )
        else:
            for req in self._requests:
                if req.thread is not None:
                    req.thread.join(timeout=1.0)
                    req.thread = None
        if dropped:
            log.debug("%s: %d task(s) dropped at close", self.name, dropped)
        return idle

    # -- the request pool -----------------------------------------------------------------

    def _await_request(self, stopping: Callable[[], bool], who: str | None = None) -> None:
        """Wait (the lock held) until a request is free; raise if the run stops (``stopping``,
        ExitRequestedError naming ``who``) or the engine closes meanwhile."""
        if not self._free:
            self.stats.blocked_submits += 1
            self._cond.wait_for(lambda: bool(self._free) or self._closed or stopping())
        if stopping():
            raise self._exit(who)
        if self._closed:
            raise InvalidArgumentError(f"{self.name}: closed while waiting for a free request")

    def _bind(self, items: list[Item]) -> tuple[Request, int]:
        """A free request for ``items`` and the batch's number (the lock held, a request free)."""
        req = self._free.popleft()
        self._busy += 1
        stats = self.stats
        if self._busy > stats.max_busy:
            stats.max_busy = self._busy
        for item in items:
            item.task.dispatched += 1  # type: ignore[union-attr]
        batch_no = stats.batches
        stats.batches += 1
        return req, batch_no

    def _acquire(self, n: int) -> tuple[Request, list[Item], int]:
        """A free request (waiting for one), the next ``n`` pending items and a batch number."""
        with self._cond:
            self._await_request(lambda: self._interrupted)
            items = self._take_pending(n)
            req, batch_no = self._bind(items)
            return req, items, batch_no

    def _release(self, req: Request) -> None:
        with self._cond:
            self._put_back(req)
            self._cond.notify_all()
        self._after_put_back()

    def _put_back(self, req: Request) -> None:
        self._busy -= 1
        self._free.append(req)
        if not self._busy and self._when_idle:
            self._idle_due += self._when_idle
            self._when_idle = []

    def _after_put_back(self) -> None:
        with self._cond:
            due, self._idle_due = self._idle_due, []
        if due:  # on a thread of its own: the completing one may be the backend's (OpenVINO's callback)
            threading.Thread(target=_run_all, args=(due,), name=f"{self.name}-idle", daemon=True).start()

    def when_idle(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once no request is in flight: now if none is, else right after the last one ends
        (after an abandoned close, the backend model is freed then, never under a live request)."""
        with self._cond:
            if self._busy:
                self._when_idle.append(fn)
                return
        fn()

    def _dispatch(self, n: int, *, in_flush: bool = False) -> None:
        """Bind up to ``n`` pending items to a free request, fill its buffer, start it."""
        req, items, batch_no = self._acquire(n)
        self._launch(req, items, batch_no, in_flush=in_flush)

    def _launch(self, req: Request, items: list[Item], batch_no: int, *, in_flush: bool = False) -> None:
        """Fill an acquired request's buffer and run it inline or start it; every item completes."""
        try:
            batch, items = self._fill(req, items)
        except BaseException as exc:
            self._release(req)
            err = failure(exc, "pre-processing")
            for item in items:
                if not item.finished:
                    self._complete(item, err)
            if err is exc:
                raise
            raise err from exc
        if not items:
            self._release(req)
            return
        if not self.async_mode:
            bug = self._run(req, items, batch, batch_no)
            if bug is not None:  # inline: a bug or a Ctrl-C reaches the caller as it was raised
                raise bug
            return
        try:
            if self._faults_on:
                self.faults.hit("worker_start", req.index, in_flush=in_flush)
            self._start(req, items, batch, batch_no)
        except BaseException as exc:
            if isinstance(exc, AvdnnError):
                start_err: BaseException = exc
            elif isinstance(exc, (OSError, RuntimeError)):
                start_err = worker_start_error(exc)
            else:
                start_err = failure(exc, "starting inference")
            if not isinstance(start_err, AvdnnError):  # a bug: every item completes, then it goes up as raised
                for item in items:
                    self._complete(item, start_err)
                self._release(req)
                raise
            stopping = self._interrupted  # the backend refused because the run is being cancelled
            if not stopping:
                log.error("%s: %s", self.name, start_err.message)
            for item in items:
                self._complete(item, start_err)
            self._release(req)
            if stopping:
                raise self._exit() from exc
            raise start_err from exc

    def _start(self, req: Request, items: list[Item], batch: np.ndarray, batch_no: int) -> None:
        """Hand a filled request to the backend's async API or to the slot's worker.

        The worker is started at the slot's first hand-off and then kept: a thread start that
        fails is a worker that cannot start (seed 001), reported for the hand-off that needed it.
        """
        if self.start_async is not None:

            def done(outs: Sequence[np.ndarray] | None, exc: BaseException | None) -> None:
                self._finish(req, items, outs, exc, batch_no)  # a bug is kept on its task, for get_result

            self.start_async(batch, done)
            return
        if req.inbox is None:
            inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
            thread = threading.Thread(
                target=_serve,
                args=(weakref.ref(self), req, inbox),
                name=f"{self.name}-req{req.index}",
                daemon=True,
            )
            thread.start()
            req.thread, req.inbox = thread, inbox
            with self._cond:
                self.stats.worker_starts += 1
        req.inbox.put((items, batch, batch_no))

    def _stop_workers(self) -> None:
        _stop_workers(self._requests)


def _serve(engine_ref: weakref.ref[Engine], req: Request, inbox: queue.SimpleQueue[Any]) -> None:
    """A request slot's worker: run each job handed to it until told to stop.

    It holds its engine only while a job runs, so an engine nobody closed can still be
    collected (its finalizer stops the workers).
    """
    while True:
        job = inbox.get()
        if job is None:
            return
        engine = engine_ref()
        if engine is None:
            return
        engine._run(req, *job)
        del engine, job


def _run_all(fns: Sequence[Callable[[], None]]) -> None:
    for fn in fns:
        try:
            fn()
        except Exception:  # on a thread of its own: nobody to raise it to
            log.warning("freeing a model after its last request failed", exc_info=True)


def _stop_workers(requests: Sequence[Request]) -> None:
    for req in requests:
        if req.inbox is not None:
            req.inbox.put(None)
            req.inbox = None
