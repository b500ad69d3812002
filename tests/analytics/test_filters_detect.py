"""dnn_detect through the real filter + engine + ONNX backend, with generated constant detectors."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import numpy as np
import pytest
from analytics_models import (
    U8,
    constant,
    input_shape,
    lavfi_frames,
    make_filter,
    run_filter,
    ssd_output,
    tf_outputs,
    yolov3_outputs,
    yolov5_output,
)

from avdnn.dnn.detect import DetectContext, parse
from avdnn.dnn.detect.blazeface import CONFIGS, ssd_anchors
from avdnn.errors import AVERROR, AVERROR_INVALIDDATA, InvalidArgumentError, InvalidDataError
from avdnn.filters.dnn_detect import MODEL_TYPES
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame

REGION = ((16, 16), (48, 48))


def frames(n: int = 1, w: int = 64, h: int = 64, fmt: str = "rgb24") -> list[Frame]:
    return lavfi_frames(fmt, w, h, n)


def summary(det: Detections) -> list[tuple]:
    return [(b.region, b.detect_label, b.detect_confidence) for b in det]


def detect(model: str, inputs: list[Frame] | None = None, **opts: object) -> list[Frame]:
    return run_filter(make_filter("dnn_detect", model=model, **opts), inputs or frames())


def test_model_type_constants_are_ffmpegs_then_avdnns() -> None:
    assert [MODEL_TYPES[n] for n in ("ssd", "yolo", "yolov3", "yolov4")] == [0, 1, 2, 3]
    assert {"tf", "yolov5", "yolov8", "yolox", "detr", "blazeface"} <= set(MODEL_TYPES)


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("elem", ["float", "uint8"])
@pytest.mark.parametrize("size", [(300, 300), ("H", "W")])
def test_ssd_tf_det_box(tmp_path: Path, nhwc: bool, elem: str, size: tuple) -> None:
    shape = input_shape(*size, nhwc=nhwc)
    model = constant(
        tmp_path, "det", [ssd_output([[0, 2, 0.3, 0, 0, 0.5, 0.5]])], shape=shape, elem=U8 if elem == "uint8" else 1
    )
    out = detect(model, frames(3, fmt="yuv420p"), labels=_labels(tmp_path, "bg", "face"))
    assert len(out) == 3
    for i, frame in enumerate(out):
        det = frame.detections
        assert summary(det) == [(REGION, "face", (9000, 10000))]
        assert det.source == model and det.frame_size == (64, 64) and det.pts == frame.pts == i
        assert frame.format == "yuv420p"  # the input frame itself goes out


def _labels(tmp: Path, *names: str) -> str:
    path = tmp / "labels.txt"
    path.write_text("\n".join(names) + "\n")
    return str(path)


def test_confidence_threshold_inclusive_and_empty_record(tmp_path: Path) -> None:
    model = constant(tmp_path, "det", [ssd_output()])
    assert summary(detect(model, confidence=0.9)[0].detections) == [(REGION, "1", (9000, 10000))]
    det = detect(model, confidence=0.95)[0].detections
    assert det is not None and len(det) == 0 and det.source == model


def test_tf_four_outputs(tmp_path: Path) -> None:
    model = constant(tmp_path, "tfdet", tf_outputs())
    out = detect(model, model_type="tf", labels=_labels(tmp_path, "bg", "cat"))
    assert summary(out[0].detections) == [(REGION, "cat", (9000, 10000))]


@pytest.mark.parametrize("model_type", ["yolov3", "yolov4"])
def test_yolo_anchors_consumed_across_outputs(tmp_path: Path, model_type: str) -> None:
    outs, anchors = yolov3_outputs()
    if model_type == "yolov4":  # sigmoid on x, y, obj, class: pre-activation values giving the same box
        outs[1][0, :, 0, 0] = [0.0, 0.0, 0.0, 0.0, 20.0, 2.1972246]
        outs[0][0, 4] = -30.0
    model = constant(tmp_path, model_type, outs, shape=input_shape(64, 64))
    anchor_opt = "&".join(f"{a:g}" for a in anchors)
    det = detect(model, model_type=model_type, anchors=anchor_opt, nb_classes=1)[0].detections
    ctx = DetectContext(
        frame_width=64,
        frame_height=64,
        input_width=64,
        input_height=64,
        confidence=0.5,
        nb_classes=1,
        anchors=anchors,
        source=model,
    )
    assert det == parse(model_type, outs, DetectContext(**{**ctx.__dict__, "pts": 0}))
    assert [b.region for b in det] == [REGION]
    if model_type == "yolov3":
        assert det[0].detect_confidence == (9000, 10000)


def test_yolo_v1v2_grid_from_options(tmp_path: Path) -> None:
    out = np.zeros((1, 6, 2, 2), np.float32)
    out[0, 4] = -1.0
    out[0, :, 1, 1] = [0.5, 0.5, 0.0, 0.0, 0.9, 1.0]
    model = constant(tmp_path, "yolo", [out], shape=input_shape(64, 64))
    det = detect(model, model_type="yolo", anchors="1&1", nb_classes=1, cell_w=2, cell_h=2)[0].detections
    assert summary(det) == [(((32, 32), (64, 64)), "0", (9000, 10000))]


def test_anchors_missing_is_einval_at_init(tmp_path: Path) -> None:
    model = constant(tmp_path, "y", yolov3_outputs()[0])
    with pytest.raises(InvalidArgumentError, match="anchors is not set") as info:
        make_filter("dnn_detect", model=model, model_type="yolov3", nb_classes=1)
    assert info.value.code == AVERROR(errno.EINVAL)


def test_too_few_anchors_fails_the_frame_with_einval(tmp_path: Path) -> None:
    outs, _ = yolov3_outputs()
    model = constant(tmp_path, "y", outs, shape=input_shape(64, 64))
    f = make_filter("dnn_detect", model=model, model_type="yolov3", anchors="8&8", nb_classes=1)
    with pytest.raises(InvalidArgumentError, match="anchor") as info:
        run_filter(f, frames())
    assert info.value.code == AVERROR(errno.EINVAL) and info.value.filter == "dnn_detect"


@pytest.mark.parametrize(
    ("outputs", "match"),
    [
        ([np.zeros((1, 1, 3, 6), np.float32)], "doesn't match ssd requirement"),
        ([np.full((1, 1, 2, 7), np.nan, np.float32)], "NaN or inf"),
    ],
)
def test_post_processing_failures_are_invaliddata(tmp_path: Path, outputs: list, match: str) -> None:
    model = constant(tmp_path, "bad", outputs)
    f = make_filter("dnn_detect", model=model)
    with pytest.raises(InvalidDataError, match=match) as info:
        run_filter(f, frames(2))
    assert info.value.code == AVERROR_INVALIDDATA
    assert f.failed  # counted, never a silently empty result


def test_unknown_labels_file_is_einval(tmp_path: Path) -> None:
    model = constant(tmp_path, "det", [ssd_output()])
    with pytest.raises(InvalidArgumentError, match="failed to open file") as info:
        make_filter("dnn_detect", model=model, labels=str(tmp_path / "nope.txt"))
    assert info.value.code == AVERROR(errno.EINVAL)


def test_existing_detections_pass_unchanged_warning_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = constant(tmp_path, "det", [ssd_output()])
    prior = Detections(
        xyxy=[[0, 0, 8, 8]], confidence=[0.7], class_id=[3], labels=("x",), frame_size=(64, 64), source="up.onnx"
    )
    inputs = frames(3)
    for fr in inputs:
        fr.side_data.detections = prior
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        out = detect(model, inputs)
    assert all(fr.detections is prior for fr in out)
    assert sum("already have bounding boxes" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("async_", [0, 1])
def test_order_batch_async(tmp_path: Path, batch_size: int, async_: int) -> None:
    model = constant(tmp_path, "det", [ssd_output()])
    out = detect(model, frames(7), batch_size=batch_size, nireq=2, **{"async": async_})
    assert [f.pts for f in out] == list(range(7))
    assert all(summary(f.detections) == [(REGION, "1", (9000, 10000))] for f in out)


def test_yolov5_greedy_nms_and_iou(tmp_path: Path) -> None:
    rows = [[32, 32, 32, 32, 1.0, 0.9, 0.0], [33, 33, 32, 32, 1.0, 0.8, 0.0], [10, 10, 4, 4, 1.0, 0.0, 0.7]]
    model = constant(tmp_path, "v5", [yolov5_output(rows)], shape=input_shape(64, 64))
    det = detect(model, model_type="yolov5")[0].detections
    assert [b.region for b in det] == [REGION, ((8, 8), (12, 12))]
    assert len(detect(model, model_type="yolov5", nms="none")[0].detections) == 3
    assert len(detect(model, model_type="yolov5", iou=0.95)[0].detections) == 3


def test_letterbox_maps_back_to_frame(tmp_path: Path) -> None:
    # 128x64 frame into a 64x64 input: scale 0.5, 16 rows of padding on top
    rows = [[32, 32, 32, 16, 1.0, 0.9, 0.0]]
    model = constant(tmp_path, "v5", [yolov5_output(rows)], shape=input_shape(64, 64))
    det = detect(model, frames(1, 128, 64), model_type="yolov5", letterbox=1)[0].detections
    np.testing.assert_allclose(det.xyxy, [[32, 16, 96, 48]])
    stretched = detect(model, frames(1, 128, 64), model_type="yolov5")[0].detections
    np.testing.assert_allclose(stretched.xyxy, [[32, 24, 96, 40]])


def _modern_outputs(model_type: str) -> tuple[list[np.ndarray], dict[str, object], tuple[int, int]]:
    if model_type == "yolov8":
        out = np.zeros((1, 6, 3), np.float32)
        out[0, :, 0] = [32, 32, 32, 32, 0.9, 0.1]
        return [out], {"nb_classes": 2}, (64, 64)
    if model_type == "yolox":
        n = 8 * 8 + 4 * 4 + 2 * 2
        out = np.full((1, n, 7), -9.0, np.float32)
        out[0, :, :4] = 0.0
        out[0, 9] = [0.0, 0.0, np.log(4.0), np.log(4.0), 9.0, 2.2, -9.0]
        return [out], {}, (64, 64)
    if model_type == "detr":
        boxes = np.array([[[0.5, 0.5, 0.5, 0.5], [0.1, 0.1, 0.1, 0.1]]], np.float32)
        logits = np.array([[[2.2, -5.0], [-5.0, -5.0]]], np.float32)
        return [logits, boxes], {}, (64, 64)
    anchors = ssd_anchors(128, 128, *CONFIGS[0])
    reg = np.zeros((1, len(anchors), 16), np.float32)
    scores = np.full((1, len(anchors), 1), -20.0, np.float32)
    scores[0, 100, 0] = 3.0
    reg[0, 100, 2:4] = 40.0
    return [reg, scores], {}, (128, 128)


@pytest.mark.parametrize("model_type", ["yolov8", "yolox", "detr", "blazeface"])
def test_modern_types_through_the_filter_equal_the_parser(tmp_path: Path, model_type: str) -> None:
    outs, opts, (ih, iw) = _modern_outputs(model_type)
    model = constant(tmp_path, model_type, outs, shape=input_shape(ih, iw))
    det = detect(model, model_type=model_type, **opts)[0].detections
    ctx = DetectContext(frame_width=64, frame_height=64, input_width=iw, input_height=ih, source=model, pts=0, **opts)  # type: ignore[arg-type]
    want = parse(model_type, outs, ctx)
    assert len(want) >= 1 and det == want
