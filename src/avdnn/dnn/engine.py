"""The one execution engine: tasks, inferences, a request pool, batching, sync and async.

FFmpeg's DNN backends each repeat the same queueing code (reference s.1.4-1.10) and each got
it slightly wrong (a failed async run never completes its task; errors are lost behind EOF).
Here it exists once, with the seed patches' semantics, for every backend:

* a :class:`Task` per frame holds one or more inferences (:class:`Item`, FFmpeg's lltask);
* ``nireq`` reusable :class:`Request` slots each run up to ``batch_size`` items in one call of
  the backend's ``run``; items are packed only with items of the same shape, so a resolution
  change just starts a new batch;
* ``async=True`` hands each started request to its slot's persistent worker thread (started
  once, at the slot's first use; FFmpeg starts a thread per request run, which costs more
  than a small model's inference) or to the backend's native async API; ``async=False``
  runs it inline. Both produce the same bytes;
* :meth:`Engine.submit` blocks while every request is busy, so at most
  ``nireq * batch_size`` items are in flight;
* completion is recorded under one lock with a per-task status keeping the first error;
  every exit path of a request completes all of its items, so no task waits forever;
* :meth:`Engine.get_result` releases tasks strictly in submission order and waits on a
  condition (never a sleep loop);
* :meth:`Engine.flush` runs the partial last batch and raises its real error; a worker that
  cannot start raises AVERROR_EXTERNAL for EAGAIN and AVERROR(errno) otherwise (seed 001);
* each request's input buffer is grow-only (seed 002): reused, reallocated only for a larger
  batch, released at :meth:`Engine.close`, which waits for in-flight requests with a bound.
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from avdnn.dnn.faults import FaultPlan, current_plan
from avdnn.dnn.interface import DNNAsyncStatusType, DoneCallback
from avdnn.dnn.tasks import (
    EngineStats,
    Item,
    Request,
    Result,
    Task,
    as_error,
    auto_nireq,
    failure,
    worker_start_error,
)
from avdnn.errors import AvdnnError, ExitRequestedError, ExternalError, InvalidArgumentError

__all__ = ["Engine", "EngineStats", "Item", "Request", "Result", "Task", "auto_nireq", "worker_start_error"]

log = logging.getLogger("avdnn.dnn")

RunBatch = Callable[[np.ndarray], Sequence[np.ndarray]]
StartAsync = Callable[[np.ndarray, DoneCallback], None]
#: one item's completion: the item, its error (None on success) and its result
Outcome = tuple[Item, BaseException | None, Any]


class Engine:
    """Runs a backend's ``run_batch`` over submitted tasks with FFmpeg's request semantics."""

    def __init__(
        self,
        run_batch: RunBatch,
        *,
        nireq: int = 0,
        batch_size: int = 1,
        async_mode: bool = True,
        start_async: StartAsync | None = None,
        name: str = "dnn",
        faults: FaultPlan | None = None,
        close_timeout: float = 10.0,
    ) -> None:
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be at least 1, got {batch_size}", option="batch_size")
        if nireq < 0:
            raise InvalidArgumentError(f"nireq must be 0 (auto) or more, got {nireq}", option="nireq")
        self.run_batch = run_batch
        self.start_async = start_async
        self.nireq = nireq or auto_nireq()
        self.batch_size = batch_size
        self.async_mode = async_mode
        self.name = name
        self.faults = faults if faults is not None else current_plan()
        self.close_timeout = close_timeout
        self.stats = EngineStats()
        self._cond = threading.Condition(threading.Lock())
        self._tasks: deque[Task] = deque()
        self._pending: list[Item] = []
        self._requests = [Request(i) for i in range(self.nireq)]
        self._free: deque[Request] = deque(self._requests)
        self._busy = 0
        self._closed = False
        self._interrupted = False
        self._next_index = 0
        self._faults_on = bool(self.faults)
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
        queued = 0
        try:
            for item in items:
                if self._pending and (self._pending[0].shape, self._pending[0].dtype) != (item.shape, item.dtype):
                    self._dispatch(len(self._pending))
                self._pending.append(item)
                queued += 1
                if len(self._pending) >= self.batch_size:
                    self._dispatch(self.batch_size)
        except AvdnnError as err:
            # the items not queued yet must complete too, or the task would wait forever
            self._fail_items(items[queued:], err)
            raise
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
        if head.bug is not None:
            raise head.bug
        if head.error is not None:
            return Result(DNNAsyncStatusType.FAIL, head.payload, (), head.error, head.index)
        return Result(DNNAsyncStatusType.SUCCESS, head.payload, tuple(head.results), None, head.index)

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

    def _exit(self) -> ExitRequestedError:
        return ExitRequestedError(f"{self.name}: the run is stopping")

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
                "%s: %d inference request(s) still running after %.1fs; abandoned", self.name, self._busy, limit
            )
        else:
            for req in self._requests:
                if req.thread is not None:
                    req.thread.join(timeout=1.0)
                    req.thread = None
        if dropped:
            log.debug("%s: %d task(s) dropped at close", self.name, dropped)
        return idle

    # -- internals ------------------------------------------------------------------------

    def _take_pending(self, n: int) -> list[Item]:
        items, self._pending = self._pending[:n], self._pending[n:]
        return items

    def _acquire(self, n: int) -> tuple[Request, list[Item], int]:
        """A free request (waiting for one), the next ``n`` pending items and a batch number."""
        with self._cond:
            if not self._free:
                self.stats.blocked_submits += 1
                self._cond.wait_for(lambda: bool(self._free) or self._closed or self._interrupted)
            if self._interrupted:
                raise self._exit()
            if self._closed:
                raise InvalidArgumentError(f"{self.name}: closed while waiting for a free request")
            req = self._free.popleft()
            self._busy += 1
            stats = self.stats
            if self._busy > stats.max_busy:
                stats.max_busy = self._busy
            items = self._take_pending(n)
            for item in items:
                item.task.dispatched += 1  # type: ignore[union-attr]
            batch_no = stats.batches
            stats.batches += 1
            return req, items, batch_no

    def _release(self, req: Request) -> None:
        with self._cond:
            self._busy -= 1
            self._free.append(req)
            self._cond.notify_all()

    def _complete(self, item: Item, error: BaseException | None, result: Any = None) -> None:
        """Record one finished inference under the lock; the first error of a task is kept."""
        with self._cond:
            self._record(item, error, result)
            self._cond.notify_all()

    @staticmethod
    def _record(item: Item, error: BaseException | None, result: Any) -> None:
        """One completion; the caller holds the lock. ``error`` not an avdnn error: a bug, kept raw."""
        task = item.task
        assert task is not None
        task.done += 1
        item.finished = True
        if error is not None and not isinstance(error, AvdnnError):
            if task.bug is None:
                task.bug = error
        elif error is not None:
            if task.error is None:
                task.error = error.with_context(pts=getattr(task.payload, "pts", None))
        else:
            task.results[item.slot] = result

    def _fail_items(self, items: Sequence[Item], err: BaseException) -> None:
        for item in items:
            with self._cond:
                if item.task is not None:
                    item.task.dispatched += 1
            self._complete(item, err)

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

    def _fill(self, req: Request, items: list[Item]) -> tuple[np.ndarray, list[Item]]:
        """Pre-process items into the request buffer; an item whose fill fails fails alone."""
        first = items[0]
        batch = req.input_view(len(items), first.shape, first.dtype, self.batch_size, self.stats)
        kept: list[Item] = []
        for item in items:
            try:
                item.fill(batch[len(kept)])
            except BaseException as exc:
                err = as_error(exc, "pre-processing")
                if err is None:  # a bug: _dispatch completes every item with it and raises it
                    raise
                self._complete(item, err)  # stored on the task, reported by get_result
                continue
            kept.append(item)
        return (batch if len(kept) == len(items) else batch[: len(kept)]), kept

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

    def _run(self, req: Request, items: list[Item], batch: np.ndarray, batch_no: int) -> BaseException | None:
        """Run one request (inline or on its worker); never leaves an item incomplete.

        Returns the exception that is not an avdnn error (a bug, a KeyboardInterrupt), if any:
        the inline caller raises it; on a worker it waits on its task for get_result.
        """
        outputs: Sequence[np.ndarray] | None = None
        error: BaseException | None = None
        try:
            if self._faults_on:
                self.faults.hit("inference", batch_no)
            outputs = self.run_batch(batch)
        except BaseException as exc:  # noqa: BLE001 - stored on every task of the batch
            error = exc
        return self._finish(req, items, outputs, error, batch_no)

    def _finish(
        self,
        req: Request,
        items: list[Item],
        outputs: Sequence[np.ndarray] | None,
        error: BaseException | None,
        batch_no: int,
    ) -> BaseException | None:
        """Completion callback: post-process each item, then record every completion and free
        the request under one lock (one wake-up per batch, not per item). Returns the first
        exception that is not an avdnn error (recorded on its task as its bug)."""
        done: list[Outcome] = []
        try:
            self._outcomes(items, outputs, error, done)
        finally:
            self._settle(req, items, done)
        return next((e for _, e, _ in done if e is not None and not isinstance(e, AvdnnError)), None)

    def _outcomes(
        self,
        items: list[Item],
        outputs: Sequence[np.ndarray] | None,
        error: BaseException | None,
        done: list[Outcome],
    ) -> None:
        """Post-process each item of a batch run (or fail them all with its error), into ``done``."""
        err = failure(error, "inference") if error is not None else _check_outputs(outputs, len(items))
        if err is not None:
            done += [(item, err, None) for item in items]
            return
        assert outputs is not None
        single = len(items) == 1
        for k, item in enumerate(items):
            try:
                if self._faults_on:
                    task = item.task
                    assert task is not None
                    self.faults.hit("post_process", task.index, stream=task.stream)
                result = item.post(list(outputs) if single else [o[k : k + 1] for o in outputs])
            except BaseException as exc:  # noqa: BLE001 - stored on the task (a bug: re-raised from it)
                done.append((item, failure(exc, "post-processing"), None))
            else:
                done.append((item, None, result))

    def _settle(self, req: Request, items: list[Item], done: list[Outcome]) -> None:
        """Record every outcome and free the request under one lock (one wake-up per batch);
        an item an unexpected failure left without an outcome completes with an error."""
        if len(done) < len(items):
            late = ExternalError(f"{self.name}: request {req.index} ended before post-processing")
            seen = {id(item) for item, _, _ in done}
            done += [(item, late, None) for item in items if id(item) not in seen]
        with self._cond:
            for item, err_, result in done:
                self._record(item, err_, result)
            self._busy -= 1
            self._free.append(req)
            self._cond.notify_all()


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


def _stop_workers(requests: Sequence[Request]) -> None:
    for req in requests:
        if req.inbox is not None:
            req.inbox.put(None)
            req.inbox = None


def _check_outputs(outputs: Sequence[np.ndarray] | None, n: int) -> AvdnnError | None:
    if outputs is None or len(outputs) == 0:
        return ExternalError("inference returned no outputs")
    for i, out in enumerate(outputs):
        if not isinstance(out, np.ndarray) or out.ndim == 0 or out.shape[0] != n:
            shape = getattr(out, "shape", type(out).__name__)
            return ExternalError(f"output {i} has shape {shape}; expected {n} item(s) on the first axis")
    return None
