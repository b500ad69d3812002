"""The options a DNN model runs with: a filter's dnn_base options and the engine options they make.

:class:`DnnConfig` is what a filter sets (FFmpeg's DnnContext); :class:`EngineOptions` is what
both engines take (a filter's own :class:`~avdnn.dnn.engine.Engine` and a shared instance's
:class:`~avdnn.dnn.shared.engine.SharedEngine`). :func:`load_backend` loads the backend model a
config names and :func:`engine_options` derives the engine's options from it, so a filter's own
model (:mod:`avdnn.dnn.model`) and a shared instance (:mod:`avdnn.dnn.shared`) load the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from avdnn.dnn.backends import backend_class
from avdnn.dnn.faults import FaultPlan
from avdnn.dnn.interface import Backend, BackendModel, DNNFunctionType, ModelConfig
from avdnn.dnn.keep import Release, active
from avdnn.dnn.tasks import auto_nireq
from avdnn.errors import AvdnnError, InvalidArgumentError

__all__ = ["DEFAULT_BATCH_TIMEOUT", "DnnConfig", "EngineOptions", "engine_options", "load_backend"]

log = logging.getLogger("avdnn.dnn")

#: seconds a shared instance's partial batch waits for more streams' frames (docs/dnn.md: why 5 ms)
DEFAULT_BATCH_TIMEOUT = 0.005


@dataclass(frozen=True)
class DnnConfig:
    """The dnn_base options, typed (FFmpeg's DnnContext)."""

    model: str
    backend: str | int = "onnx"
    input: str | None = None
    outputs: tuple[str, ...] = ()
    async_mode: bool = True
    nireq: int = 0
    batch_size: int = 1
    device: str | None = None
    device_id: int = 0
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    #: share one loaded model and engine with the other filters naming it (avdnn.dnn.shared)
    model_instance: str | None = None
    #: a shared instance's longest wait for a batch to fill, in seconds
    batch_timeout: float = DEFAULT_BATCH_TIMEOUT


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    """What every engine is built with; checked here, so both engines refuse the same values."""

    #: request slots; 0: FFmpeg's auto (usable cores / 2 + 1)
    nireq: int = 0
    #: inferences (lltasks) run together in one call of the backend
    batch_size: int = 1
    #: requests run off the caller's thread (async=1) or inline (async=0)
    async_mode: bool = True
    #: the engine's name in messages and thread names (the filter's label, or the instance's)
    name: str = "dnn"
    #: injected failures (tests); None: the plan current when the engine is built
    faults: FaultPlan | None = None
    #: close's longest wait for requests in flight, in seconds
    close_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be at least 1, got {self.batch_size}", option="batch_size")
        if self.nireq < 0:
            raise InvalidArgumentError(f"nireq must be 0 (auto) or more, got {self.nireq}", option="nireq")


def load_backend(
    config: DnnConfig, func_type: DNNFunctionType, backend: type[Backend] | None = None
) -> tuple[BackendModel, Release | None]:
    """The backend model for ``config`` (from the active ModelKeeper if any) and its hand-back."""
    cls = backend if backend is not None else backend_class(config.backend)
    model_config = ModelConfig(
        path=config.model,
        func_type=func_type,
        input_name=config.input,
        output_names=config.outputs,
        device=config.device,
        device_id=config.device_id,
        batch_size=config.batch_size,
        options=dict(config.backend_options),
        nireq=(config.nireq or auto_nireq()) if config.async_mode else 1,
    )
    keeper = active()
    release: Release | None = None
    try:
        if keeper is not None:
            loaded, release = keeper.acquire(cls, model_config)
        else:
            loaded = cls.load(model_config)
    except AvdnnError as exc:
        exc.with_context(file=config.model)
        raise
    return loaded, release


def engine_options(
    config: DnnConfig, model: BackendModel, *, name: str, faults: FaultPlan | None = None
) -> EngineOptions:
    """The engine options for ``model`` loaded from ``config``; a backend that cannot run
    async says so once and runs sync (FFmpeg's native backend's message)."""
    async_mode = config.async_mode
    if async_mode and not getattr(model, "supports_async", True):
        log.warning("%s: Async not supported. Rolling back to sync", name)
        async_mode = False
    return EngineOptions(
        nireq=config.nireq, batch_size=config.batch_size, async_mode=async_mode, name=name, faults=faults
    )
