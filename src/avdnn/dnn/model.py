"""A filter's DNN model: FFmpeg's five DNN operations over one backend model and its engine.

:func:`~avdnn.dnn.load.load_model` builds it from a loaded backend model (or, with
``model_instance``, a :class:`~avdnn.dnn.shared.SharedModel` subclass of it); it wires the
:class:`~avdnn.dnn.engine.Engine` to the backend's ``run``. :class:`DnnModel` offers ``execute``
/ ``get_result`` / ``flush`` / ``close`` (FFmpeg's DNNModule) plus ``get_input`` /
``get_output`` (the model description and the output size for an input size, found from
static dims or, like FFmpeg, by one trial inference on a blank input).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from avdnn.dnn import io_proc
from avdnn.dnn.config import DnnConfig, engine_options
from avdnn.dnn.engine import Engine, Item, Result, Task
from avdnn.dnn.faults import FaultPlan
from avdnn.dnn.interface import (
    DYNAMIC,
    BackendModel,
    Cancellable,
    DNNFunctionType,
    ModelIO,
    NativeAsync,
    TensorInfo,
)
from avdnn.dnn.keep import Release
from avdnn.errors import IOFailureError, NotSupportedError

__all__ = ["DnnModel", "shut_down"]


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
        start_async = backend_model.run_async if isinstance(backend_model, NativeAsync) else None
        options = engine_options(config, backend_model, name=name, faults=faults)
        self.engine = Engine(backend_model.run, options, start_async=start_async)
        self._output_sizes: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self._closed = False

    # -- description ----------------------------------------------------------------------

    def get_input(self) -> TensorInfo:
        return self.io.input

    @property
    def outputs(self) -> tuple[TensorInfo, ...]:
        return self.io.outputs

    @property
    def metadata(self) -> Mapping[str, str]:
        """The model file's own metadata (what a parser may need: a recognizer's characters)."""
        return self.io.metadata

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
        shut_down(self.engine, self.backend, self._release, cancelled=self._cancelled)


def shut_down(engine: Engine, backend: BackendModel, release: Release | None, *, cancelled: bool) -> None:
    """Close ``engine`` (bounded wait) and then its backend model, or hand it back to its keeper.

    Requests still in flight are cancelled first where the backend can and it is not kept
    (nobody reads their results); a kept one is reused only if it was idle and never cancelled.
    The backend model is never closed under a live request: requests still running after the
    engine's bounded wait free it when the last of them ends (:meth:`Engine.when_idle`).
    """
    idle = False
    try:
        if engine.in_flight and isinstance(backend, Cancellable) and release is None:
            cancelled = True
            backend.cancel()  # nobody reads these results: stop them instead of waiting
        idle = engine.close()
    finally:
        reusable = idle and not cancelled  # one still running after the bounded wait is not reused

        def free() -> None:
            if release is not None:
                release(backend, reusable)
            else:
                backend.close()

        engine.when_idle(free)
