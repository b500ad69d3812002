"""The engine's units of work: tasks, inferences (lltasks), requests, results, counters.

FFmpeg's TaskItem / LastLevelTaskItem / request items, as plain Python objects. Only the
engine (:mod:`avdnn.dnn.engine`, :mod:`avdnn.dnn.batching`) mutates them, under its lock;
filters see :class:`Result`. Also here: how a failure of a runtime, a post-processing step or
a worker start becomes an avdnn error with FFmpeg's code.
"""

from __future__ import annotations

import errno as _errno
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from avdnn._util.cores import usable_cores
from avdnn.dnn.interface import DNNAsyncStatusType
from avdnn.errors import AvdnnError, ExternalError, OutOfMemoryError, from_errno


def auto_nireq() -> int:
    """FFmpeg's ``nireq=0``: CPU count / 2 + 1, counting the cores this process may use."""
    return usable_cores() // 2 + 1


def as_error(exc: BaseException, what: str) -> AvdnnError | None:
    """The avdnn error a failed step reports as its task's failure; None when it is none of ours.

    Backends translate their runtime's own exceptions at their seam, so what else arrives here
    is a bug in avdnn or a KeyboardInterrupt: the engine hands those back to the caller as they
    were raised (type and traceback), never as a failed frame.
    """
    if isinstance(exc, AvdnnError):
        return exc
    if isinstance(exc, MemoryError):
        err = OutOfMemoryError(f"{what}: out of memory")
        err.__cause__ = exc
        return err
    return None


def failure(exc: BaseException, what: str) -> BaseException:
    """What a task records for ``exc``: its avdnn error, or the exception itself (a bug)."""
    return as_error(exc, what) or exc


def worker_start_error(exc: BaseException) -> AvdnnError:
    """A worker that could not start, as FFmpeg's fixed ff_dnn_start_inference_async returns it.

    EAGAIN becomes AVERROR_EXTERNAL because AVERROR(EAGAIN) means "try again" to a graph and
    would be lost at EOF; any other errno becomes AVERROR(errno). Python's own thread-start
    failure (RuntimeError, no errno) is pthread's EAGAIN.
    """
    err = getattr(exc, "errno", None)
    if not isinstance(err, int) or err <= 0:
        err = _errno.EAGAIN
    text = f"Unable to start async inference: {os.strerror(err)}"
    out = ExternalError(text) if err == _errno.EAGAIN else from_errno(err, text)
    out.__cause__ = exc
    return out


@dataclass(eq=False)
class Task:
    """One submitted unit (a frame): its inferences, completion count and first error."""

    payload: Any
    index: int
    todo: int = 0
    done: int = 0
    dispatched: int = 0
    error: AvdnnError | None = None
    #: the first exception that is not an avdnn error (a bug, an interrupt): re-raised, not reported
    bug: BaseException | None = None
    results: list[Any] = field(default_factory=list)
    #: the stream (client filter) of a shared instance's task, None for a filter's own engine
    stream: str | None = None

    @property
    def complete(self) -> bool:
        return self.done >= self.todo

    def result(self) -> Result:
        """What get_result answers for this complete task: SUCCESS, or FAIL with its first
        error; a bug (an exception that is not an avdnn error) is raised as it was."""
        if self.bug is not None:
            raise self.bug
        if self.error is not None:
            return Result(DNNAsyncStatusType.FAIL, self.payload, (), self.error, self.index)
        return Result(DNNAsyncStatusType.SUCCESS, self.payload, tuple(self.results), None, self.index)


@dataclass(eq=False)
class Item:
    """One inference of a task (FFmpeg's lltask).

    ``fill(dst)`` writes the input into ``dst`` (shape ``shape``, dtype ``dtype``) on the
    submitting thread; ``post(outputs)`` turns this item's slice of the outputs (first axis
    1) into its result, on the thread that ran the request.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill: Callable[[np.ndarray], None]
    post: Callable[[list[np.ndarray]], Any]
    task: Task | None = None
    slot: int = 0
    #: set when its completion is recorded (so an early exit completes only the others)
    finished: bool = False


@dataclass(frozen=True)
class Result:
    """What get_result answers: a status, and for SUCCESS/FAIL the task's payload."""

    status: DNNAsyncStatusType
    payload: Any = None
    results: tuple[Any, ...] = ()
    error: AvdnnError | None = None
    index: int = -1


#: upper edges (seconds) of the inference-time buckets: one backend run of one batch
RUN_TIME_EDGES = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class RunTimes:
    """How long the backend took to run each batch: a histogram over :data:`RUN_TIME_EDGES`."""

    #: batches per bucket: ``counts[i]`` took at most ``RUN_TIME_EDGES[i]`` (and more than the edge
    #: before); the last entry counts those above every edge
    counts: list[int] = field(default_factory=lambda: [0] * (len(RUN_TIME_EDGES) + 1))
    total: float = 0.0

    def add(self, seconds: float) -> None:
        k = next((i for i, edge in enumerate(RUN_TIME_EDGES) if seconds <= edge), len(RUN_TIME_EDGES))
        self.counts[k] += 1
        self.total += seconds

    def cumulative(self) -> list[int]:
        """Batches at most each edge, then all of them (a Prometheus histogram's buckets)."""
        out, seen = [], 0
        for n in self.counts:
            seen += n
            out.append(seen)
        return out


@dataclass
class EngineStats:
    """Counters tests and benchmarks read; updated under the engine lock."""

    tasks: int = 0
    batches: int = 0
    worker_starts: int = 0
    buffer_allocations: int = 0
    buffer_grows: int = 0
    buffer_bytes: int = 0
    max_busy: int = 0
    blocked_submits: int = 0
    #: the backend's time per batch run (a natively async backend's own requests are not timed)
    run_times: RunTimes = field(default_factory=RunTimes)


class Request:
    """A reusable inference slot: its grow-only input buffer and its persistent worker.

    ``thread`` and ``inbox`` are set by the engine at the slot's first async hand-off and kept
    until close (one thread per slot, not one per batch).
    """

    def __init__(self, index: int) -> None:
        self.index = index
        self.buffer: np.ndarray | None = None
        self.grows = 0
        self.thread: threading.Thread | None = None
        self.inbox: queue.SimpleQueue[Any] | None = None
        self._view_key: tuple[Any, ...] | None = None
        self._view: np.ndarray | None = None

    def free(self) -> None:
        """Drop the buffer (close)."""
        self.buffer = None
        self._view_key = self._view = None

    def input_view(
        self, n: int, shape: tuple[int, ...], dtype: np.dtype, capacity: int, stats: EngineStats
    ) -> np.ndarray:
        """A view of this request's buffer for ``n`` items; grows (never shrinks) when needed.

        The view of the last (n, shape, dtype) is kept, so a steady stream builds none.
        """
        key = (n, shape, dtype)
        if key == self._view_key and self.buffer is not None:
            return self._view  # type: ignore[return-value]
        item_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        need = item_bytes * n
        if self.buffer is None or self.buffer.nbytes < need:
            if self.buffer is not None:
                self.grows += 1
                stats.buffer_grows += 1
                stats.buffer_bytes -= self.buffer.nbytes
            size = max(need, item_bytes * capacity)
            self.buffer = np.empty(size, dtype=np.uint8)
            stats.buffer_allocations += 1
            stats.buffer_bytes += size
        view = self.buffer[:need].view(dtype).reshape((n, *shape))
        self._view_key, self._view = key, view
        return view
