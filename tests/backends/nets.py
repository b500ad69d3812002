"""The same small nets written out in every backend's own format (generated; nothing committed).

Nets: ``identity`` (y = x), ``invert`` (y = 1 - x) and ``conv`` (a 3x3 convolution, 3 -> 3
channels, seeded random weights, no bias, zero padding "same"). Every net takes ``x`` and gives
``y``; NCHW for ONNX/OpenVINO/PyTorch, NHWC for TensorFlow/TFLite/native, dynamic N, H, W.

:func:`build` returns the model path for (format, net): formats are ``onnx``, ``openvino``
(ONNX -> IR through ``openvino.save_model``), ``torch`` (TorchScript), ``torch_export``
(``torch.export`` .pt2), ``tensorflow`` (frozen GraphDef), ``tf_saved`` (SavedModel directory), ``tflite``
(TFLiteConverter from that SavedModel) and
``native`` (the native-format builders of tests/native, when present).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np

NETS = ("identity", "invert", "conv")
CONV_W = np.random.default_rng(42).uniform(-0.5, 0.5, (3, 3, 3, 3)).astype(np.float32)  # OIHW

#: format -> (backend name, layout of the model's input)
FORMATS = {
    "onnx": ("onnx", "NCHW"),
    "openvino": ("openvino", "NCHW"),
    "torch": ("torch", "NCHW"),
    "torch_export": ("torch", "NCHW"),
    "tensorflow": ("tensorflow", "NHWC"),
    "tf_saved": ("tensorflow", "NHWC"),
    "tflite": ("tflite", "NHWC"),
    "native": ("native", "NHWC"),
    "openvino_pb": ("openvino", "NHWC"),  # OpenVINO reading the TensorFlow .pb directly
    "openvino_tflite": ("openvino", "NHWC"),  # ... and the .tflite
}


def build(fmt: str, net: str, folder: Path) -> str:
    return str(globals()[f"_{fmt}"](net, folder))


def _openvino_pb(net: str, folder: Path) -> Path:
    return _tensorflow(net, folder)


def _openvino_tflite(net: str, folder: Path) -> Path:
    return _tflite(net, folder)


def _onnx(net: str, folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = ["N", 3, "H", "W"]
    inits = []
    if net == "identity":
        nodes = [helper.make_node("Identity", ["x"], ["y"])]
    elif net == "invert":
        inits = [numpy_helper.from_array(np.array(1.0, np.float32), "one")]
        nodes = [helper.make_node("Sub", ["one", "x"], ["y"])]
    else:
        inits = [numpy_helper.from_array(CONV_W, "w")]
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes,
        net,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / f"{net}.onnx"
    onnx.save(model, str(path))
    return path


def _openvino(net: str, folder: Path) -> Path:
    import openvino as ov

    sub = folder / "ir"
    sub.mkdir(exist_ok=True)
    path = sub / f"{net}.xml"
    ov.save_model(ov.Core().read_model(str(_onnx(net, sub))), str(path), compress_to_fp16=False)
    return path


def _torch_module(net: str):  # type: ignore[no-untyped-def]
    import torch

    class Identity(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    class Invert(torch.nn.Module):  # no parameters (FFmpeg 9.0 crashed on these)
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 1.0 - x

    if net == "identity":
        return Identity()
    if net == "invert":
        return Invert()
    conv = torch.nn.Conv2d(3, 3, 3, padding=1, bias=False)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(CONV_W))
    return conv.eval()


def _torch(net: str, folder: Path) -> Path:
    import torch

    path = folder / f"{net}.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is what FFmpeg loads
        torch.jit.script(_torch_module(net)).save(str(path))
    return path


def _torch_export(net: str, folder: Path) -> Path:
    import torch

    n, h, w = torch.export.Dim("N"), torch.export.Dim("H", min=2), torch.export.Dim("W", min=2)
    program = torch.export.export(_torch_module(net), (torch.zeros(2, 3, 8, 8),), dynamic_shapes=({0: n, 2: h, 3: w},))
    path = folder / f"{net}.pt2"
    torch.export.save(program, str(path))
    return path


def _tf_graph(net: str):  # type: ignore[no-untyped-def]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None, None, 3], name="x")
        if net == "identity":  # OpenVINO folds a bare Identity away, and its name with it
            tf.maximum(x, -1.0, name="y")
        elif net == "invert":
            tf.subtract(tf.constant(1.0), x, name="y")
        else:
            tf.nn.conv2d(x, tf.constant(CONV_W.transpose(2, 3, 1, 0)), 1, "SAME", name="y")
    return graph


def _tensorflow(net: str, folder: Path) -> Path:
    path = folder / f"{net}.pb"
    path.write_bytes(_tf_graph(net).as_graph_def().SerializeToString())
    return path


def _tf_function(net: str):  # type: ignore[no-untyped-def]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    w = tf.constant(CONV_W.transpose(2, 3, 1, 0))

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32, name="x")])
    def fn(x: tf.Tensor) -> dict[str, tf.Tensor]:
        if net == "identity":
            y = tf.maximum(x, -1.0)  # a bare identity converts to a TFLite graph with no operator
        elif net == "invert":
            y = 1.0 - x
        else:
            y = tf.nn.conv2d(x, w, 1, "SAME")
        return {"y": y}  # the signature names the output y

    return fn


def _tf_saved(net: str, folder: Path) -> Path:
    """A SavedModel directory whose serving signature maps x -> y."""
    import tensorflow as tf

    path = folder / f"{net}_saved"
    module = tf.Module()
    module.fn = _tf_function(net)
    tf.saved_model.save(module, str(path), signatures=module.fn)
    return path


def _tflite(net: str, folder: Path) -> Path:
    import tensorflow as tf

    saved = _tf_saved(net, folder)
    path = folder / f"{net}.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert())
    return path


def quantized_tflite(folder: Path, kind: str) -> tuple[str, str]:
    """The conv net fully integer-quantized (``kind`` uint8 or int8 in/out) and its float twin."""
    import tensorflow as tf

    w = tf.constant(CONV_W.transpose(2, 3, 1, 0))

    @tf.function(input_signature=[tf.TensorSpec([1, 16, 16, 3], tf.float32, name="x")])
    def fn(x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"y": tf.nn.sigmoid(tf.nn.conv2d(x, w, 1, "SAME"))}

    def rep():  # type: ignore[no-untyped-def]
        rng = np.random.default_rng(0)
        for _ in range(16):
            yield [rng.random((1, 16, 16, 3), dtype=np.float32)]

    float_path = folder / "conv_float.tflite"
    float_path.write_bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert())
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = tf.uint8 if kind == "uint8" else tf.int8
    path = folder / f"conv_{kind}.tflite"
    with warnings.catch_warnings():  # "statistics for quantized inputs were expected": we give none on purpose
        warnings.simplefilter("ignore", UserWarning)
        path.write_bytes(conv.convert())
    return str(path), str(float_path)


def native_builders():  # type: ignore[no-untyped-def]
    """tests/native/builders.py, or None when the native core is not there."""
    here = Path(__file__).resolve().parents[1] / "native"
    if not (here / "builders.py").exists():
        return None
    if str(here) not in sys.path:
        sys.path.insert(0, str(here))
    import builders

    return builders


def _native(net: str, folder: Path) -> Path:
    b = native_builders()
    if net == "identity":
        built = b.identity(3)
    elif net == "invert":
        built = b.Chain(3).scalar_first(b.SUB, 1.0).build("invert")
    else:
        built = b.Chain(3).conv(3, 3, kernel=CONV_W.transpose(0, 2, 3, 1).copy(), bias=False).build("conv")
    return built.save(folder)
