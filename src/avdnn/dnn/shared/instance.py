"""One shared model instance: the loaded model, its engine, the filters using it, its report.

A :class:`SharedInstance` is what the filters naming one ``model_instance`` share: the backend
model, loaded by the first of them, and one :class:`~avdnn.dnn.shared.engine.SharedEngine`.
A later filter attaches only if its model options agree (:meth:`SharedInstance.check` names
both filters and the option). Each filter holds a :class:`SharedModel`, DnnModel's operations
on its own stream. Which instances exist, and how long they live, is the scope's business
(:mod:`avdnn.dnn.shared.scope`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from avdnn.dnn.config import DnnConfig, engine_options, load_backend
from avdnn.dnn.faults import FaultPlan
from avdnn.dnn.interface import Backend, DNNFunctionType
from avdnn.dnn.keep import Release
from avdnn.dnn.model import DnnModel, shut_down
from avdnn.dnn.shared.engine import Client, SharedEngine
from avdnn.dnn.tasks import Item, Result, RunTimes, Task
from avdnn.errors import InvalidArgumentError

__all__ = ["InstanceReport", "SharedInstance", "SharedModel", "format_report"]

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
    #: batches that held inferences of more than one stream (what sharing is for)
    mixed_batches: int = 0
    #: the backend's time per batch run, as a histogram (avdnn.dnn.tasks.RunTimes)
    run_times: RunTimes = field(default_factory=RunTimes)
    #: batches by size: element ``n - 1`` counts the batches of ``n`` inferences
    batch_sizes: tuple[int, ...] = ()

    @property
    def mean_batch(self) -> float:
        return self.inferences / self.batches if self.batches else 0.0

    def line(self) -> str:
        """``model_instance det: 4 streams, 1200 inferences in 310 batches (3.87 per batch)``."""
        return format_report(self)


def format_report(report: InstanceReport, *, labels: bool = False) -> str:
    """The summary line of one instance; ``labels`` appends the streams' labels. With several
    streams it says how many batches mixed them: ``(3.87 per batch, 290 with several streams)``."""
    n = len(report.streams)
    text = (
        f"model_instance {report.name}: {n} stream{'' if n == 1 else 's'}, "
        f"{report.inferences} inference{'' if report.inferences == 1 else 's'} in "
        f"{report.batches} batch{'' if report.batches == 1 else 'es'}"
    )
    if report.batches:
        mixed = f", {report.mixed_batches} with several streams" if n > 1 else ""
        text += f" ({report.mean_batch:.2f} per batch{mixed})"
    if report.failures:
        text += f", {report.failures} failed"
    if labels and report.streams:
        text += f" [{', '.join(report.streams)}]"
    return text


class SharedInstance:
    """One loaded model and its shared engine, reference-counted by the filters using it.

    ``held``: the scope holds it open while it is entered (a run's scope), so the model is
    loaded once for the whole run even when one output's filters close before another's
    attach; else (the default scope) the last filter to close it frees it.
    """

    def __init__(
        self,
        name: str,
        config: DnnConfig,
        func_type: DNNFunctionType,
        *,
        label: str,
        backend: type[Backend] | None = None,
        faults: FaultPlan | None = None,
        held: bool = False,
    ) -> None:
        self.name = name
        self.held = held
        self.config = config
        self.func_type = func_type
        self.first = label
        self.backend_cls = backend
        self.backend, self._release = load_backend(config, func_type, backend)
        self.io = self.backend.describe()
        try:
            options = engine_options(config, self.backend, name=f"model_instance {name}", faults=faults)
            self.engine = SharedEngine(self.backend.run, options, batch_timeout=config.batch_timeout)
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
        """One filter closed: drop its work; the last one closes the instance unless it is held."""
        self.engine.detach(client)
        with self.lock:
            self.refs -= 1
            last = self.refs <= 0 and not self.held
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
        try:
            shut_down(self.engine, self.backend, self._release, cancelled=False)
        finally:
            self.final = self.report()
            if self.on_closed is not None:
                self.on_closed(self)

    def report(self) -> InstanceReport:
        if self.final is not None:
            return self.final
        inferences, batches, reruns, mixed, times, sizes = self.engine.counters()
        with self.lock:
            failures = sum(c.failures for c in self._clients)
            streams = tuple(self.labels)
        return InstanceReport(self.name, streams, inferences, batches, failures, reruns, mixed, times, sizes)


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
        """Leave the instance (the last filter to leave closes it, unless held); idempotent."""
        if self._closed:
            return
        self._closed = True
        self.instance.release(self.client)


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
