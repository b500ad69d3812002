"""TFLite backend over LiteRT (``ai-edge-litert``): ``.tflite`` files, float and quantized.

FFmpeg has no TFLite backend; this one follows the TensorFlow backend's conventions (NHWC,
RGB, float pixels / 255 or uint8 bytes) and FFmpeg's naming: ``input``/``output`` are tensor
names (``x`` or ``x:0``) or the model's signature keys; left out, the first input and every
output are used. ``threads`` sets the interpreter's thread count (0: LiteRT decides).

``mean`` and ``scale`` are OpenVINO's (FFmpeg's dnn_openvino options), for float inputs:
the model gets ``(v - mean) / scale`` where v is the 0..255 pixel value (``scale=0``: 255 for
dnn_processing, 1 for detect/classify, as OpenVINO). Both 0 (the default) keep FFmpeg's plain
feed. Detect/classify report them in the input's TensorInfo and io_analytics applies them while
it fills the buffer; dnn_processing's io_proc only feeds ``v/255``, so the backend rescales that
batch itself. A uint8 input takes bytes and refuses them (NotSupportedError), as OpenVINO does.

Quantized models: a uint8 input takes the frame's bytes as they are (the model's own
quantization of pixels, as FFmpeg feeds uint8 tensors); an int8 input is described as float
and quantized here, ``q = clip(rint(x / scale) + zero_point)``; a float batch handed to a
uint8 input is quantized the same way. Quantized outputs are dequantized,
``(q - zero_point) * scale``, unless their scale is 1 with zero point 0 (raw bytes, kept).

An interpreter is not thread-safe, so each concurrent request takes one from a pool (at
most ``nireq`` are made). Inputs with open dims (``shape_signature`` -1) are resized to the
batch; a model with a fixed batch of 1 runs a batch item by item.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.backends._common import (
    SCALE_MEAN_OPTIONS,
    ErrorTable,
    Pool,
    check_model_file,
    data_type,
    dims_of,
    map_errors,
    normalised_input,
    pick,
    quiet_stderr,
    split_batch,
    strip_port,
    tensor_scale,
)
from avdnn.dnn.interface import (
    ALL_FUNCTION_TYPES,
    BackendOption,
    DNNBackendType,
    DNNColorOrder,
    DNNDataType,
    DNNFunctionType,
    DNNLayout,
    ModelConfig,
    ModelIO,
    TensorInfo,
    default_threads,
)
from avdnn.errors import ExternalError, InvalidArgumentError, InvalidDataError, NotSupportedError

log = logging.getLogger("avdnn.dnn.tflite")


def _table() -> ErrorTable:
    """LiteRT raises built-in types from its own wrapper: only those raised inside it are its own."""
    return [(ValueError, InvalidArgumentError, "ai_edge_litert"), (RuntimeError, ExternalError, "ai_edge_litert")]


def _quant(detail: dict[str, Any]) -> tuple[float, int]:
    scale, zero = detail.get("quantization", (0.0, 0))
    return float(scale), int(zero)


class _Interp:
    """One interpreter and the input shape it is allocated for."""

    def __init__(self, interp: Any) -> None:
        self.interp = interp
        self.shape: tuple[int, ...] | None = None


class TFLiteBackend:
    """A pool of LiteRT interpreters over one ``.tflite`` file."""

    name: ClassVar[str] = "tflite"
    flag: ClassVar[DNNBackendType] = DNNBackendType.TFLITE
    func_types: ClassVar[frozenset[DNNFunctionType]] = ALL_FUNCTION_TYPES
    options: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption(
            "threads", "int", 0, 0, 2**31 - 1, "number of interpreter threads (avdnn; 0 = usable cores / nireq)"
        ),
        *SCALE_MEAN_OPTIONS,
    )
    supports_async = True

    def __init__(
        self,
        pool: Pool[_Interp],
        config: ModelConfig,
        inp: dict[str, Any],
        outs: list[dict[str, Any]],
        io: ModelIO,
        rescale: tuple[float, float] | None = None,
    ) -> None:
        self._pool = pool
        #: (mean, scale) applied to a dnn_processing batch (v/255 in), None when not needed
        self._rescale = rescale
        self.config = config
        self._in = inp
        self._outs = outs
        self._io = io
        sig = inp.get("shape_signature", inp["shape"])
        self._item_by_item = len(sig) > 0 and int(sig[0]) == 1

    @classmethod
    def load(cls, config: ModelConfig) -> TFLiteBackend:
        """Open the model (one interpreter now, more per concurrent request later)."""
        path = config.path
        check_model_file(path)
        from ai_edge_litert.interpreter import Interpreter

        threads = int(config.options.get("threads", 0)) or default_threads(config)

        def make() -> _Interp:
            # LiteRT prints its XNNPACK line from C++ at the first allocation: only at info and below
            with map_errors(f"model '{path}'", path, _table), quiet_stderr(log.getEffectiveLevel() > logging.INFO):
                try:
                    interp = Interpreter(model_path=path, num_threads=threads)
                except ValueError as exc:
                    raise InvalidDataError(f"LiteRT cannot read model '{path}': {exc}", file=path) from exc
                interp.allocate_tensors()
                return _Interp(interp)

        first = make()
        interp = first.interp
        ins, outs = interp.get_input_details(), interp.get_output_details()
        sig_in, sig_out = _signature_names(interp)
        if config.input_name:
            names = [d["name"] for d in ins]
            keyed = sig_in.get(config.input_name) or sig_in.get(strip_port(config.input_name))
            inp = (
                next(d for d in ins if d["index"] == keyed)
                if keyed is not None
                else ins[pick("input", config.input_name, names, config)]
            )
        else:
            inp = ins[0]
        if len(ins) > 1:
            raise NotSupportedError(
                f"the model has {len(ins)} inputs ({', '.join(d['name'] for d in ins)}); the tflite backend feeds one",
                option="input",
                file=path,
            )
        if config.output_names:
            names = [d["name"] for d in outs]
            chosen = []
            for n in config.output_names:
                keyed = sig_out.get(n) or sig_out.get(strip_port(n))
                chosen.append(
                    next(d for d in outs if d["index"] == keyed)
                    if keyed is not None
                    else outs[pick("output", n, names, config)]
                )
            outs = chosen
        in_info, rescale = normalised_input(_in_info(inp), config)
        io = ModelIO((in_info,), tuple(_out_info(d) for d in outs))
        pool: Pool[_Interp] = Pool(make)
        pool.give(first)
        return cls(pool, config, inp, outs, io, rescale)

    def describe(self) -> ModelIO:
        return self._io

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        """Invoke a pooled interpreter over ``batch`` (NHWC); the selected outputs, dequantized."""
        with self._pool.use() as slot:
            if self._item_by_item:
                return split_batch(lambda one: self._invoke(slot, one), batch)
            return self._invoke(slot, batch)

    def _invoke(self, slot: _Interp, batch: np.ndarray) -> list[np.ndarray]:
        path = self.config.path
        interp, index = slot.interp, self._in["index"]
        with map_errors(f"inference with '{path}'", path, _table):
            if slot.shape != batch.shape:
                if tuple(self._in["shape"]) != batch.shape or slot.shape is not None:
                    interp.resize_tensor_input(index, list(batch.shape), strict=True)
                interp.allocate_tensors()
                slot.shape = batch.shape
            interp.set_tensor(index, self._to_input(batch))
            interp.invoke()
            return [_dequantize(interp.get_tensor(d["index"]), d) for d in self._outs]

    def _to_input(self, batch: np.ndarray) -> np.ndarray:
        if self._rescale is not None:
            mean, scale = self._rescale
            batch = (batch.astype(np.float32) * np.float32(255) - np.float32(mean)) / np.float32(scale)
        want = np.dtype(self._in["dtype"])
        if batch.dtype == want:
            return batch
        scale, zero = _quant(self._in)
        if want.kind in "iu" and batch.dtype.kind == "f" and scale:
            info = np.iinfo(want)
            q = np.rint(batch.astype(np.float32) / np.float32(scale)) + zero
            quantized: np.ndarray = np.clip(q, info.min, info.max).astype(want)
            return quantized
        return batch.astype(want)

    def close(self) -> None:
        self._pool.clear()


def _signature_names(interp: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Signature keys -> tensor indices (the serving signature, or the only one)."""
    try:
        sigs = interp.get_signature_list()
    except (ValueError, RuntimeError):
        return {}, {}
    key = "serving_default" if "serving_default" in sigs else (next(iter(sigs)) if len(sigs) == 1 else None)
    if key is None:
        return {}, {}
    runner = interp.get_signature_runner(key)
    ins = {k: d["index"] for k, d in runner.get_input_details().items()}
    outs = {k: d["index"] for k, d in runner.get_output_details().items()}
    return ins, outs


def _layout(dims: tuple[int, ...]) -> DNNLayout:
    return DNNLayout.NHWC if len(dims) == 4 else DNNLayout.NONE


def _in_info(d: dict[str, Any]) -> TensorInfo:
    dims = dims_of(d.get("shape_signature", d["shape"]))
    raw = np.dtype(d["dtype"])
    dtype = DNNDataType.FLOAT if raw == np.int8 and _quant(d)[0] else data_type(raw)
    return TensorInfo(d["name"], dims, dtype, raw.name, _layout(dims), DNNColorOrder.RGB, tensor_scale(dtype))


def _out_info(d: dict[str, Any]) -> TensorInfo:
    dims = dims_of(d.get("shape_signature", d["shape"]))
    raw = np.dtype(d["dtype"])
    dtype = DNNDataType.FLOAT if _dequantizes(d) else data_type(raw)
    return TensorInfo(d["name"], dims, dtype, raw.name, _layout(dims), DNNColorOrder.RGB, tensor_scale(dtype))


def _dequantizes(d: dict[str, Any]) -> bool:
    scale, zero = _quant(d)
    raw = np.dtype(d["dtype"])
    return raw.kind in "iu" and scale != 0.0 and not (raw == np.uint8 and scale == 1.0 and zero == 0)


def _dequantize(value: np.ndarray, d: dict[str, Any]) -> np.ndarray:
    if not _dequantizes(d):
        return value
    scale, zero = _quant(d)
    return ((value.astype(np.int32) - zero).astype(np.float32) * np.float32(scale)).astype(np.float32)
