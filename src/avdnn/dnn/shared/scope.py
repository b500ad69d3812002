"""Where shared model instances live, and for how long: a run's scope, or the process's.

A multi-stream run opens one :class:`InstanceScope` around building and running its chains
(filters built on a thread that entered it, or in a copy of that context, register in it).
While it is entered the scope holds every instance it loaded, so one name is one model for
the whole run, even when one output's filters close before another output's attach; it frees
them when it is left. A context with no scope open uses the process-wide default scope (two
API users' threads share an instance by naming it): there an instance is freed when its last
filter closes, and the scope keeps only its live instances and a few recent reports, since it
lives as long as the process.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

from avdnn.dnn.config import DnnConfig
from avdnn.dnn.faults import FaultPlan
from avdnn.dnn.interface import Backend, DNNFunctionType
from avdnn.dnn.shared.instance import InstanceReport, SharedInstance, SharedModel, format_report
from avdnn.errors import InvalidArgumentError

__all__ = ["InstanceScope", "attach", "current_scope", "default_scope"]

#: how many closed instances' reports the default scope keeps (the newest)
DEFAULT_SCOPE_REPORTS = 8


class InstanceScope:
    """The shared instances of one run (or of the process), by name, and their reports.

    ``with InstanceScope() as scope:`` makes it the current scope of the entering context (its
    thread, and threads started in a copy of the context, as avdnn.api.many starts its outputs):
    DNN filters built there with ``model_instance`` register in it. It may be entered by
    several threads; while any is inside, it holds its instances open; when the last one
    leaves, the instances are closed (their filters' later close does nothing more). Reports
    stay readable after that. ``keep``: closed instances' reports kept (None: all).
    """

    def __init__(self, *, keep: int | None = None) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, SharedInstance] = {}
        #: every instance loaded here, in order; a closed one only as its final report
        self._all: list[SharedInstance | InstanceReport] = []
        self._keep = keep
        self._entered = 0
        #: instances being loaded now, by name (set when the load ended, either way)
        self._loading: dict[str, threading.Event] = {}
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
        """The filter ``label``'s handle on instance ``config.model_instance`` (loaded if new).

        The scope's lock is never held while a model loads (an OpenVINO compile takes seconds):
        a new name is marked as loading under it, loaded outside it, and a filter naming the same
        instance meanwhile waits for that load only; filters of other instances attach at once.
        """
        name = config.model_instance
        if not name:
            raise InvalidArgumentError("a shared model needs model_instance", filter=label, option="model_instance")
        prefix = self._prefix.get()
        label = f"{prefix}:{label}" if prefix else label
        while True:
            with self._lock:
                inst = self._live.get(name)
                loading = self._loading.get(name)
                if inst is None and loading is None:
                    loading = self._loading[name] = threading.Event()
                    held = self._entered > 0  # a run's scope holds it until the run ends
                    break
            if inst is not None:
                with inst.lock:
                    if not inst.closed:  # else its last filter is closing it: load a new one
                        inst.check(config, func_type, label, backend)
                        return inst.attach(label, config, func_type)
                with self._lock:
                    if self._live.get(name) is inst:  # closing: the scope forgets it, a new one loads
                        del self._live[name]
                continue
            assert loading is not None
            loading.wait()  # another filter is loading this instance: attach to it (or load it if that failed)
        try:
            inst = SharedInstance(name, config, func_type, label=label, backend=backend, faults=faults, held=held)
        except BaseException:
            with self._lock:
                del self._loading[name]
            loading.set()  # a filter waiting for it loads it itself (and reports its own error)
            raise
        inst.on_closed = self._closed
        with inst.lock:
            model = inst.attach(label, config, func_type)
        with self._lock:
            del self._loading[name]
            self._live[name] = inst
            self._all.append(inst)
        loading.set()
        return model

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
        """One report per instance of this scope, in load order (closed ones as kept)."""
        with self._lock:
            entries = list(self._all)
        return [e if isinstance(e, InstanceReport) else e.report() for e in entries]

    def _closed(self, inst: SharedInstance) -> None:
        """Keep a closed instance's report, not the instance; only the newest ``keep`` of them."""
        with self._lock:
            if self._live.get(inst.name) is inst:
                del self._live[inst.name]
            self._all = [inst.report() if e is inst else e for e in self._all]
            if self._keep is not None:
                extra = sum(isinstance(e, InstanceReport) for e in self._all) - self._keep
                while extra > 0:
                    oldest = next(k for k, e in enumerate(self._all) if isinstance(e, InstanceReport))
                    del self._all[oldest]
                    extra -= 1

    def summary(self, *, labels: bool = False) -> list[str]:
        """The reports as summary lines."""
        return [format_report(r, labels=labels) for r in self.reports()]

    def close(self) -> None:
        """Close every instance still open (held, or a filter left unclosed); reports stay."""
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
#: run starts in a copy of its context (avdnn.api.many) see the run's scope
_scopes: contextvars.ContextVar[tuple[InstanceScope, ...]] = contextvars.ContextVar("avdnn_scopes", default=())
_default = InstanceScope(keep=DEFAULT_SCOPE_REPORTS)


def current_scope() -> InstanceScope:
    """The innermost scope this context entered, else the process-wide default scope."""
    stack = _scopes.get()
    return stack[-1] if stack else _default


def default_scope() -> InstanceScope:
    """The process-wide scope of contexts that entered none (never closed, never holds)."""
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
