"""One engine serving several streams: batches across streams, a fill deadline, per-stream order.

A shared model instance (:mod:`avdnn.dnn.shared.instance`) runs the inferences of every filter that
names it through one :class:`SharedEngine`. It is the :class:`~avdnn.dnn.engine.Engine` (the
same requests, buffers, workers, completion and close) with what sharing changes:

* each filter is a :class:`Client` with its own task queue: ``get_result_for`` answers that
  stream's tasks in that stream's submission order, whatever the others do;
* pending inferences are grouped by (shape, dtype), one group per input geometry, so streams
  of different sizes batch among themselves instead of breaking each other's batches;
* a group that reaches ``batch_size`` is dispatched by the thread that filled it (which then
  blocks while every request is busy: memory stays bounded); a partial group is dispatched by
  one timer thread once its oldest item has waited ``batch_timeout`` (a condition wait with a
  deadline, never a sleep loop), so a slow or ended stream never holds back the others;
* ``flush_for`` dispatches that stream's pending items at once and ends only that stream;
  ``interrupt_for`` stops only that stream's waits: the backend is never cancelled for one;
* a batch that fails as a whole (the backend's run raised an avdnn error) is rerun stream by
  stream, and a failing stream's part item by item, so only the failing frame gets the error
  (a filter's own engine keeps FFmpeg's rule: every task of a failed batch fails). Native
  async backends (OpenVINO's callbacks) run on the engine's workers: the rerun needs them.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from avdnn.dnn.batching import Outcome, RunBatch
from avdnn.dnn.config import DEFAULT_BATCH_TIMEOUT, EngineOptions
from avdnn.dnn.engine import Engine
from avdnn.dnn.interface import DNNAsyncStatusType
from avdnn.dnn.tasks import Item, Request, Result, RunTimes, Task, as_error, failure
from avdnn.errors import AvdnnError, ExitRequestedError, InvalidArgumentError

log = logging.getLogger("avdnn.dnn")

GroupKey = tuple[tuple[int, ...], np.dtype]


class Client:
    """One stream's side of a shared engine: its tasks in its order, its counters, its stop flag."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tasks: deque[Task] = deque()
        self.next_index = 0
        self.interrupted = False
        self.closed = False
        #: inferences (items) this stream submitted, and its tasks that came back FAIL
        self.inferences = 0
        self.failures = 0


class _Group:
    """Pending items of one input geometry, with the time each arrived."""

    __slots__ = ("arrivals", "items")

    def __init__(self) -> None:
        self.items: deque[Item] = deque()
        self.arrivals: deque[float] = deque()


class SharedEngine(Engine):
    """The engine of a shared model instance; streams use the ``*_for`` methods with their Client."""

    def __init__(
        self, run_batch: RunBatch, options: EngineOptions, *, batch_timeout: float = DEFAULT_BATCH_TIMEOUT
    ) -> None:
        super().__init__(run_batch, options)
        lock = threading.Lock()
        self._cond = threading.Condition(lock)
        self._timer_cond = threading.Condition(lock)  # the timer waits here, not on every completion
        self.batch_timeout = batch_timeout
        self._groups: dict[GroupKey, _Group] = {}
        self._clients: list[Client] = []
        self._timer: threading.Thread | None = None
        #: batches the backend ran and their items (counted with their run's time, under one lock,
        #: so any reading has a time for each; reruns not counted again), batches rerun per stream,
        #: and batches holding items of more than one stream
        self.batches = 0
        self.inferences = 0
        self.reruns = 0
        self.mixed = 0
        #: batches run, by their size: ``sizes[n]`` batches of n items (index 0 unused)
        self.sizes = [0] * (self.batch_size + 1)

    def counters(self) -> tuple[int, int, int, int, RunTimes, tuple[int, ...]]:
        """(inferences, batches, reruns, mixed batches, their run times, batches by size: element
        ``n - 1`` counts the batches of ``n`` items), read together."""
        with self._cond:
            times = RunTimes(list(self.stats.run_times.counts), self.stats.run_times.total)
            return self.inferences, self.batches, self.reruns, self.mixed, times, tuple(self.sizes[1:])

    def _ran(self, items: list[Item]) -> None:
        """A batch of ``items`` ran (under the lock, with its time)."""
        self.batches += 1
        self.inferences += len(items)
        self.sizes[len(items)] += 1
        if len({item.task.stream for item in items if item.task is not None}) > 1:
            self.mixed += 1

    # -- clients --------------------------------------------------------------------------

    def attach(self, label: str) -> Client:
        """A new stream; its label must be unique on this engine (the caller makes it so)."""
        client = Client(label)
        with self._cond:
            if self._closed:
                raise InvalidArgumentError(f"{self.name}: attach after close")
            self._clients.append(client)
        return client

    def detach(self, client: Client) -> None:
        """The stream is done: its pending items and unread tasks are dropped (others' stay)."""
        with self._cond:
            client.closed = True
            self._drop(lambda i: _owned(i, client))
            client.tasks.clear()
            if client in self._clients:
                self._clients.remove(client)
            self._cond.notify_all()

    # -- FFmpeg's execute / get_result / flush, per stream ---------------------------------

    def submit_for(self, client: Client, payload: Any, items: Sequence[Item]) -> Task:
        """Queue one task of ``client``; dispatch the groups it filled (blocking while every
        request is busy). Raises the error of a batch it could not start."""
        full: list[GroupKey] = []
        with self._cond:
            if self._closed or client.closed:
                raise InvalidArgumentError(f"{client.label}: execute after close")
            if client.interrupted:
                raise self._exit_for(client)
            task = Task(payload, client.next_index, todo=len(items), results=[None] * len(items), stream=client.label)
            client.next_index += 1
            client.tasks.append(task)
            client.inferences += len(items)
            self.stats.tasks += 1
            now = time.monotonic() if items else 0.0
            for slot, item in enumerate(items):
                item.task, item.slot = task, slot
                key = (item.shape, item.dtype)
                group = self._groups.get(key)
                if group is None:
                    group = self._groups[key] = _Group()
                    self._timer_cond.notify()
                group.items.append(item)
                group.arrivals.append(now)
                if len(group.items) >= self.batch_size and key not in full:
                    full.append(key)
            if self._groups and self._timer is None and self.batch_size > 1:
                self._timer = threading.Thread(target=self._time_batches, name=f"{self.name}-batcher", daemon=True)
                self._timer.start()
        for key in full:
            while self._group_size(key) >= self.batch_size:
                self._dispatch_quietly(key, client)
        return task

    def get_result_for(self, client: Client, wait: bool = False, timeout: float | None = None) -> Result:
        """``client``'s oldest task, in its submission order (Engine.get_result's statuses).

        With ``wait`` this also waits for items still pending: the timer dispatches them
        within ``batch_timeout``.
        """
        with self._cond:
            if client.interrupted:
                raise self._exit_for(client)
            if not client.tasks:
                return Result(DNNAsyncStatusType.EMPTY_QUEUE)
            head = client.tasks[0]
            if not head.complete and wait:
                self._cond.wait_for(
                    lambda: head.complete or self._closed or client.closed or client.interrupted, timeout
                )
                if client.interrupted:
                    raise self._exit_for(client)
            if not head.complete:
                return Result(DNNAsyncStatusType.NOT_READY)
            client.tasks.popleft()
            if head.error is not None or head.bug is not None:
                client.failures += 1
        return head.result()

    def queued_for(self, client: Client) -> int:
        """Tasks of ``client`` submitted and not yet taken by get_result_for."""
        with self._cond:
            return len(client.tasks)

    def flush_for(self, client: Client) -> None:
        """End of ``client``'s stream: dispatch its pending items now; raise a batch's real error."""
        try:
            if self._faults_on:
                self.faults.hit("flush", stream=client.label)
        except BaseException as exc:  # its items still pending must not wait forever
            err = failure(exc, "flush")
            self._fail_items(self._take_own(client), err)
            if err is exc:
                raise
            raise err from exc
        while (key := self._own_group(client)) is not None:
            self._dispatch_quietly(key, client, in_flush=True)

    def interrupt_for(self, client: Client) -> None:
        """``client``'s output is stopping: its waits raise ExitRequestedError; the others run on."""
        with self._cond:
            client.interrupted = True
            self._cond.notify_all()

    def close(self, timeout: float | None = None) -> bool:
        """Engine.close, after dropping every stream's pending items and unread tasks."""
        with self._cond:
            self._closed = True
            self._groups.clear()
            for client in self._clients:
                client.tasks.clear()
            self._timer_cond.notify_all()
        idle = super().close(timeout)
        timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join(timeout=1.0)
        return idle

    # -- dispatch -------------------------------------------------------------------------

    def _exit_for(self, client: Client) -> ExitRequestedError:
        return self._exit(client.label)

    def _group_size(self, key: GroupKey) -> int:
        with self._cond:
            group = self._groups.get(key)
            return 0 if group is None else len(group.items)

    def _own_group(self, client: Client) -> GroupKey | None:
        with self._cond:
            for key, group in self._groups.items():
                if any(_owned(item, client) for item in group.items):
                    return key
            return None

    def _take_own(self, client: Client) -> list[Item]:
        with self._cond:
            own = [item for group in self._groups.values() for item in group.items if _owned(item, client)]
        if own:
            self.detach_items(own)
        return own

    def detach_items(self, items: list[Item]) -> None:
        """Take these items out of their pending groups (they are failed by the caller)."""
        ids = {id(item) for item in items}
        with self._cond:
            self._drop(lambda i: id(i) in ids)

    def _drop(self, gone: Callable[[Item], bool]) -> None:
        """Take the pending items ``gone`` picks out of their groups (the lock held)."""
        for key, group in list(self._groups.items()):
            kept = [(i, t) for i, t in zip(group.items, group.arrivals, strict=True) if not gone(i)]
            if len(kept) != len(group.items):
                group.items = deque(i for i, _ in kept)
                group.arrivals = deque(t for _, t in kept)
                if not kept:
                    del self._groups[key]

    def _dispatch_quietly(self, key: GroupKey, client: Client | None, *, in_flush: bool = False) -> None:
        """Dispatch one batch of group ``key``; an avdnn error goes to the caller, a bug stays
        on its tasks (for their own streams' get_result) unless it is an interrupt."""
        try:
            self._dispatch_group(key, client, in_flush=in_flush)
        except AvdnnError:
            if client is None:
                return  # the timer: the batch's items carry the error to their streams
            raise
        except Exception:  # recorded on every task of the batch, raised by their streams' get_result
            log.debug("%s: a batch failed with a bug; its streams raise it", self.name, exc_info=True)

    def _dispatch_group(self, key: GroupKey, client: Client | None, *, in_flush: bool = False) -> None:
        """A free request (waiting for one), up to ``batch_size`` items of group ``key``, started."""
        with self._cond:
            self._await_request(
                lambda: client is not None and client.interrupted, client.label if client is not None else None
            )
            group = self._groups.get(key)
            if group is None:
                return  # another thread took these items
            n = min(len(group.items), self.batch_size)
            items = [group.items.popleft() for _ in range(n)]
            for _ in range(n):
                group.arrivals.popleft()
            if not group.items:
                del self._groups[key]
            req, batch_no = self._bind(items)
        self._launch(req, items, batch_no, in_flush=in_flush)

    def _time_batches(self) -> None:
        """The timer thread: dispatch each partial group once its oldest item has waited enough."""
        while True:
            with self._cond:
                due: GroupKey | None = None
                while not self._closed:
                    now = time.monotonic()
                    deadline = None
                    for key, group in self._groups.items():
                        at = group.arrivals[0] + self.batch_timeout
                        if at <= now:
                            due = key
                            break
                        deadline = at if deadline is None else min(deadline, at)
                    if due is not None:
                        break
                    self._timer_cond.wait(None if deadline is None else deadline - now)
                if self._closed or due is None:
                    return
            self._dispatch_quietly(due, None)

    # -- running a batch: the per-stream rerun --------------------------------------------

    def _run(self, req: Request, items: list[Item], batch: np.ndarray, batch_no: int) -> BaseException | None:
        outputs, error = self._infer(items, batch, batch_no, ran=functools.partial(self._ran, items))
        if error is not None and len(items) > 1 and as_error(error, "inference") is not None:
            return self._rerun(req, items, batch, batch_no)
        return self._finish(req, items, outputs, error, batch_no)

    def _infer(
        self, items: list[Item], batch: np.ndarray, batch_no: int, ran: Callable[[], None] | None = None
    ) -> tuple[Sequence[np.ndarray] | None, BaseException | None]:
        try:
            if self._faults_on:
                self.faults.hit("inference", batch_no)
                for item in items:
                    task = item.task
                    assert task is not None
                    self.faults.hit("inference", task.index, stream=task.stream)
            return self._run_backend(batch, ran), None
        except BaseException as exc:  # noqa: BLE001 - stored on the tasks of the batch
            return None, exc

    def _rerun(self, req: Request, items: list[Item], batch: np.ndarray, batch_no: int) -> BaseException | None:
        """A batch failed as a whole: rerun each stream's items on their own, and the items of a
        stream whose part fails again one by one, so exactly the failing frames fail (a stream
        never loses a frame to another stream's, nor to a neighbour in its own batch)."""
        parts: dict[str | None, list[int]] = {}
        for k, item in enumerate(items):
            parts.setdefault(item.task.stream if item.task is not None else None, []).append(k)
        with self._cond:
            self.reruns += 1
        log.debug("%s: batch %d (%d streams) failed; rerunning", self.name, batch_no, len(parts))
        done: list[Outcome] = []
        try:
            for index in parts.values():
                if len(parts) == 1 or len(index) == 1:  # the whole batch, or a single item: it failed already
                    for k in index:
                        self._rerun_one(items, batch, [k], batch_no, done)
                    continue
                own = [items[k] for k in index]
                outputs, error = self._infer(own, batch[index], batch_no)
                if error is not None and as_error(error, "inference") is not None:
                    for k in index:
                        self._rerun_one(items, batch, [k], batch_no, done)
                else:
                    self._outcomes(own, outputs, error, done)
        finally:
            self._settle(req, items, done)
        return next((e for _, e, _ in done if e is not None and not isinstance(e, AvdnnError)), None)

    def _rerun_one(
        self, items: list[Item], batch: np.ndarray, index: list[int], batch_no: int, done: list[Outcome]
    ) -> None:
        own = [items[k] for k in index]
        outputs, error = self._infer(own, batch[index], batch_no)
        self._outcomes(own, outputs, error, done)


def _owned(item: Item, client: Client) -> bool:
    return item.task is not None and item.task.stream == client.label
