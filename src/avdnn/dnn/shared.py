"""Model instances shared across streams: ``model_instance=NAME`` (DL Streamer's model-instance-id).

DNN filters in different chains of one run (or of one process) that name the same instance
share one loaded backend model and one :class:`~avdnn.dnn.shared_engine.SharedEngine`, which
batches their inferences together and hands each filter back its own results in its own
order. Their model options must agree: the first filter loads the instance, a later one whose
model, backend, input/outputs, backend options, device, nireq, batch_size, async or
batch_timeout differ (or whose function type does: dnn_detect and dnn_classify cannot share)
is refused, naming both filters and the option.

Instances live in an :class:`InstanceScope`: a multi-stream run opens one around building and
running its pipelines (filters built on a thread that entered the scope register in it); a
thread with no scope open uses the process-wide default scope, so two API users' threads can
share too. An instance is reference-counted by its filters and closed when the last one
closes (or when its scope ends). The scope's :meth:`~InstanceScope.reports` feed the end-of-run
summary: ``model_instance det: 4 streams, 1200 inferences in 310 batches (3.87 per batch)``.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from .faults import FaultPlan
from .interface import Backend, Cancellable, DNNFunctionType
from .keep import Release
from .model import DnnConfig, DnnModel, load_backend
from .shared_engine import Client, SharedEngine
from .tasks import Item, Result, Task

__all__ = [
    "InstanceReport",
    "InstanceScope",
    "SharedInstance",
    "SharedModel",
    "attach",
    "current_scope",
    "default_scope",
    "format_report",
]

log = logging.getLogger("avdnn.dnn")

#: DnnConfig fields that must agree between the filters of one instance, by their option names
_AGREE = (
    ("model", "model"),
    ("backend", "dnn_backend"),
    ("input", "input"),
    ("outputs", "output"),
    ("async_mode", "async"),
    ("nireq", "nireq"),
    ("batch_size", "batch_size"),
    ("device", "device"),
    ("device_id", "device_id"),
    ("batch_timeout", "batch_timeout"),
)


@dataclass(frozen=True)
class InstanceReport:
    """What one shared instance did: the streams it served and how well their batches filled."""

    name: str
    #: the labels of the filters (streams) it served, in the order they attached
    streams: tuple[str, ...]
    inferences: int
    batches: int
    #: tasks (frames) that came back failed, all streams together
    failures: int
    #: batches mixing streams that failed as a whole and were rerun stream by stream
    reruns: int = 0

    @property
    def mean_batch(self) -> float:
        return self.inferences / self.batches if self.batches else 0.0

    def line(self) -> str:
        """``model_instance det: 4 streams, 1200 inferences in 310 batches (3.87 per batch)``."""
        return format_report(self)


def format_report(report: InstanceReport, *, labels: bool = False) -> str:
    """The summary line of one instance; ``labels`` appends the streams' labels."""
    n = len(report.streams)
    text = (
        f"model_instance {report.name}: {n} stream{'' if n == 1 else 's'}, "
        f"{report.inferences} inference{'' if report.inferences == 1 else 's'} in "
        f"{report.batches} batch{'' if report.batches == 1 else 'es'}"
    )
    if report.batches:
        text += f" ({report.mean_batch:.2f} per batch)"
    if report.failures:
        text += f", {report.failures} failed"
    if labels and report.streams:
        text += f" [{', '.join(report.streams)}]"
    return text


class SharedInstance:
    """One loaded model and its shared engine, reference-counted by the filters using it."""

    def __init__(
        self,
        name: str,
        config: DnnConfig,
        func_type: DNNFunctionType,
        *,
        label: str,
        backend: type[Backend] | None = None,
        faults: FaultPlan | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.func_type = func_type
        self.first = label
        self.backend_cls = backend
        self.backend, self._release = load_backend(config, func_type, backend)
        self.io = self.backend.describe()
        async_mode = config.async_mode
        if async_mode and not getattr(self.backend, "supports_async", True):
            log.warning("model_instance %s: Async not supported. Rolling back to sync", name)
            async_mode = False
        try:
            self.engine = SharedEngine(
                self.backend.run,
                nireq=config.nireq,
                batch_size=config.batch_size,
                async_mode=async_mode,
                batch_timeout=config.batch_timeout,
                name=f"model_instance {name}",
                faults=faults,
            )
        except BaseException:
            self.backend.close()
            raise
        self.lock = threading.Lock()
        #: get_output's trial-inference cache, for every filter of the instance
        self.output_sizes: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self.labels: list[str] = []
        self._clients: list[Client] = []
        self.refs = 0
        #: no filter may attach any more (set under ``lock``); the engine and model are freed once
        self.closed = False
        self._shut_down = False
        #: the report at close; ``on_closed`` lets the scope keep only that from then on
        self.final: InstanceReport | None = None
        self.on_closed: Callable[[SharedInstance], None] | None = None

    def check(self, config: DnnConfig, func_type: DNNFunctionType, label: str, backend: type[Backend] | None) -> None:
        """Refuse a filter whose model options differ from the first one's (naming both)."""
        head = f"model_instance '{self.name}': {label}"
        if func_type != self.func_type:
            raise InvalidArgumentError(
                f"{head} is a {_kind(func_type)} filter but {self.first} loaded the instance for "
                f"{_kind(self.func_type)}; filters sharing an instance must run the same function",
                filter=label,
                option="model_instance",
            )
        if backend is not self.backend_cls:
            raise InvalidArgumentError(
                f"{head} uses another backend class than {self.first}", filter=label, option="dnn_backend"
            )
        mine = self.config
        diffs = [(opt, getattr(config, f), getattr(mine, f)) for f, opt in _AGREE if _norm(f, config) != _norm(f, mine)]
        for key in sorted({*config.backend_options, *mine.backend_options}):
            if config.backend_options.get(key) != mine.backend_options.get(key):
                diffs.append((key, config.backend_options.get(key), mine.backend_options.get(key)))
        if diffs:
            opt, theirs, ours = diffs[0]
            raise InvalidArgumentError(
                f"{head} sets {opt}={_show(theirs)} but {self.first} loaded it with {opt}={_show(ours)}; "
                "filters sharing an instance must agree on their model options",
                filter=label,
                option=opt,
            )

    def attach(self, label: str, config: DnnConfig, func_type: DNNFunctionType) -> SharedModel:
        """A new filter of this instance; its stream label is made unique (``label#2``...)."""
        unique, n = label, 1
        while unique in self.labels:
            n += 1
            unique = f"{label}#{n}"
        client = self.engine.attach(unique)
        self.labels.append(unique)
        self._clients.append(client)
        self.refs += 1
        return SharedModel(self, client, config, func_type)

    def release(self, client: Client) -> None:
        """One filter closed: drop its work; the last one closes the instance."""
        self.engine.detach(client)
        with self.lock:
            self.refs -= 1
            last = self.refs <= 0
            if last:
                self.closed = True  # under the lock: no filter can attach to it from now on
        if last:
            self._shut()

    def close(self) -> None:
        """Free the engine (bounded wait) and the backend model whatever the refcount; idempotent."""
        with self.lock:
            self.closed = True
        self._shut()

    def _shut(self) -> None:
        with self.lock:
            if self._shut_down:
                return
            self._shut_down = True
        idle = False
        cancelled = False
        try:
            if self.engine.in_flight and isinstance(self.backend, Cancellable) and self._release is None:
                cancelled = True
                self.backend.cancel()  # nobody reads these results any more
            idle = self.engine.close()
        finally:
            if self._release is not None:
                self._release(self.backend, idle and not cancelled)
            else:
                self.backend.close()
            self.final = self.report()
            if self.on_closed is not None:
                self.on_closed(self)

    def report(self) -> InstanceReport:
        if self.final is not None:
            return self.final
        inferences, batches, reruns = self.engine.counters()
        with self.lock:
            failures = sum(c.failures for c in self._clients)
            streams = tuple(self.labels)
        return InstanceReport(self.name, streams, inferences, batches, failures, reruns)


class SharedModel(DnnModel):
    """What a filter of a shared instance holds: DnnModel's operations on its own stream."""

    def __init__(self, instance: SharedInstance, client: Client, config: DnnConfig, func_type: DNNFunctionType) -> None:
        # not DnnModel.__init__: the backend model and the engine are the instance's
        self.instance = instance
        self.client = client
        self.backend = instance.backend
        self._release: Release | None = None
        self._cancelled = False
        self.config = config
        self.func_type = func_type
        self.io = instance.io
        self.engine = instance.engine
        self.shared_engine = instance.engine
        self._output_sizes = instance.output_sizes
        self._closed = False

    @property
    def label(self) -> str:
        """This stream's name on the instance (the filter's label, made unique)."""
        return self.client.label

    def get_output(self, width: int, height: int, channels: int) -> tuple[int, int, int]:
        with self.instance.lock:  # one trial inference per size for all the instance's filters
            return super().get_output(width, height, channels)

    def execute(self, payload: Any, items: Sequence[Item]) -> Task:
        return self.shared_engine.submit_for(self.client, payload, items)

    def get_result(self, wait: bool = False, timeout: float | None = None) -> Result:
        return self.shared_engine.get_result_for(self.client, wait=wait, timeout=timeout)

    @property
    def queued(self) -> int:
        return self.shared_engine.queued_for(self.client)

    def flush(self) -> None:
        self.shared_engine.flush_for(self.client)

    def interrupt(self) -> None:
        """This stream stops; the backend is not cancelled: the other streams still use it."""
        self.shared_engine.interrupt_for(self.client)

    def close(self) -> None:
        """Leave the instance (the last filter to leave closes it); idempotent."""
        if self._closed:
            return
        self._closed = True
        self.instance.release(self.client)


class InstanceScope:
    """The shared instances of one run (or of the process), by name, and their reports.

    ``with InstanceScope() as scope:`` makes it the current scope of the entering context (its
    thread, and threads started in a copy of the context, as avdnn.multi starts its outputs):
    DNN filters built there with ``model_instance`` register in it. It may be entered by
    several threads; when the last one leaves, the instances still open are closed (their
    filters' later close does nothing more). Reports stay readable after that.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, SharedInstance] = {}
        #: every instance loaded here, in order; a closed one only as its final report
        self._all: list[SharedInstance | InstanceReport] = []
        self._entered = 0
        #: the stream label of filters attached in this context (see stream())
        self._prefix: contextvars.ContextVar[str | None] = contextvars.ContextVar("avdnn_stream", default=None)

    def attach(
        self,
        config: DnnConfig,
        func_type: DNNFunctionType,
        *,
        label: str,
        backend: type[Backend] | None = None,
        faults: FaultPlan | None = None,
    ) -> SharedModel:
        """The filter ``label``'s handle on instance ``config.model_instance`` (loaded if new)."""
        name = config.model_instance
        if not name:
            raise InvalidArgumentError("a shared model needs model_instance", filter=label, option="model_instance")
        prefix = self._prefix.get()
        label = f"{prefix}:{label}" if prefix else label
        with self._lock:
            inst = self._live.get(name)
            if inst is not None:
                with inst.lock:
                    if not inst.closed:  # else its last filter is closing it: load a new one
                        inst.check(config, func_type, label, backend)
                        return inst.attach(label, config, func_type)
            inst = SharedInstance(name, config, func_type, label=label, backend=backend, faults=faults)
            inst.on_closed = self._closed
            self._live[name] = inst
            self._all.append(inst)
            with inst.lock:
                return inst.attach(label, config, func_type)

    @contextlib.contextmanager
    def stream(self, name: str) -> Iterator[None]:
        """Filters attached in this context inside the block are labelled ``name:filter``
        (e.g. the output they feed), so the reports tell streams apart."""
        token = self._prefix.set(name)
        try:
            yield
        finally:
            self._prefix.reset(token)

    def reports(self) -> list[InstanceReport]:
        """One report per instance this scope loaded, in load order (closed ones included)."""
        with self._lock:
            entries = list(self._all)
        return [e if isinstance(e, InstanceReport) else e.report() for e in entries]

    def _closed(self, inst: SharedInstance) -> None:
        """Keep a closed instance's report, not the instance (the default scope lives long)."""
        with self._lock:
            if self._live.get(inst.name) is inst:
                del self._live[inst.name]
            self._all = [inst.report() if e is inst else e for e in self._all]

    def summary(self, *, labels: bool = False) -> list[str]:
        """The reports as summary lines."""
        return [format_report(r, labels=labels) for r in self.reports()]

    def close(self) -> None:
        """Close every instance still open (a filter left unclosed); reports stay."""
        with self._lock:
            live = list(self._live.values())
            self._live.clear()
        for inst in live:
            inst.close()

    def __enter__(self) -> InstanceScope:
        with self._lock:
            self._entered += 1
        _scopes.set((*_scopes.get(), self))
        return self

    def __exit__(self, *exc: object) -> None:
        stack = list(_scopes.get())
        if self in stack:
            stack.reverse()
            stack.remove(self)  # the innermost entry of this scope
            stack.reverse()
            _scopes.set(tuple(stack))
        with self._lock:
            self._entered -= 1
            last = self._entered <= 0
        if last:
            self.close()


#: the scopes entered in this context, innermost last: a context variable, so that the threads a
#: run starts in a copy of its context (avdnn.multi) see the run's scope
_scopes: contextvars.ContextVar[tuple[InstanceScope, ...]] = contextvars.ContextVar("avdnn_scopes", default=())
_default = InstanceScope()


def current_scope() -> InstanceScope:
    """The innermost scope this context entered, else the process-wide default scope."""
    stack = _scopes.get()
    return stack[-1] if stack else _default


def default_scope() -> InstanceScope:
    """The process-wide scope of threads that entered none (never closed)."""
    return _default


def attach(
    config: DnnConfig,
    func_type: DNNFunctionType = DNNFunctionType.PROCESS_FRAME,
    *,
    backend: type[Backend] | None = None,
    name: str = "dnn",
    faults: FaultPlan | None = None,
) -> SharedModel:
    """load_model for ``model_instance``: the filter ``name`` joins its instance in the current scope."""
    return current_scope().attach(config, func_type, label=name, backend=backend, faults=faults)


def _kind(func_type: DNNFunctionType) -> str:
    return {
        DNNFunctionType.PROCESS_FRAME: "frame processing",
        DNNFunctionType.ANALYTICS_DETECT: "detection",
        DNNFunctionType.ANALYTICS_CLASSIFY: "classification",
    }.get(func_type, func_type.name.lower())


def _norm(field: str, config: DnnConfig) -> Any:
    value = getattr(config, field)
    if field == "model" and os.path.exists(value):
        return os.path.realpath(value)
    return value


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, tuple):
        return "&".join(map(str, value))
    return "(unset)" if value is None else str(value)
