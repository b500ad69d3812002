"""Native backend: FFmpeg's removed native model format, run by :mod:`avdnn.dnn.native` in numpy.

A thin adapter from :class:`~avdnn.dnn.native.NativeModel` to the engine. As FFmpeg 5.1's
native backend: NHWC float input (pixels / 255), ``input``/``output`` are operand names
(left out: the first input operand and every operand marked as output; any operand name
works as an output), ``conv2d_threads`` is accepted (numpy decides the threading), and it is
sync only, so ``async=1`` logs "Async not supported. Rolling back to sync" once (the engine
does this for any backend whose ``supports_async`` is False) and runs inline. Needs nothing
beyond numpy, so it is always installed. A batch of ``n`` frames runs as one ``N = n``
tensor (FFmpeg only ever fed ``N = 1``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.backends._common import check_model_file, map_errors
from avdnn.dnn.interface import (
    ALL_FUNCTION_TYPES,
    DYNAMIC,
    BackendOption,
    DNNBackendType,
    DNNColorOrder,
    DNNDataType,
    DNNFunctionType,
    DNNLayout,
    ModelConfig,
    ModelIO,
    TensorInfo,
)


class NativeBackend:
    """One native-format model; ``run`` feeds one NHWC batch."""

    name: ClassVar[str] = "native"
    flag: ClassVar[DNNBackendType] = DNNBackendType.NATIVE
    func_types: ClassVar[frozenset[DNNFunctionType]] = ALL_FUNCTION_TYPES
    options: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("conv2d_threads", "int", 0, -(2**31), 2**31 - 1, "threads num for conv2d layer"),
    )
    supports_async = False

    def __init__(self, model: Any, config: ModelConfig, input_name: str, outputs: list[str], io: ModelIO) -> None:
        self._model = model
        self.config = config
        self._input = input_name
        self._outputs = outputs
        self._io = io

    @classmethod
    def load(cls, config: ModelConfig) -> NativeBackend:
        """Parse the ``.model`` file and resolve the operand names."""
        from avdnn.dnn.native import NativeModel

        path = config.path
        check_model_file(path)
        with map_errors(f"model '{path}'", path):
            model = NativeModel.load(path, conv2d_threads=int(config.options.get("conv2d_threads", 0)))
            name = config.input_name or model.inputs[0].name
            in_op = model.operand(name)
            outputs = list(config.output_names) or [t.name for t in model.outputs]
            out_dims = model.output_dims({name: in_op.dims}, outputs)
        in_info = _info(name, in_op.dims)
        io = ModelIO((in_info,), tuple(_info(n, out_dims[n]) for n in outputs))
        return cls(model, config, name, outputs, io)

    def describe(self) -> ModelIO:
        return self._io

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        """All layers over ``batch`` (NHWC float32); the selected operands."""
        path = self.config.path
        with map_errors(f"inference with '{path}'", path):
            result = self._model.run({self._input: batch}, self._outputs)
        outs = [np.asarray(result[n]) for n in self._outputs]
        return [o.copy() if np.shares_memory(o, batch) else o for o in outs]

    def close(self) -> None:
        self._model = None


def _info(name: str, dims: Any) -> TensorInfo:
    _, h, w, c = (int(d) for d in dims)
    # the core runs any N (each image on its own), so the batch axis is open
    shape = (DYNAMIC, h if h > 0 else DYNAMIC, w if w > 0 else DYNAMIC, c if c > 0 else DYNAMIC)
    return TensorInfo(name, shape, DNNDataType.FLOAT, "float32", DNNLayout.NHWC, DNNColorOrder.RGB)
