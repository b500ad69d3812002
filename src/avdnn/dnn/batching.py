"""Batching: lltasks packed into batches of ``batch_size``, a batch run, its tasks completed.

The half of the engine that knows what a batch is; which request runs it, on which thread and
when its results leave is the scheduler's (:class:`~avdnn.dnn.engine.Engine`, built on this).

* pending inferences (:class:`~avdnn.dnn.tasks.Item`, FFmpeg's lltask) are packed only with
  items of the same shape and dtype, so a resolution change just starts a new batch; a full
  batch is handed to the scheduler at once, the partial last one at flush;
* a batch is filled into its request's grow-only buffer on the submitting thread (an item
  whose pre-processing fails fails alone), run by one call of the backend's ``run`` and each
  item post-processed from its slice of the outputs;
* completion is recorded under the engine's lock with a per-task status keeping the first
  error, in one wake-up per batch; every exit path of a batch completes all of its items,
  so no task waits forever. An exception that is not an avdnn error (a bug, a Ctrl-C) is kept
  raw on its task and raised as it was, never reported as a failed frame.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from avdnn.dnn.config import EngineOptions
from avdnn.dnn.faults import current_plan
from avdnn.dnn.tasks import EngineStats, Item, Request, as_error, failure
from avdnn.errors import AvdnnError, ExternalError

__all__ = ["Batcher", "Outcome", "RunBatch"]

#: the backend's run of one batch: the input batch in, its outputs (first axis: the items) out
RunBatch = Callable[[np.ndarray], Sequence[np.ndarray]]
#: one item's completion: the item, its error (None on success) and its result
Outcome = tuple[Item, BaseException | None, Any]


class Batcher(ABC):
    """Pending items, their batches and their completion; the scheduler supplies the requests.

    A subclass decides which request runs a batch (:meth:`_dispatch`) and takes a request
    back when its batch is done (:meth:`_put_back`); everything here runs under ``_cond``'s
    lock where it touches tasks.
    """

    def __init__(self, run_batch: RunBatch, options: EngineOptions) -> None:
        self.run_batch = run_batch
        self.batch_size = options.batch_size
        self.name = options.name
        self.faults = options.faults if options.faults is not None else current_plan()
        self._faults_on = bool(self.faults)
        self.stats = EngineStats()
        self._cond = threading.Condition(threading.Lock())
        self._pending: list[Item] = []

    # -- what the scheduler supplies ------------------------------------------------------

    @abstractmethod
    def _dispatch(self, n: int, *, in_flush: bool = False) -> None:
        """Run the next ``n`` pending items as one batch on a free request (waiting for one)."""

    @abstractmethod
    def _put_back(self, req: Request) -> None:
        """``req`` ran its batch and is free again; the caller holds the lock."""

    @abstractmethod
    def _after_put_back(self) -> None:
        """Called after :meth:`_put_back`, the lock released (the scheduler's idle work runs here)."""

    # -- grouping -------------------------------------------------------------------------

    def _queue(self, items: Sequence[Item]) -> None:
        """Add a task's items to the pending batch, dispatching each batch they fill (or end)."""
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

    def _take_pending(self, n: int) -> list[Item]:
        items, self._pending = self._pending[:n], self._pending[n:]
        return items

    # -- running a batch ------------------------------------------------------------------

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
                if err is None:  # a bug: the scheduler completes every item with it and raises it
                    raise
                self._complete(item, err)  # stored on the task, reported by get_result
                continue
            kept.append(item)
        return (batch if len(kept) == len(items) else batch[: len(kept)]), kept

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
            outputs = self._run_backend(batch)
        except BaseException as exc:  # noqa: BLE001 - stored on every task of the batch
            error = exc
        return self._finish(req, items, outputs, error, batch_no)

    def _run_backend(self, batch: np.ndarray, ran: Callable[[], None] | None = None) -> Sequence[np.ndarray]:
        """The backend's run of one batch, timed (``stats.run_times``: one clock read per batch);
        ``ran`` counts it under the same lock, so that a count read at any moment has its time."""
        started = time.perf_counter()
        try:
            return self.run_batch(batch)
        finally:
            elapsed = time.perf_counter() - started
            with self._cond:
                self.stats.run_times.add(elapsed)
                if ran is not None:
                    ran()

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

    # -- completing its tasks -------------------------------------------------------------

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
            self._put_back(req)
            self._cond.notify_all()
        self._after_put_back()

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


def _check_outputs(outputs: Sequence[np.ndarray] | None, n: int) -> AvdnnError | None:
    if outputs is None or len(outputs) == 0:
        return ExternalError("inference returned no outputs")
    for i, out in enumerate(outputs):
        if not isinstance(out, np.ndarray) or out.ndim == 0 or out.shape[0] != n:
            shape = getattr(out, "shape", type(out).__name__)
            return ExternalError(f"output {i} has shape {shape}; expected {n} item(s) on the first axis")
    return None
