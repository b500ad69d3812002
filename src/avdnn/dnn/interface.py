"""The backend seam: FFmpeg's DNN enums, the model I/O description, and the Backend protocol.

A backend supplies only what is specific to its runtime (FFmpeg's ``DNNModule`` minus the
queueing): :meth:`Backend.load` a model file, :meth:`BackendModel.describe` its inputs and
outputs, :meth:`BackendModel.run` one batch, :meth:`BackendModel.close`. Tasks, requests,
batching, sync/async, ordering and error status are the shared engine's job
(:mod:`avdnn.dnn.engine`), so every backend behaves the same. A runtime with its own async
API may also offer ``run_async`` (see :class:`NativeAsync`); the engine then starts requests
through it instead of its worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from avdnn._util.cores import usable_cores


class DNNBackendType(IntFlag):
    """FFmpeg's backend ids; they are bit flags so a filter can declare a mask.

    TFLITE and NATIVE are avdnn's own bits (FFmpeg has no TFLite backend; FFmpeg 5.1's
    removed native backend was id 0, which cannot be a mask bit).
    """

    TF = 1
    OV = 2
    TH = 4
    ONNX = 8
    TFLITE = 16
    NATIVE = 32


class DNNDataType(IntEnum):
    """Tensor element types io_proc handles (numbers are FFmpeg's, from TensorFlow's codes)."""

    FLOAT = 1
    UINT8 = 4

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(np.float32) if self is DNNDataType.FLOAT else np.dtype(np.uint8)


class DNNColorOrder(IntEnum):
    NONE = 0
    BGR = 1
    RGB = 2


class DNNLayout(IntEnum):
    NONE = 0
    NCHW = 1
    NHWC = 2


class DNNFunctionType(IntEnum):
    NONE = 0
    PROCESS_FRAME = 1
    ANALYTICS_DETECT = 2
    ANALYTICS_CLASSIFY = 3


#: What every backend runs: frame processing, detection and classification (FFmpeg's func types).
ALL_FUNCTION_TYPES: frozenset[DNNFunctionType] = frozenset(
    {DNNFunctionType.PROCESS_FRAME, DNNFunctionType.ANALYTICS_DETECT, DNNFunctionType.ANALYTICS_CLASSIFY}
)


class DNNAsyncStatusType(IntEnum):
    """get_result answers; the order matters to callers exactly as in FFmpeg."""

    FAIL = 0
    EMPTY_QUEUE = 1
    NOT_READY = 2
    SUCCESS = 3


#: A dimension the model leaves open (ONNX symbolic dims, OpenVINO dynamic dims).
DYNAMIC = -1


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output, as FFmpeg's DNNData describes it.

    ``dims`` are the model's own (``-1`` where dynamic); ``dtype`` is None when the element
    type is one io_proc cannot handle (``type_name`` then says which). ``scale``/``mean``
    follow FFmpeg: a float tensor with scale 0 or 255 and mean 0 means "pixels / 255".
    """

    name: str
    dims: tuple[int, ...]
    dtype: DNNDataType | None
    type_name: str = ""
    layout: DNNLayout = DNNLayout.NCHW
    order: DNNColorOrder = DNNColorOrder.RGB
    scale: float = 0.0
    mean: float = 0.0

    def _axis(self, what: str) -> int:
        # FFmpeg's dnn_get_{width,height,channel}_idx_by_layout: NHWC -> H1 W2 C3, else C1 H2 W3.
        nhwc = self.layout == DNNLayout.NHWC
        return {"c": 3 if nhwc else 1, "h": 1 if nhwc else 2, "w": 2 if nhwc else 3}[what]

    def _dim(self, what: str) -> int:
        if len(self.dims) != 4:
            return DYNAMIC
        return self.dims[self._axis(what)]

    @property
    def batch(self) -> int:
        return self.dims[0] if self.dims else DYNAMIC

    @property
    def channels(self) -> int:
        return self._dim("c")

    @property
    def height(self) -> int:
        return self._dim("h")

    @property
    def width(self) -> int:
        return self._dim("w")

    def item_shape(self, channels: int, height: int, width: int) -> tuple[int, int, int]:
        """The per-frame tensor shape (no batch axis) in this tensor's layout."""
        if self.layout == DNNLayout.NHWC:
            return (height, width, channels)
        return (channels, height, width)

    def describe(self) -> str:
        dims = "x".join("?" if d < 0 else str(d) for d in self.dims)
        kind = self.type_name or (self.dtype.name.lower() if self.dtype else "?")
        return f"'{self.name}' [{dims}] {kind} {self.layout.name}"


@dataclass(frozen=True)
class ModelIO:
    """The tensors a loaded model takes and gives, in the order the backend feeds/returns them."""

    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    #: the model file's own key/value metadata (ONNX metadata_props: a recognizer's character set)
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def input(self) -> TensorInfo:
        return self.inputs[0]


@dataclass(frozen=True)
class BackendOption:
    """One option of a backend's own group, as plain data.

    The filters turn these into their option rows (:mod:`avdnn.filters.dnn_common`), so a
    backend never imports the filter layer. Fields mean what they mean on
    :class:`avdnn.filters.options.Option`.
    """

    name: str
    type: str
    default: Any = None
    min: float | None = None
    max: float | None = None
    help: str = ""
    consts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelConfig:
    """What a backend needs to load a model (the dnn_base options plus its own option group)."""

    path: str
    func_type: DNNFunctionType = DNNFunctionType.PROCESS_FRAME
    input_name: str | None = None
    output_names: tuple[str, ...] = ()
    device: str | None = None
    device_id: int = 0
    batch_size: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)
    #: How many requests the engine may run at once (nireq, resolved; 1 when sync): a runtime
    #: with its own parallel executors (OpenVINO streams) sizes them by it.
    nireq: int = 1


def default_threads(config: ModelConfig) -> int:
    """Intra-op threads per request when the user sets none: the usable cores shared by the
    ``nireq`` requests that run at once (at least 1), so requests x threads fills the cores
    without oversubscribing them (ONNX Runtime's own default, every core per session, gives
    2 x 2 threads on 2 cores with nireq 2 and loses ~10% to the decoder and encoder)."""
    return max(1, usable_cores() // max(1, config.nireq))


@runtime_checkable
class BackendModel(Protocol):
    """A loaded model: describe it, run one batch, close it.

    ``run`` gets one contiguous array ``(n, *item_shape)`` (a view of the engine's per-request
    buffer, valid only during the call) and returns one array per selected output, each with
    ``n`` as its first axis. It may be called from several threads at once (one per request)
    unless ``supports_async`` is False. It raises avdnn errors (foreign ones mapped with
    ``raise ... from``).
    """

    supports_async: bool

    def describe(self) -> ModelIO: ...

    def run(self, batch: np.ndarray) -> list[np.ndarray]: ...

    def close(self) -> None: ...


#: Completion callback of a native async run: (outputs, None) or (None, error).
DoneCallback = Callable[[Sequence[np.ndarray] | None, BaseException | None], None]


@runtime_checkable
class NativeAsync(Protocol):
    """Optional: a backend whose runtime has its own async requests (OpenVINO infer requests).

    ``run_async`` must return at once and call ``done`` exactly once, from any thread.
    """

    def run_async(self, batch: np.ndarray, done: DoneCallback) -> None: ...


@runtime_checkable
class Cancellable(Protocol):
    """Optional: a backend that can stop the inferences it is running (closing early).

    Called once, before close, when nothing will read the results any more (a ``-frames``
    limit reached, a failed run): each run in flight ends soon with an error, and any run
    started afterwards fails at once. Without it, close waits for the runs in flight.
    """

    def cancel(self) -> None: ...


class Backend(Protocol):
    """A backend class, as listed in :mod:`avdnn.dnn.backends`'s table."""

    name: ClassVar[str]
    flag: ClassVar[DNNBackendType]
    #: The backend's own options (FFmpeg's per-backend AVClass, e.g. ``dnn_onnx``).
    options: ClassVar[tuple[BackendOption, ...]]
    #: Function types it can load (FFmpeg: ONNX/Torch process only).
    func_types: ClassVar[frozenset[DNNFunctionType]]

    @classmethod
    def load(cls, config: ModelConfig) -> BackendModel: ...
