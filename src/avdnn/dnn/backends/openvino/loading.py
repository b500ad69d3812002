"""Loading an OpenVINO model: read, reshape, FFmpeg's pre/post-processing, compile, describe.

Everything :meth:`~avdnn.dnn.backends.openvino.OpenVINOBackend.load` does before the first
request, with the backend's options (``dnn_openvino``) and the error mapping OpenVINO needs
(one RuntimeError for everything; its message says what kind). What the options mean is in
the package's docstring (:mod:`avdnn.dnn.backends.openvino`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from avdnn._util.cores import usable_cores
from avdnn.dnn.backends import cache
from avdnn.dnn.backends._common import (
    SCALE_MEAN_OPTIONS,
    ErrorTable,
    check_model_file,
    data_type,
    guess_layout,
    map_errors,
    pick,
    strip_port,
    tensor_scale,
)
from avdnn.dnn.backends.openvino import convert
from avdnn.dnn.backends.openvino.folding import Folded, split
from avdnn.dnn.interface import (
    DYNAMIC,
    BackendOption,
    DNNColorOrder,
    DNNFunctionType,
    DNNLayout,
    ModelConfig,
    ModelIO,
    TensorInfo,
)
from avdnn.errors import AvdnnError, ExternalError, InvalidArgumentError, InvalidDataError, NotSupportedError

__all__ = ["OPTIONS", "PRECISIONS", "CompiledModel", "compile_model", "inference_precision", "ov_error"]

log = logging.getLogger("avdnn.dnn.openvino")

_LAYOUTS = {"none": 0, "nchw": 1, "nhwc": 2}
PRECISIONS = {"f32": 0, "bf16": 1, "f16": 2, "int8": 3, "auto": 4}
_F32, _BF16, _F16, _INT8, _AUTO = range(5)
_VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO", "BATCH")
_core: Any = None
_core_lock = threading.Lock()


def _table() -> ErrorTable:
    """OpenVINO's Python API raises RuntimeError for every ov::Exception; only its calls are wrapped."""
    return [(RuntimeError, ExternalError)]


#: OpenVINO raises RuntimeError for everything; its message says what kind (FFmpeg's status map)
_KEYWORDS: tuple[tuple[tuple[str, ...], type[AvdnnError]], ...] = (
    (
        ("ParameterMismatch", "are incompatible", "isCompatible", "conflicts with", "Invalid argument"),
        InvalidArgumentError,
    ),
    (("NotImplemented", "Not implemented", "is not supported"), NotSupportedError),
    (("NotFound", "not found"), InvalidArgumentError),
)


@contextmanager
def ov_error(what: str, model: str) -> Iterator[None]:
    with map_errors(what, model, _table):
        try:
            yield
        except RuntimeError as exc:
            text = str(exc)
            for words, ours in _KEYWORDS:
                if any(w in text for w in words):
                    raise ours(f"{what}: {' '.join(text.split())[:600]}", file=model) from exc
            raise


def _get_core() -> Any:
    global _core
    import openvino as ov

    with _core_lock:
        if _core is None:
            _core = ov.Core()
        return _core


def _const(value: Any, table: dict[str, int], option: str) -> int:
    if isinstance(value, str):
        if value.lower() not in table:
            raise InvalidArgumentError(f"{option} '{value}' is not one of {', '.join(table)}", option=option)
        return table[value.lower()]
    return int(value)


def _dims(shape: Any) -> tuple[int, ...]:
    """An OpenVINO PartialShape as avdnn dims (-1 where dynamic; 4 x -1 for a dynamic rank)."""
    if shape.rank.is_dynamic:
        return (DYNAMIC,) * 4
    return tuple(d.get_length() if d.is_static else DYNAMIC for d in shape)


def _named(port: Any, wanted: str) -> bool:
    """A port answers to any of its names, with or without TensorFlow's ``:0``."""
    names = port.get_names()
    return wanted in names or strip_port(wanted) in {strip_port(n) for n in names}


def _stream_props(streams: int, nireq: int) -> dict[str, Any]:
    """Compile properties that let ``nireq`` requests really run side by side.

    One compiled model runs its requests on its streams; OpenVINO's default (latency) has one
    stream using every core, so two requests only queue behind each other and lose to one
    synchronous call. Async with nireq > 1 asks for throughput with that many requests.
    """
    props: dict[str, Any] = {}
    cores = usable_cores()
    if cores < (os.cpu_count() or cores):  # OpenVINO counts the machine, not this process's affinity
        props["INFERENCE_NUM_THREADS"] = cores
    if streams:
        props["NUM_STREAMS"] = str(streams)
    elif nireq > 1:
        props.update({"PERFORMANCE_HINT": "THROUGHPUT", "PERFORMANCE_HINT_NUM_REQUESTS": str(nireq)})
    return props


def _device(config: ModelConfig) -> str:
    device = config.device or "CPU"
    head, sep, rest = device.partition(":")
    if head.lower() in ("cpu", "gpu", "npu", "auto", "multi", "hetero", "batch"):
        head = head.upper()
    return head + sep + rest


#: the backend's own options (FFmpeg's ``dnn_openvino``)
OPTIONS: tuple[BackendOption, ...] = (
    BackendOption("input_resizable", "bool", False, 0, 1, "can input be resizable or not"),
    BackendOption("layout", "int", 0, 0, 2, "input layout of model", consts=_LAYOUTS),
    *SCALE_MEAN_OPTIONS,
    BackendOption(
        "precision",
        "int",
        0,
        0,
        4,
        "inference precision: f32, bf16, f16, int8 (a quantized IR made by avdnn models quantize), "
        "auto (the device's fastest float) (avdnn)",
        consts=PRECISIONS,
    ),
    BackendOption(
        "streams",
        "int",
        0,
        0,
        2**31 - 1,
        "parallel execution streams (avdnn; 0 = one per request when async with nireq > 1, else one)",
    ),
)


@dataclass(frozen=True)
class CompiledModel:
    """A model compiled for its device, as the backend's requests run it."""

    #: OpenVINO's CompiledModel
    compiled: Any
    io: ModelIO
    #: the model keeps a fixed batch of 1: a batch of several runs item by item
    item_by_item: bool
    #: the outputs returned, in the order asked for: (False, i) output i of ``compiled``,
    #: (True, i) output i of ``folded`` (evaluated once per input shape)
    outputs: tuple[tuple[bool, int], ...]
    folded: Folded | None = None
    #: the inference precision the model was compiled with (f32, bf16, f16, int8)
    precision: str = "f32"


def _capabilities(core: Any, device: str) -> list[str]:
    head = device.split(":")[0].split(".")[0]
    if head in _VIRTUAL_DEVICES:
        return []
    try:
        return [str(c) for c in core.get_property(device, "OPTIMIZATION_CAPABILITIES")]
    except RuntimeError:
        return []


def inference_precision(core: Any, device: str, value: Any) -> tuple[str, bool]:
    """(INFERENCE_PRECISION_HINT, int8 model) for the ``precision`` option on this device.

    ``auto`` is the device's fastest float: bf16 where OpenVINO lists BF16 for it, f16 on a
    non-CPU device listing FP16, else f32. ``int8`` runs the quantized IR with the rest at
    ``auto``'s float. bf16/f16 on a device that does not list them is AVERROR(ENOSYS).
    """
    choice = _const(value, PRECISIONS, "precision")
    caps = _capabilities(core, device)
    if choice == _F32:
        return "f32", False
    if choice in (_BF16, _F16):
        name, cap = ("bf16", "BF16") if choice == _BF16 else ("f16", "FP16")
        if caps and cap not in caps:
            raise NotSupportedError(
                f"precision={name}: OpenVINO device {device} does not list {cap} "
                f"(its capabilities: {', '.join(caps)}); use precision=auto or f32",
                option="precision",
            )
        return name, False
    fastest = "bf16" if "BF16" in caps else "f16" if "FP16" in caps and not device.startswith("CPU") else "f32"
    return fastest, choice == _INT8


def compile_model(config: ModelConfig) -> CompiledModel:
    """Read (through the model cache), cut, reshape, add pre/post-processing, compile."""
    import openvino as ov

    check_model_file(config.path)
    core = _get_core()
    path = config.path
    device = _device(config)
    head = device.split(":")[0].split(".")[0]
    if head not in _VIRTUAL_DEVICES and head not in {d.split(".")[0] for d in core.available_devices}:
        raise NotSupportedError(
            f"OpenVINO device '{device}' is not available (available: {', '.join(core.available_devices)})",
            option="device",
            file=path,
        )
    hint, int8 = inference_precision(core, device, config.options.get("precision", 0))
    with ov_error(f"model '{path}'", path):
        try:
            model = convert.read(core, config, int8=int8)
        except RuntimeError as exc:
            raise InvalidDataError(
                f"OpenVINO cannot read model '{path}': {' '.join(str(exc).split())[:600]}", file=path
            ) from exc
    port_names = [p.get_any_name() for p in model.inputs]
    index = 0
    if config.input_name:
        index = pick(
            "input",
            config.input_name,
            port_names,
            config,
            match=lambda a, b: _named(model.inputs[port_names.index(a)], b),
        )
    if len(model.inputs) > 1:
        raise NotSupportedError(
            f"the model has {len(model.inputs)} inputs ({', '.join(port_names)}); the openvino backend feeds one",
            option="input",
            file=path,
        )
    outputs = _select_outputs(model, config)
    scale = float(config.options.get("scale", 0.0))
    mean = float(config.options.get("mean", 0.0))
    layout_opt = _const(config.options.get("layout", 0), _LAYOUTS, "layout")
    with ov_error(f"model '{path}'", path):
        item_by_item = _reshape(model, index, config, layout_opt)
        model_layout = _layout(model.inputs[index], layout_opt)
        ppp_input = _preprocess(model, config, model_layout, scale, mean)
        values, shapes = split(outputs, model)
        results = [o.get_node() for o in model.outputs]
        folded_model = None
        if shapes:
            folded_model = ov.Model([results[i] for i in shapes], model.get_parameters(), "avdnn-shape-only")
            model = ov.Model([results[i] for i in values], model.get_parameters(), model.get_friendly_name())
            order = tuple((i in shapes, shapes.index(i) if i in shapes else values.index(i)) for i in outputs)
        else:
            order = tuple((False, i) for i in outputs)
    props: dict[str, Any] = {"INFERENCE_PRECISION_HINT": hint}
    blobs = cache.blob_dir()
    if blobs is not None:
        props["CACHE_DIR"] = str(blobs)
    props.update(_stream_props(int(config.options.get("streams", 0)), config.nireq))
    with ov_error(f"compiling '{path}' for {device}", path):
        compiled = core.compile_model(model, device, props)
        folded = None
        if folded_model is not None:
            exact = {"INFERENCE_PRECISION_HINT": "f32", **({"CACHE_DIR": str(blobs)} if blobs else {})}
            folded = Folded(core.compile_model(folded_model, "CPU", exact))
    ports = [(folded.compiled if f else compiled).outputs[i] for f, i in order] if folded else None
    io = _describe(compiled, config, outputs, model_layout, ppp_input, ports)
    return CompiledModel(compiled, io, item_by_item, order, folded, "int8" if int8 else hint)


def _select_outputs(model: Any, config: ModelConfig) -> list[int]:
    if not config.output_names:
        return list(range(len(model.outputs)))
    names = [o.get_any_name() if o.get_names() else f"output{i}" for i, o in enumerate(model.outputs)]
    return [
        pick("output", n, names, config, match=lambda a, b: a == b or _named(model.outputs[names.index(a)], b))
        for n in config.output_names
    ]


def _layout(port: Any, option: int) -> DNNLayout:
    if option:
        return DNNLayout(option)
    return guess_layout(_dims(port.get_partial_shape()))


def _reshape(model: Any, index: int, config: ModelConfig, layout_opt: int) -> bool:
    """Open H/W (input_resizable) and a fixed batch of 1 (batch_size > 1); True: run item by item."""
    import openvino as ov

    port = model.inputs[index]
    shape = port.get_partial_shape()
    if shape.rank.is_dynamic or shape.rank.get_length() != 4:
        return config.batch_size > 1
    dims = [shape[i] for i in range(4)]
    layout = _layout(port, layout_opt)
    changed = False
    if config.options.get("input_resizable"):
        for axis in (1, 2) if layout == DNNLayout.NHWC else (2, 3):
            dims[axis], changed = ov.Dimension(), True
    batch_one = dims[0].is_static and dims[0].get_length() == 1 and config.batch_size > 1
    if batch_one:
        dims[0], changed = ov.Dimension(), True
    if not changed:
        return False
    try:
        model.reshape({port: ov.PartialShape(dims)})
    except RuntimeError as exc:
        if not batch_one:
            raise
        log.info("openvino: the model keeps its batch of 1 (%s); running batches item by item", exc)
        dims[0] = ov.Dimension(1)
        model.reshape({port: ov.PartialShape(dims)})
        return True
    return False


def _preprocess(model: Any, config: ModelConfig, layout: DNNLayout, scale: float, mean: float) -> bool:
    """FFmpeg's PrePostProcessor: uint8 NHWC in; convert, mean, scale; True when applied."""
    import openvino as ov
    import openvino.opset13 as ops
    from openvino.preprocess import PrePostProcessor

    port = model.inputs[0]
    etype = port.get_element_type()
    four_d = port.get_partial_shape().rank.is_static and port.get_partial_shape().rank.get_length() == 4
    process = config.func_type == DNNFunctionType.PROCESS_FRAME
    if scale == 0.0:
        scale = 255.0 if process and etype.is_real() else 1.0
    if not four_d or not (etype.is_real() or etype == ov.Type.u8):
        if scale != 1.0 or mean != 0.0:
            raise NotSupportedError("scale/mean need a 4-D float or uint8 model input", option="scale")
        return False
    if etype == ov.Type.u8 and (scale != 1.0 or mean != 0.0):
        raise NotSupportedError(
            "scale/mean need a float model input; this one is uint8", option="scale", file=config.path
        )
    ppp = PrePostProcessor(model)
    ppp.input(0).tensor().set_element_type(ov.Type.u8).set_layout(ov.Layout("NHWC"))
    ppp.input(0).model().set_layout(ov.Layout("NHWC" if layout == DNNLayout.NHWC else "NCHW"))
    if etype.is_real():
        steps = ppp.input(0).preprocess().convert_element_type(ov.Type.f32)
        if mean != 0.0:
            steps.mean(mean)
        if scale != 1.0:
            steps.scale(scale)
    for i, out in enumerate(model.outputs):
        if out.get_partial_shape().rank.is_dynamic:
            continue
        if process and scale == 1.0 and mean == 0.0 and out.get_element_type().is_real():
            ppp.output(i).postprocess().custom(
                lambda node: ops.clamp(ops.round(node, "half_to_even"), 0, 255).output(0)
            )
            ppp.output(i).tensor().set_element_type(ov.Type.u8)
        elif not process and out.get_element_type() != ov.Type.f32:
            ppp.output(i).tensor().set_element_type(ov.Type.f32)
    ppp.build()
    return True


def _describe(
    compiled: Any, config: ModelConfig, outputs: list[int], layout: DNNLayout, ppp: bool, ports: list[Any] | None
) -> ModelIO:
    port = compiled.inputs[0]
    dims = _dims(port.get_partial_shape())
    etype = port.get_element_type().to_dtype() if port.get_element_type().is_static() else None
    dtype = data_type(etype) if etype is not None else None
    # FFmpeg feeds detect/classify models BGR: right for OpenVINO IR (Open Model Zoo), wrong for a
    # TensorFlow/TFLite/ONNX file read directly, which keeps its framework's RGB
    bgr = config.func_type != DNNFunctionType.PROCESS_FRAME and config.path.lower().endswith(".xml")
    order = DNNColorOrder.BGR if bgr else DNNColorOrder.RGB
    in_layout = DNNLayout.NHWC if ppp else (layout if len(dims) == 4 else DNNLayout.NONE)
    name = port.get_any_name() if port.get_names() else "input0"
    infos = [
        TensorInfo(name, dims, dtype, port.get_element_type().get_type_name(), in_layout, order, tensor_scale(dtype))
    ]
    outs = []
    for k, i in enumerate(outputs):
        o = ports[k] if ports is not None else compiled.outputs[i]
        odims = _dims(o.get_partial_shape())
        odt = data_type(o.get_element_type().to_dtype()) if o.get_element_type().is_static() else None
        oname = o.get_any_name() if o.get_names() else f"output{i}"
        outs.append(
            TensorInfo(oname, odims, odt, o.get_element_type().get_type_name(), layout, order, tensor_scale(odt))
        )
    return ModelIO(tuple(infos), tuple(outs))
