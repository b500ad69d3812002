"""avdnn's model types (yolov5, yolov8, yolox, detr, blazeface) and the registry."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from avdnn.dnn.detect import (
    DetectContext,
    get_model_type,
    letterbox,
    list_model_types,
    parse,
    register_model_type,
    ssd_anchors,
    yolox_grid,
)
from avdnn.errors import AVERROR_INVALIDDATA, InvalidArgumentError, InvalidDataError

F32 = np.float32
TF_DET = [(((16, 16), (48, 48)), "0", (9000, 10000))]


def summary(det):  # type: ignore[no-untyped-def]
    return [(b.region, b.detect_label, b.detect_confidence) for b in det]


def ctx(w: int = 640, h: int = 640, **kw: object) -> DetectContext:
    return DetectContext(frame_width=64, frame_height=64, input_width=w, input_height=h, **kw)  # type: ignore[arg-type]


def yolov5_output(n: int = 50, nc: int = 3) -> np.ndarray:
    out = np.zeros((1, n, 5 + nc), F32)
    out[0, :, :4] = [100, 100, 10, 10]
    out[0, 7] = [320, 320, 320, 320, 0.9, 1.0, 0.2, 0.1]  # frame (16,16)-(48,48) at 64/640
    return out


def test_yolov5_tf_det_box() -> None:
    assert summary(parse("yolov5", [yolov5_output()], ctx())) == TF_DET


def test_yolov8_both_orientations() -> None:
    rows = np.zeros((1, 8400, 4 + 80), F32)
    rows[0, 4000, :4] = [320, 320, 320, 320]
    rows[0, 4000, 4 + 17] = 0.9
    want = [(((16, 16), (48, 48)), "17", (9000, 10000))]
    assert summary(parse("yolov8", [rows.transpose(0, 2, 1).copy()], ctx())) == want
    assert summary(parse("yolov8", [rows], ctx())) == want
    assert summary(parse("yolov8", [rows], ctx(nb_classes=80))) == want
    with pytest.raises(InvalidDataError, match=r"yolov8: expected \[1, 6, N\]"):
        parse("yolov8", [rows], ctx(nb_classes=2))


def test_yolox_grid_decoding() -> None:
    grid, stride = yolox_grid(64, 64, (8, 16, 32))
    assert grid.shape == (84, 2) and stride[-1] == 32 and grid[83].tolist() == [1, 1]
    out = np.zeros((1, 84, 6), F32)
    out[0, :, 2:4] = -5
    out[0, 83] = [0, 0, 0, 0, 0.9, 1.0]  # (0 + 1) * 32 = 32 centre, exp(0) * 32 = 32 size
    assert summary(parse("yolox", [out], ctx(64, 64))) == TF_DET
    with pytest.raises(InvalidDataError, match="has 84 anchors, but the output has 80"):
        parse("yolox", [out[:, :80]], ctx(64, 64))


def test_detr_sigmoid_top_k() -> None:
    boxes = np.tile(np.array([0.1, 0.1, 0.05, 0.05], F32), (1, 300, 1))
    boxes[0, 42] = [0.5, 0.5, 0.5, 0.5]
    logits = np.full((1, 300, 80), -9.0, F32)
    logits[0, 42, 0] = np.log(0.9 / 0.1)
    assert summary(parse("detr", [logits, boxes], ctx())) == TF_DET
    assert summary(parse("detr", [boxes, logits], ctx(score_activation="sigmoid"))) == TF_DET
    # one query may give several classes (RT-DETR's top-k over query x class)
    logits[0, 42, 5] = 3.0
    det = parse("detr", [logits, boxes], ctx())
    assert det.labels == ("5", "0")


def test_detr_softmax_no_object() -> None:
    boxes = np.zeros((1, 100, 4), F32)
    boxes[0, 3] = [0.5, 0.5, 0.5, 0.5]
    logits = np.zeros((1, 100, 92), F32)  # 91 classes + no-object
    logits[:, :, 91] = 10.0  # every query says "no object"...
    logits[0, 3, 91] = 0.0
    logits[0, 3, 0] = np.log(0.9 * 91 / 0.1 * 1)  # ...except query 3, class 0 with p ~ 0.9
    det = parse("detr", [logits, boxes], ctx(nb_classes=91))
    assert [b.region for b in det] == [((16, 16), (48, 48))] and det.labels == ("0",)
    assert abs(det.confidence[0] - 0.9) < 1e-3
    assert len(parse("detr", [logits, boxes], ctx(score_activation="softmax", confidence=0.95))) == 0


def test_detr_three_outputs() -> None:
    labels = np.array([[0, 3]], np.int64)
    boxes = np.array([[[160, 160, 480, 480], [0, 0, 10, 10]]], F32)
    scores = np.array([[0.9, 0.1]], F32)
    assert summary(parse("detr", [labels, boxes, scores], ctx())) == TF_DET
    with pytest.raises(InvalidDataError, match="must have 2 elements"):
        parse("detr", [labels, boxes, scores[:, :1]], ctx())


def test_blazeface_anchors_and_box() -> None:
    anchors = ssd_anchors(128, 128, (8, 16, 16, 16), 2)
    assert anchors.shape == (896, 2)
    assert anchors[0].tolist() == anchors[1].tolist() == [0.03125, 0.03125]
    assert anchors[512].tolist() == anchors[517].tolist() == [0.0625, 0.0625] and anchors[518][0] == 0.1875
    assert ssd_anchors(192, 192, (4,), 1).shape == (2304, 2)
    reg = np.zeros((1, 896, 16), F32)
    scores = np.full((1, 896, 1), -50, F32)
    reg[0, 0, :4] = [(0.5 - 0.03125) * 128, (0.5 - 0.03125) * 128, 64, 64]
    scores[0, 0, 0] = np.log(0.9 / 0.1)
    c = ctx(128, 128)
    assert summary(parse("blazeface", [reg, scores], c)) == TF_DET
    assert summary(parse("blazeface", [scores, reg], c)) == TF_DET
    # a second, shifted detection of the same face is merged by weighted NMS
    reg[0, 1, :4] = [(0.5 - 0.03125) * 128 + 4, (0.5 - 0.03125) * 128, 64, 64]
    scores[0, 1, 0] = np.log(0.9 / 0.1)
    (box,) = parse("blazeface", [reg, scores], c)
    assert box.xyxy == (17.0, 16.0, 49.0, 48.0)
    assert len(parse("blazeface", [reg, scores], replace(c, nms="none"))) == 2
    with pytest.raises(InvalidDataError, match=r"has \[896, 1024\] anchors .* 895 rows"):
        parse("blazeface", [reg[:, :895], scores[:, :895]], c)


def test_blazeface_score_clip_and_all_nan() -> None:
    reg = np.zeros((1, 896, 16), F32)
    scores = np.full((1, 896, 1), -1e6, F32)  # clipped to -100 before the sigmoid: no overflow
    assert len(parse("blazeface", [reg, scores], ctx(128, 128))) == 0
    with pytest.raises(InvalidDataError, match="blazeface: every one"):
        parse("blazeface", [reg, np.full_like(scores, np.nan)], ctx(128, 128))


def test_modern_letterbox() -> None:
    # 1280x720 frame in a 640x640 input: picture 640x360 at y = 140; box fills the picture
    out = np.zeros((1, 1, 6), F32)
    out[0, 0] = [320, 320, 640, 360, 0.9, 1.0]
    lb = letterbox(1280, 720, 640, 640)
    c = DetectContext(frame_width=1280, frame_height=720, input_width=640, input_height=640, letterbox=lb)
    (box,) = parse("yolov5", [out], c)
    assert box.xyxy == (0.0, 0.0, 1280.0, 720.0)


def test_modern_nms_per_class_and_agnostic() -> None:
    out = np.zeros((1, 3, 7), F32)
    out[0, 0] = [320, 320, 320, 320, 0.9, 1.0, 0.0]
    out[0, 1] = [330, 320, 320, 320, 0.8, 1.0, 0.0]  # same class, IoU .94: suppressed
    out[0, 2] = [330, 320, 320, 320, 0.8, 0.0, 1.0]  # other class: kept unless class agnostic
    assert parse("yolov5", [out], ctx()).labels == ("0", "1")
    assert parse("yolov5", [out], ctx(class_agnostic=True)).labels == ("0",)
    assert parse("yolov5", [out], ctx(nms="none")).labels == ("0", "0", "1")
    assert len(parse("yolov5", [out], ctx(max_det=1, nms="greedy"))) == 1


@pytest.mark.parametrize(
    ("model_type", "outs", "text"),
    [
        ("yolov5", [np.zeros((1, 10, 5), F32)], "5 \\+ nb_classes"),
        ("yolov5", [np.zeros((2, 10, 8), F32)], "must have shape"),
        ("yolov8", [np.zeros(10, F32)], "must have shape"),
        ("detr", [np.zeros((1, 10, 4), F32)], "expected boxes"),
        ("detr", [np.zeros((1, 10, 80), F32), np.zeros((1, 9, 4), F32)], r"logits must have shape \[1, 9, C\]"),
        ("detr", [np.full((1, 10, 80), np.nan, F32), np.zeros((1, 10, 4), F32)], "every one of the 800 logits"),
        ("blazeface", [np.zeros((1, 896, 16), F32)], "expected regressors"),
        ("yolov5", [np.full((1, 10, 8), np.nan, F32)], "every one of the 10 scores"),
    ],
)
def test_modern_malformed(model_type: str, outs: list[np.ndarray], text: str) -> None:
    with pytest.raises(InvalidDataError, match=text) as info:
        parse(model_type, outs, ctx(128, 128))
    assert info.value.code == AVERROR_INVALIDDATA and model_type in str(info.value)


def test_registry() -> None:
    names = list_model_types()
    assert names[:5] == ["ssd", "yolo", "yolov3", "yolov4", "tf"]
    assert {"yolov5", "yolov8", "yolox", "detr", "blazeface"} <= set(names)
    assert get_model_type("yolov3").needs_anchors and get_model_type("yolov3").ffmpeg
    with pytest.raises(InvalidArgumentError, match="known: ssd, yolo") as info:
        parse("yolov99", [], ctx())
    assert info.value.option == "model_type"
    with pytest.raises(InvalidArgumentError, match="already registered"):
        register_model_type("ssd", description="dup")(lambda outs, c: None)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize("model_type", ["ssd", "tf", "yolov5", "yolov8", "yolox", "detr"])
def test_every_type_returns_an_empty_record_when_nothing_passes(model_type: str) -> None:
    outs = {
        "ssd": [np.zeros((1, 1, 5, 7), F32)],
        "tf": [np.array([2], F32), np.zeros((1, 2), F32), np.zeros((1, 2), F32), np.zeros((1, 2, 4), F32)],
        "yolov5": [np.zeros((1, 5, 7), F32)],
        "yolov8": [np.zeros((1, 6, 100), F32)],
        "yolox": [np.zeros((1, 84, 6), F32)],
        "detr": [np.full((1, 5, 3), -9, F32), np.zeros((1, 5, 4), F32)],
    }[model_type]
    det = parse(model_type, outs, ctx(64, 64, source="m.onnx", pts=3))
    assert len(det) == 0 and det.frame_size == (64, 64) and det.source == "m.onnx" and det.pts == 3
