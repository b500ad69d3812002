"""What filters call: FFmpeg's five DNN operations over one backend model and the engine.

``load_model`` picks the backend from the table, loads the file and wires the shared
:class:`~avdnn.dnn.engine.Engine` to the backend's ``run``; the returned :class:`DnnModel`
offers ``execute`` / ``get_result`` / ``flush`` / ``close`` (FFmpeg's DNNModule) plus
``get_input`` / ``get_output`` (the model description and the output size for an input
size, found from static dims or, like FFmpeg, by one trial inference on a blank input).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from avdnn.dnn import io_proc
from avdnn.dnn.backends import backend_class
from avdnn.dnn.engine import Engine, Item, Result, Task, auto_nireq
from avdnn.dnn.faults import FaultPlan
from avdnn.dnn.interface import (
    DYNAMIC,
    Backend,
    BackendModel,
    Cancellable,
    DNNFunctionType,
    ModelConfig,
    ModelIO,
    NativeAsync,
    TensorInfo,
)
from avdnn.dnn.keep import Release, active
from avdnn.errors import AvdnnError, IOFailureError, NotSupportedError

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


def load_model(
    config: DnnConfig,
    func_type: DNNFunctionType = DNNFunctionType.PROCESS_FRAME,
    *,
    backend: type[Backend] | None = None,
    name: str = "dnn",
    faults: FaultPlan | None = None,
) -> DnnModel:
    """Load ``config.model`` with its backend (or ``backend``, e.g. a mock) for ``func_type``.

    With ``config.model_instance`` set, the model is the shared instance of that name in the
    current :class:`~avdnn.dnn.shared.InstanceScope` (loaded by its first filter).
    """
    if config.model_instance:
        from avdnn.dnn.shared import attach  # shared builds on this module

        return attach(config, func_type, backend=backend, name=name, faults=faults)
    loaded, release = load_backend(config, func_type, backend)
    return DnnModel(loaded, config, func_type, name=name, faults=faults, release=release)


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


class DnnModel:
    """A loaded model plus the engine that runs it; driven by one filter thread."""

    def __init__(
        self,
        backend_model: BackendModel,
        config: DnnConfig,
        func_type: DNNFunctionType = DNNFunctionType.PROCESS_FRAME,
        *,
        name: str = "dnn",
        faults: FaultPlan | None = None,
        release: Release | None = None,
    ) -> None:
        self.backend = backend_model
        #: a ModelKeeper's hand-back (avdnn.dnn.keep): close gives the backend model to it instead of closing it
        self._release = release
        self._cancelled = False
        self.config = config
        self.func_type = func_type
        self.io: ModelIO = backend_model.describe()
        async_mode = config.async_mode
        if async_mode and not getattr(backend_model, "supports_async", True):
            log.warning("%s: Async not supported. Rolling back to sync", name)
            async_mode = False
        start_async = backend_model.run_async if isinstance(backend_model, NativeAsync) else None
        self.engine = Engine(
            backend_model.run,
            nireq=config.nireq,
            batch_size=config.batch_size,
            async_mode=async_mode,
            start_async=start_async,
            name=name,
            faults=faults,
        )
        self._output_sizes: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self._closed = False

    # -- description ----------------------------------------------------------------------

    def get_input(self) -> TensorInfo:
        return self.io.input

    @property
    def outputs(self) -> tuple[TensorInfo, ...]:
        return self.io.outputs

    def get_output(self, width: int, height: int, channels: int) -> tuple[int, int, int]:
        """(channels, height, width) of the first output for an input of this size.

        Static output dims are used when the model fixes them; otherwise one blank
        inference at this size answers (FFmpeg's get_output trial run), cached per size.
        """
        key = (channels, height, width)
        if key in self._output_sizes:
            return self._output_sizes[key]
        out = self.io.outputs[0]
        dims = (out.channels, out.height, out.width)
        if len(out.dims) == 4 and DYNAMIC not in dims:
            size = dims
        else:
            info = self.io.input
            if info.dtype is None:
                raise IOFailureError(f"model input {info.describe()} has an unsupported data type")
            blank = np.zeros((1, *info.item_shape(channels, height, width)), dtype=info.dtype.numpy)
            outputs = self.backend.run(blank)
            size = io_proc.tensor_size(np.asarray(outputs[0]), out)
        self._output_sizes[key] = size
        return size

    # -- FFmpeg's execute / get_result / flush / free -------------------------------------

    def execute(self, payload: Any, items: Sequence[Item]) -> Task:
        """Submit one task (blocks while every request is busy); see Engine.submit."""
        return self.engine.submit(payload, items)

    def frame_item(self, src: np.ndarray, post: Callable[[list[np.ndarray]], Any]) -> Item:
        """One inference over a frame's model plane (io_proc's frame -> tensor)."""
        info = self.io.input
        if info.dtype is None:
            raise NotSupportedError(f"model input {info.describe()} has an unsupported data type")
        channels = 3 if src.ndim == 3 else 1
        shape = info.item_shape(channels, src.shape[0], src.shape[1])
        return Item(shape, info.dtype.numpy, lambda dst: io_proc.fill_tensor(src, dst, info), post)

    def get_result(self, wait: bool = False, timeout: float | None = None) -> Result:
        return self.engine.get_result(wait=wait, timeout=timeout)

    @property
    def queued(self) -> int:
        """This filter's tasks submitted and not yet taken by get_result."""
        return self.engine.queued

    def flush(self) -> None:
        self.engine.flush()

    def interrupt(self) -> None:
        """The run is stopping (called from another thread): stop waiting, cancel what runs."""
        self.engine.interrupt()
        if isinstance(self.backend, Cancellable) and self._release is None:
            # a kept model (avdnn.dnn.keep) is not cancelled: a cancelled one refuses later runs,
            # and waiting (bounded, in close) for the requests in flight costs less than a reload
            self._cancelled = True
            self.backend.cancel()

    def close(self) -> None:
        """Cancel (or wait, bounded, for) requests in flight, free buffers, close the backend; idempotent."""
        if self._closed:
            return
        self._closed = True
        idle = False
        try:
            if self.engine.in_flight and isinstance(self.backend, Cancellable) and self._release is None:
                self._cancelled = True
                self.backend.cancel()  # nobody reads these results: stop them instead of waiting
            idle = self.engine.close()
        finally:
            if self._release is not None:
                # one with requests still running after the bounded wait is not idle: not reused
                self._release(self.backend, idle and not self._cancelled)
            else:
                self.backend.close()
