"""Loaded models kept between runs of one process, so a worker running many files loads each once.

Loading is the expensive part of a DNN filter (an ONNX Runtime session, an OpenVINO compile,
a TensorFlow graph import: 0.1 s to seconds), and a corpus worker runs the same chain over
thousands of files. While a :class:`ModelKeeper` is active, :func:`avdnn.dnn.load_model` takes
an idle backend model loaded earlier with the same backend and :class:`ModelConfig` instead of
loading the file again, and a run's close hands it back instead of freeing it. Only the
backend model is kept: the engine, its requests and buffers stay per run. A kept model is not
cancelled when a run stops early (``-frames:v``): a cancelled ONNX Runtime or OpenVINO model
refuses later runs, so the run's close waits (bounded) for the inferences in flight instead; one
still running after that wait is freed, not kept. Two runs at once never share one model: the
second loads its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from avdnn.dnn.interface import Backend, BackendModel, ModelConfig
from avdnn.errors import InvalidArgumentError

#: Called by a run's close with the backend model and whether it can serve another run.
Release = Callable[[BackendModel, bool], None]

_lock = threading.Lock()
_active: ModelKeeper | None = None


class ModelKeeper:
    """Idle backend models by (backend, config); ``loads`` counts the files actually loaded.

    Created active for the whole process (the DNN filters of every run started meanwhile use
    it); :meth:`close` (or leaving the ``with`` block) deactivates it and frees what it holds.
    Creating one while another is active is an error: nesting would make ownership unclear.
    """

    def __init__(self) -> None:
        global _active
        self._idle: dict[str, list[BackendModel]] = {}
        self._lock = threading.Lock()
        self._closed = False
        #: Models loaded from their files while this keeper was active (cache misses).
        self.loads = 0
        #: Runs that got a model already loaded (cache hits).
        self.reuses = 0
        with _lock:
            if _active is not None:
                raise InvalidArgumentError("models are already being kept in this process (one ModelKeeper at a time)")
            _active = self

    def acquire(self, backend: type[Backend], config: ModelConfig) -> tuple[BackendModel, Release]:
        """An idle model for this backend and config, or a newly loaded one; and how to give it back."""
        key = f"{backend.__module__}.{backend.__qualname__}:{config!r}"
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                self.reuses += 1
                return idle.pop(), lambda model, reusable: self._release(key, model, reusable)
        model = backend.load(config)
        with self._lock:
            self.loads += 1
        return model, lambda model, reusable: self._release(key, model, reusable)

    def _release(self, key: str, model: BackendModel, reusable: bool) -> None:
        with self._lock:
            if reusable and not self._closed:
                self._idle.setdefault(key, []).append(model)
                return
        model.close()

    def close(self) -> None:
        """Deactivate and free every idle model; runs still holding one free it at their close."""
        global _active
        with _lock:
            if _active is self:
                _active = None
        with self._lock:
            self._closed = True
            models = [m for idle in self._idle.values() for m in idle]
            self._idle.clear()
        for model in models:
            model.close()

    def __enter__(self) -> ModelKeeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def active() -> ModelKeeper | None:
    """The keeper load_model uses now, if any."""
    return _active
