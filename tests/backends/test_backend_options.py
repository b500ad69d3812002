"""Each backend's own options, with FFmpeg's names and meanings, and its special paths.

OpenVINO: precision (f32 default), scale/mean in the graph, layout, input_resizable, batch
over a fixed batch of 1, and an async failure OpenVINO reports without its callback.
PyTorch: optimize, devices. TensorFlow: sess_config, the ``init`` op, ``x`` vs ``x:0``.
TFLite: quantized models, threads. Native: async rolls back to sync with FFmpeg's warning.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import nets
import numpy as np
import pytest
from bkutil import skip_reason
from spine_util import missing

from avdnn.dnn import DnnConfig, load_model
from avdnn.dnn import backends as registry
from avdnn.dnn.interface import DNNAsyncStatusType, DNNFunctionType, ModelConfig
from avdnn.errors import AvdnnError, InvalidArgumentError, NotSupportedError


def _need(fmt: str) -> None:
    why = skip_reason(fmt)
    if why:
        missing("extras", why)


def _load(backend: str, path: str, **kw: object):  # type: ignore[no-untyped-def]
    return registry.backend_class(backend).load(ModelConfig(path=path, **kw))  # type: ignore[arg-type]


# -- OpenVINO ----------------------------------------------------------------------------------


def test_openvino_precision_defaults_to_f32(net_path) -> None:  # type: ignore[no-untyped-def]
    path = net_path("openvino", "conv")
    m = _load("openvino", path)
    assert str(m._compiled.get_property("INFERENCE_PRECISION_HINT")) in ("<Type: 'float32'>", "f32", "float32")
    import openvino as ov

    if "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        m16 = _load("openvino", path, options={"precision": "bf16"})
        assert "bfloat16" in str(m16._compiled.get_property("INFERENCE_PRECISION_HINT"))
    else:  # asked for, not there: said (OpenVINO itself would quietly keep f32)
        with pytest.raises(NotSupportedError, match="does not list BF16"):
            _load("openvino", path, options={"precision": "bf16"})
    with pytest.raises(InvalidArgumentError):
        _load("openvino", path, options={"precision": "f64"})


def test_openvino_streams_follow_nireq(net_path) -> None:  # type: ignore[no-untyped-def]
    """nireq parallel requests get parallel streams; sync (nireq 1) keeps OpenVINO's one stream."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("hardware: one core: OpenVINO makes one stream whatever is asked")
    path = net_path("openvino", "conv")
    assert int(_load("openvino", path, nireq=1)._compiled.get_property("NUM_STREAMS")) == 1
    two = _load("openvino", path, nireq=2)._compiled
    assert int(two.get_property("NUM_STREAMS")) == 2
    assert int(two.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")) == 2
    forced = _load("openvino", path, nireq=1, options={"streams": 2})._compiled  # OpenVINO caps it at the cores
    assert int(forced.get_property("NUM_STREAMS")) == 2
    # the engine passes the resolved nireq (auto, and 1 when sync) to the backend
    assert load_model(DnnConfig(model=path, backend="openvino", nireq=2)).backend.config.nireq == 2
    assert load_model(DnnConfig(model=path, backend="openvino", nireq=4, async_mode=False)).backend.config.nireq == 1


def test_openvino_scale_and_mean_run_in_the_graph(net_path) -> None:  # type: ignore[no-untyped-def]
    path = net_path("openvino", "invert")
    x = np.arange(2 * 4 * 5 * 3, dtype=np.uint8).reshape(2, 4, 5, 3)
    m = _load("openvino", path, func_type=DNNFunctionType.ANALYTICS_DETECT, options={"mean": 10.0, "scale": 4.0})
    info = m.describe().input
    assert info.layout.name == "NHWC" and info.dtype.name == "UINT8" and info.order.name == "BGR"  # IR: FFmpeg's BGR
    got = m.run(x)[0]
    want = 1.0 - (x.astype(np.float32) - 10.0) / 4.0
    np.testing.assert_allclose(got, want.transpose(0, 3, 1, 2), rtol=0, atol=1e-5)
    # process frame, scale=1: FFmpeg's uint8 output (here rounded and clamped, not wrapped around)
    m1 = _load("openvino", path, options={"scale": 1.0})
    out = m1.run(x)[0]
    assert out.dtype == np.uint8 and out.max() == 1 and out.min() == 0


def test_openvino_layout_input_resizable_and_fixed_batch(tmp_path: Path) -> None:
    _need("openvino")
    import onnx
    from onnx import TensorProto, helper

    shape = [1, 3, 8, 8]
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])],
        "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = str(tmp_path / "fixed.onnx")
    onnx.save(model, path)
    fixed = _load("openvino", path)
    assert fixed.describe().input.dims == (1, 8, 8, 3)
    resizable = _load("openvino", path, batch_size=3, options={"input_resizable": True})
    assert resizable.describe().input.dims == (-1, -1, -1, 3)  # open H/W, and the batch of 1 opened for batch_size
    x = np.random.default_rng(0).integers(0, 256, (3, 5, 7, 3), dtype=np.uint8)
    np.testing.assert_allclose(resizable.run(x)[0], -(x / np.float32(255)).transpose(0, 3, 1, 2), atol=1e-6)
    # layout=nhwc reads the same [1,3,8,8] model as N,H=3,W=8,C=8: 8 channels, which io_proc cannot feed
    as_nhwc = _load("openvino", path, options={"layout": "nhwc"})
    assert as_nhwc.describe().input.dims == (1, 3, 8, 8)


def test_openvino_async_failure_without_callback_still_completes(tmp_path: Path) -> None:
    """OpenVINO does not call a Python callback for a failed inference: the watcher must."""
    _need("openvino")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    # Reshape to [1, -1, 7]: any H, W pass the start; a frame whose size is no multiple of 7 fails inside
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"])],
        "r7",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "A", 7])],
        [numpy_helper.from_array(np.array([1, -1, 7], np.int64), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = str(tmp_path / "reshape7.onnx")
    onnx.save(model, path)
    m = _load("openvino", path)
    done = threading.Event()
    box: dict[str, object] = {}

    def callback(outputs, error) -> None:  # type: ignore[no-untyped-def]
        box["outputs"], box["error"] = outputs, error
        done.set()

    m.run_async(np.zeros((1, 2, 2, 3), np.uint8), callback)
    assert done.wait(10), "an OpenVINO async failure never completed"
    assert box["outputs"] is None and isinstance(box["error"], InvalidArgumentError)
    assert "reshape" in str(box["error"]).lower()  # OpenVINO's own message is inside
    ok = threading.Event()
    m.run_async(np.zeros((1, 7, 1, 3), np.uint8), lambda o, e: (box.update(o=o, e=e), ok.set()))
    assert ok.wait(10) and box["e"] is None and box["o"][0].shape == (1, 3, 7)  # type: ignore[index]
    m.close()
    # the same through the engine: the task FAILs with the error, the next one succeeds, no hang
    dnn = load_model(DnnConfig(model=path, backend="openvino", nireq=2))
    for k, (h, w) in enumerate(((2, 2), (7, 1))):
        rgb = np.zeros((h, w, 3), np.uint8)
        dnn.execute(k, [dnn.frame_item(rgb, lambda outs: outs[0].copy())])
    first, second = dnn.get_result(wait=True, timeout=10), dnn.get_result(wait=True, timeout=10)
    assert first.status == DNNAsyncStatusType.FAIL and isinstance(first.error, AvdnnError)
    assert second.status == DNNAsyncStatusType.SUCCESS
    dnn.close()


def test_openvino_dynamic_shapes_and_device_names(net_path) -> None:  # type: ignore[no-untyped-def]
    path = net_path("openvino", "identity")
    m = _load("openvino", path, device="cpu")  # lower-case CPU passes through as OpenVINO's name
    for h, w in ((4, 4), (9, 17), (2, 3)):
        x = np.random.default_rng(h).integers(0, 256, (1, h, w, 3), dtype=np.uint8)
        assert m.run(x)[0].shape == (1, 3, h, w)
    with pytest.raises(NotSupportedError) as info:
        _load("openvino", path, device="NPU")
    assert "available" in info.value.message


# -- PyTorch -----------------------------------------------------------------------------------


def test_torch_optimize_and_devices(net_path) -> None:  # type: ignore[no-untyped-def]
    path = net_path("torch", "conv")
    x = np.random.default_rng(0).random((2, 3, 6, 7), dtype=np.float32)
    a = _load("torch", path).run(x)[0]
    b = _load("torch", path, options={"optimize": 1}).run(x)[0]
    np.testing.assert_allclose(a, b, atol=1e-6)
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(NotSupportedError, match="CUDA"):
            _load("torch", path, device="cuda:0")
    with pytest.raises(InvalidArgumentError):
        _load("torch", path, device="tpu")
    exported = _load("torch", net_path("torch_export", "conv"))
    assert exported.describe().input.dims == (-1, 3, -1, -1)


# -- TensorFlow --------------------------------------------------------------------------------


def test_tensorflow_sess_config_init_op_and_names(tmp_path: Path) -> None:
    _need("tensorflow")
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None, None, 3], name="x")
        gain = tf.compat.v1.Variable(2.0, name="gain")  # needs the init op before any run
        tf.multiply(x, gain, name="y")
        tf.group(gain.initializer, name="init")
    path = tmp_path / "init.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    proto = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    hexed = "0x" + proto.SerializeToString().hex()
    x = np.full((1, 2, 2, 3), 0.25, np.float32)
    for inp, out in (("x", "y"), ("x:0", "y:0")):
        m = _load("tensorflow", str(path), input_name=inp, output_names=(out,), options={"sess_config": hexed})
        np.testing.assert_allclose(m.run(x)[0], 0.5)
        m.close()
    with pytest.raises(InvalidArgumentError, match="0x"):
        _load("tensorflow", str(path), input_name="x", output_names=("y",), options={"sess_config": "abcd"})
    with pytest.raises(InvalidArgumentError):
        _load("tensorflow", str(path), input_name="x", output_names=("y",), options={"sess_config": "0xzz"})


def test_tensorflow_saved_model_and_default_names(net_path) -> None:  # type: ignore[no-untyped-def]
    saved = _load("tensorflow", net_path("tf_saved", "invert"))  # one signature: no names needed
    x = np.random.default_rng(0).random((2, 3, 4, 3), dtype=np.float32)
    np.testing.assert_allclose(saved.run(x)[0], 1 - x, atol=1e-7)
    frozen = _load("tensorflow", net_path("tensorflow", "invert"))  # one placeholder, one sink op
    np.testing.assert_allclose(frozen.run(x)[0], 1 - x, atol=1e-7)


# -- TFLite ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["uint8", "int8"])
def test_tflite_quantized_models(kind: str, tmp_path: Path) -> None:
    _need("tflite")
    qpath, fpath = nets.quantized_tflite(tmp_path, kind)
    q = _load("tflite", qpath, options={"threads": 2})
    f = _load("tflite", fpath)
    qin, qout = q.describe().input, q.describe().outputs[0]
    assert qout.dtype.name == "FLOAT"  # dequantized
    pixels = np.random.default_rng(5).integers(0, 256, (1, 16, 16, 3), dtype=np.uint8)
    x = pixels.astype(np.float32) / np.float32(255)
    if kind == "uint8":
        assert qin.dtype.name == "UINT8"  # the frame's bytes go in as they are
        scale, zero = q._in["quantization"]
        fed = np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.uint8)
        got = q.run(fed)[0]
        np.testing.assert_allclose(q.run(x)[0], got)  # a float batch is quantized the same way
    else:
        assert qin.dtype.name == "FLOAT"  # quantized here from float
        got = q.run(x)[0]
    want = f.run(x)[0]
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.abs(got - want).max() < 0.05, np.abs(got - want).max()


# -- native ------------------------------------------------------------------------------------


def test_native_async_rolls_back_to_sync_once(net_path, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    path = net_path("native", "invert")
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        dnn = load_model(
            DnnConfig(
                model=path,
                backend="native",
                input="x",
                outputs=("y",),
                async_mode=True,
                backend_options={"conv2d_threads": 4},
            ),
            name="dnn_processing",
        )
    warned = [r for r in caplog.records if "Async not supported. Rolling back to sync" in r.getMessage()]
    assert len(warned) == 1 and not dnn.engine.async_mode
    rgb = np.random.default_rng(0).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    for k in range(3):
        dnn.execute(k, [dnn.frame_item(rgb, lambda outs: outs[0].copy())])
    dnn.flush()
    r = dnn.get_result(wait=True, timeout=10)
    assert r.status == DNNAsyncStatusType.SUCCESS
    np.testing.assert_allclose(r.results[0][0], 1 - rgb / np.float32(255), atol=1e-6)
    dnn.close()


# -- ONNX Runtime ------------------------------------------------------------------------------


def _neg_onnx(tmp_path: Path, meta: dict[str, str] | None = None) -> str:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])],
        "neg",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3, 4, 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    for key, value in (meta or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    path = str(tmp_path / "neg.onnx")
    onnx.save(model, path)
    return path


def test_onnx_scale_mean_and_metadata(tmp_path: Path) -> None:
    """OpenVINO's mean/scale on the onnx backend: detect/classify report them for io_analytics to
    apply; dnn_processing's v/255 batch is rescaled by the backend. The file's metadata_props reach
    the model description (a CTC recognizer's characters)."""
    path = _neg_onnx(tmp_path, {"character": "a\nb"})
    det = _load("onnx", path, func_type=DNNFunctionType.ANALYTICS_DETECT, options={"mean": 127.5, "scale": 127.5})
    info = det.describe().input
    assert (info.mean, info.scale) == (127.5, 127.5)
    assert det.describe().metadata == {"character": "a\nb"}
    proc = _load("onnx", path, options={"mean": 10.0, "scale": 4.0})
    x = np.full((1, 3, 4, 5), 50 / 255, np.float32)
    np.testing.assert_allclose(proc.run(x)[0], -np.full((1, 3, 4, 5), 10.0), atol=1e-5)
    plain = _load("onnx", path)
    assert plain.describe().input.mean == 0.0
