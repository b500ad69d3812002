"""Test-only fault injection for the DNN engine (the seeds' fault table as switches).

Four points, each hit by the engine at the place FFmpeg's code can fail:

=================  =====================================================================
``worker_start``   starting an async worker for a request (FFmpeg's ``pthread_create``);
                   raise ``OSError(errno)`` as the thread library would. ``in_flush``
                   restricts it to the start made by ``flush`` (the partial last batch).
``inference``      inside the run of one batch (on the worker thread when async);
                   ``at`` counts batches from 0.
``post_process``   converting one task's output (io_proc / detect / classify);
                   ``at`` is the task index (frames from 0).
``flush``          the flush itself, before the partial batch is dispatched.
=================  =====================================================================

``stream=LABEL`` scopes a fault to one client of a shared model instance
(:mod:`avdnn.dnn.shared`; the label is the filter's): ``at`` then counts that stream's tasks
(frames from 0), also for ``inference``, where it fails every run of a batch that holds that
stream's task ``at`` (a mixed batch, and that stream's own rerun). A fault without ``stream``
keeps the meaning above; an ``inference`` fault without it counts the batches of its engine.

Use :func:`inject` in tests (a context manager; engines created inside it see the plan),
or set ``AVDNN_DNN_FAULTS`` for a subprocess (the CLI), e.g.
``worker_start:errno=EAGAIN:in_flush=1`` or ``post_process:at=3,flush:errno=EIO``. The
variable is read only under the test switch ``AVDNN_TEST_FAULTS=1`` (the test suite's conftest
sets it): a variable left in a production environment must not make real runs fail, so without
the switch it is ignored with one warning. Nothing here is active unless one of the two is used.
"""

from __future__ import annotations

import errno as _errno
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from avdnn.errors import ExternalError, InvalidArgumentError, from_errno

POINTS = ("worker_start", "inference", "post_process", "flush")
ENV = "AVDNN_DNN_FAULTS"
#: The explicit test switch: ``$AVDNN_DNN_FAULTS`` is read only when this is "1".
SWITCH = "AVDNN_TEST_FAULTS"

log = logging.getLogger("avdnn.dnn")


@dataclass(frozen=True)
class Fault:
    """One injected failure; ``at=None`` fires on every hit of the point."""

    point: str
    errno: int | None = None
    error: BaseException | None = None
    at: int | None = None
    in_flush: bool = False
    stream: str | None = None

    def __post_init__(self) -> None:
        if self.point not in POINTS:
            raise InvalidArgumentError(f"unknown fault point '{self.point}' (known: {', '.join(POINTS)})")

    def exception(self) -> BaseException:
        if self.point == "worker_start":
            return OSError(self.errno or _errno.EAGAIN, os.strerror(self.errno or _errno.EAGAIN))
        if self.error is not None:
            return self.error
        if self.errno is not None:
            return from_errno(self.errno, f"injected {self.point} failure: {os.strerror(self.errno)}")
        return ExternalError(f"injected {self.point} failure")


class FaultPlan:
    """The faults one engine checks; counts hits so tests can assert a fault really fired."""

    def __init__(self, faults: tuple[Fault, ...] = ()) -> None:
        self.faults = faults
        self.fired: dict[str, int] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self.faults)

    def hit(self, point: str, index: int = 0, *, in_flush: bool = False, stream: str | None = None) -> None:
        """Raise the injected failure if a fault matches this hit of ``point``.

        ``stream`` names the shared instance's client the hit is for: a stream-scoped fault
        matches only its own stream's hits; an unscoped one matches any hit, except that
        the per-stream ``inference`` hits (``index`` a task's, not a batch number) are only
        for scoped faults.
        """
        for fault in self.faults:
            if fault.point != point or (fault.at is not None and fault.at != index):
                continue
            if fault.stream != stream and (fault.stream is not None or point == "inference"):
                continue
            if fault.in_flush and not in_flush:
                continue
            with self._lock:
                self.fired[point] = self.fired.get(point, 0) + 1
            raise fault.exception()


_active: list[Fault] = []
_active_lock = threading.Lock()


@contextmanager
def inject(*faults: Fault) -> Iterator[FaultPlan]:
    """Engines created inside the block get these faults (test-only)."""
    with _active_lock:
        _active.extend(faults)
    try:
        yield FaultPlan(tuple(faults))
    finally:
        with _active_lock:
            for f in faults:
                _active.remove(f)


_ignored_warned = False


def current_plan() -> FaultPlan:
    """The plan a new engine uses: :func:`inject`'s faults plus ``$AVDNN_DNN_FAULTS`` (under the test switch)."""
    global _ignored_warned
    with _active_lock:
        faults = list(_active)
        text = os.environ.get(ENV, "")
        if text and os.environ.get(SWITCH) != "1":
            if not _ignored_warned:
                _ignored_warned = True
                log.warning("$%s is ignored: fault injection is a test switch (set %s=1 in a test run)", ENV, SWITCH)
            text = ""
    faults += parse_env(text)
    return FaultPlan(tuple(faults))


def parse_env(text: str) -> list[Fault]:
    """``point[:key=value]...`` items separated by commas; errno by name or number."""
    out = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        point, *pairs = item.split(":")
        kw: dict[str, object] = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            if key == "errno":
                kw["errno"] = int(value) if value.isdigit() else getattr(_errno, value)
            elif key == "at":
                kw["at"] = int(value)
            elif key == "in_flush":
                kw["in_flush"] = value not in ("0", "false", "")
            elif key == "stream":
                kw["stream"] = value
            else:
                raise InvalidArgumentError(f"{ENV}: unknown key '{key}' in '{item}'")
        out.append(Fault(point, **kw))  # type: ignore[arg-type]
    return out
