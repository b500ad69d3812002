"""FFmpeg's model types (ssd, tf, yolo, yolov3, yolov4): exact boxes against FFmpeg's C math."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avdnn.dnn.detect import DetectContext, letterbox, parse, parse_anchors
from avdnn.errors import AVERROR, AVERROR_INVALIDDATA, InvalidArgumentError, InvalidDataError

F32 = np.float32
REGION = [((16, 16), (48, 48))]


def summary(det):  # type: ignore[no-untyped-def]
    return [(b.region, b.detect_label, b.detect_confidence) for b in det]


def ctx(**kw: object) -> DetectContext:
    args: dict[str, object] = {"frame_width": 64, "frame_height": 64, "input_width": 300, "input_height": 300}
    args.update(kw)
    return DetectContext(**args)  # type: ignore[arg-type]


# -- SSD and TF ----------------------------------------------------------------------------------


def test_ssd_one_output_tf_det_box() -> None:
    out = np.zeros((1, 1, 4, 7), F32)
    out[0, 0, 0] = [0, 1, 0.9, 0.25, 0.25, 0.75, 0.75]
    out[0, 0, 1] = [0, 2, 0.3, 0.1, 0.1, 0.2, 0.2]
    det = parse("ssd", [out], ctx(labels=("bg", "cat")))
    assert summary(det) == [(REGION[0], "cat", (9000, 10000))]
    assert det.source == "" and det.frame_size == (64, 64)


def test_ssd_three_dim_output_is_promoted() -> None:
    out = np.array([[[0, 1, 0.9, 0.25, 0.25, 0.75, 0.75]]], F32)  # [1, N, 7] (ONNX, FFmpeg s.9)
    assert summary(parse("ssd", [out], ctx())) == [(REGION[0], "1", (9000, 10000))]


@pytest.mark.parametrize("swap", [False, True])
def test_ssd_two_outputs_in_input_pixels(swap: bool) -> None:
    boxes = np.array([[[[75, 75, 225, 225, 0.9], [0, 0, 30, 30, 0.2]]]], F32)
    labels = np.array([[[3, 4]]], np.int64)
    outs = [labels, boxes] if swap else [boxes, labels]
    assert summary(parse("ssd", outs, ctx())) == [(REGION[0], "3", (9000, 10000))]


def test_ssd_threshold_is_inclusive_and_order_kept() -> None:
    out = np.zeros((1, 1, 3, 7), F32)
    out[0, 0, 0] = [0, 1, 0.5, 0.0, 0.0, 0.1, 0.1]
    out[0, 0, 1] = [0, 1, np.float32(0.5) - np.float32(1e-7), 0.2, 0.2, 0.3, 0.3]
    out[0, 0, 2] = [0, 1, 0.95, 0.5, 0.5, 0.9, 0.9]
    det = parse("ssd", [out], ctx(confidence=0.5))
    assert det.confidence_q().tolist() == [5000, 9500]
    assert parse("ssd", [out], ctx(confidence=0.96)).xyxy.shape == (0, 4)


def test_ssd_nan_scores_skipped_all_nan_refused() -> None:
    out = np.zeros((1, 1, 2, 7), F32)
    out[0, 0, 0] = [0, 1, np.nan, 0.25, 0.25, 0.75, 0.75]
    out[0, 0, 1] = [0, 1, 0.9, 0.25, 0.25, 0.75, 0.75]
    assert len(parse("ssd", [out], ctx())) == 1
    out[0, 0, 1, 2] = np.inf
    with pytest.raises(InvalidDataError, match="ssd: every one of the 2 scores is NaN or inf") as info:
        parse("ssd", [out], ctx())
    assert info.value.code == AVERROR_INVALIDDATA


def test_ssd_hardening_clamps_edges_and_labels() -> None:
    out = np.array([[[[0, -7, 0.9, -5.0, 0.25, 9.0, 0.1]]]], F32)  # x far out, y1 < y0
    (box,) = parse("ssd", [out], ctx())
    assert (box.x, box.w) == (-64, 192) and box.h == 0 and box.detect_label == "-1"


@pytest.mark.parametrize(
    "outs",
    [
        [np.zeros((1, 1, 4, 6), F32)],
        [np.zeros((1, 1, 4, 7), F32), np.zeros((1, 1, 4, 7), F32)],
        [np.zeros((1, 1, 4, 5), F32), np.zeros((1, 1, 3), F32)],
        [np.zeros((2, 1, 4, 7), F32)],
        [],
    ],
)
def test_ssd_bad_shapes(outs: list[np.ndarray]) -> None:
    with pytest.raises(InvalidDataError) as info:
        parse("ssd", outs, ctx())
    assert "ssd" in str(info.value) and info.value.code == AVERROR_INVALIDDATA


def tf_outputs(scores: list[float], boxes: list[list[float]], classes: list[float], num: float | None = None):  # type: ignore[no-untyped-def]
    return [
        np.array([len(scores) if num is None else num], F32),
        np.array([scores], F32),
        np.array([classes], F32),
        np.array([boxes], F32),
    ]


def test_tf_tf_det_box() -> None:
    outs = tf_outputs([0.9], [[0.25, 0.25, 0.75, 0.75]], [1])
    assert summary(parse("tf", outs, ctx(labels=("???", "person")))) == [(REGION[0], "person", (9000, 10000))]
    assert summary(parse("ssd", outs, ctx())) == [(REGION[0], "1", (9000, 10000))]  # 4 outputs -> tf


def test_tf_unsorted_scores_and_yxyx() -> None:
    # FFmpeg s.7 #24 wrote box i to slot i, assuming sorted scores; avdnn does not care
    outs = tf_outputs(
        [0.3, 0.9, 0.8, 0.95],
        [[0, 0, 0.1, 0.1], [0.25, 0.0, 0.5, 0.5], [0, 0.5, 0.25, 1.0], [0.5, 0.5, 1, 1]],
        [1, 2, 3, 4],
        num=3,
    )
    det = parse("tf", outs, ctx())
    assert [b.detect_label for b in det] == ["2", "3"]
    assert det.ffmpeg_boxes().tolist() == [[0, 16, 32, 16], [32, 0, 32, 16]]


@pytest.mark.parametrize(
    ("outs", "text"),
    [
        (tf_outputs([0.9], [[0, 0, 1, 1]], [1])[:3], "expected 4 outputs"),
        (tf_outputs([0.9], [[0, 0, 1, 1]], [1], num=2), "num_detections must be a count in 0..1"),
        (tf_outputs([0.9], [[0, 0, 1, 1]], [1], num=float("nan")), "num_detections"),
        (tf_outputs([0.9, 0.8], [[0, 0, 1, 1]], [1, 2]), "must have 1 elements"),
    ],
)
def test_tf_malformed(outs: list[np.ndarray], text: str) -> None:
    with pytest.raises(InvalidDataError, match=text):
        parse("tf", outs, ctx())


# -- YOLO: a literal transcription of vf_dnn_detect.c as the oracle -----------------------------


def c_yolo(
    outputs: list[np.ndarray],
    model_type: str,
    W: int,
    H: int,
    scale_w: int,
    scale_h: int,
    thr: float,
    nb_classes: int,
    anchors: list[float],
    cell: tuple[int, int] = (0, 0),
) -> list[tuple]:
    """dnn_detect_parse_yolo_output + dnn_detect_fill_side_data, box by box, in C's precisions."""
    act = (lambda v: F32(1.0 / (1.0 + math.exp(-float(v))))) if model_type == "yolov4" else (lambda v: F32(v))
    thr32 = F32(thr)
    anchors32 = [F32(a) for a in anchors]
    cands = []
    offset = 0
    for out in outputs[:1] if model_type == "yolo" else outputs:
        d = out.shape
        data = out.reshape(-1)
        nhwc = False
        if model_type == "yolo":
            cw, ch = cell
        elif d[2] != d[3] and d[2] == d[1]:
            nhwc, cw, ch = True, d[2], d[1]
        else:
            cw, ch = d[3], d[2]
        bs = nb_classes + 5
        boxes = d[1] * d[2] * d[3] // bs // cw // ch
        a = anchors32[offset:]
        offset += 2 * boxes if model_type != "yolo" else 0
        for b in range(boxes):
            for cx in range(cw):
                for cy in range(ch):
                    if nhwc:
                        at = [((cy * cw + cx) * boxes + b) * bs + k for k in range(bs)]
                    else:
                        at = [b * bs * cw * ch + cy * cw + cx + k * cw * ch for k in range(bs)]
                    get = data[at].__getitem__
                    conf = act(get(4))
                    x, y, w, h = act(get(0)), act(get(1)), get(2), get(3)
                    label, mx = 0, F32(0)
                    for i in range(nb_classes):
                        if get(5 + i) > mx:
                            mx, label = get(5 + i), i
                    conf = F32(conf * act(get(5 + label)))
                    if conf < thr32:
                        continue
                    bw = int(math.exp(float(w)) * float(a[b * 2]) * W / (cw if model_type == "yolo" else scale_w))
                    bh = int(math.exp(float(h)) * float(a[b * 2 + 1]) * H / (ch if model_type == "yolo" else scale_h))
                    bx = int(F32(F32(F32(F32(cx) + x) / F32(cw)) * F32(W)) - F32(int(bw / 2)))
                    by = int(F32(F32(F32(F32(cy) + y) / F32(ch)) * F32(H)) - F32(int(bh / 2)))
                    q = int(F32(conf) * F32(10000))
                    cands.append((bx, by, bw, bh, str(label), q))

    def iou(p: tuple, r: tuple) -> float:
        ow = F32(min(p[0] + p[2], r[0] + r[2]) - max(p[0], r[0]))
        oh = F32(min(p[1] + p[3], r[1] + r[3]) - max(p[1], r[1]))
        inter = F32(0) if ow < 0 or oh < 0 else F32(oh * ow)
        union = F32(F32(p[2] * p[3] + r[2] * r[3]) - inter)
        return F32(inter / union) if union > 0 else F32(0)

    return [p for p in cands if not any(p[4] == r[4] and p[5] < r[5] and iou(p, r) >= thr32 for r in cands)]


def as_tuples(det) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [(b.x, b.y, b.w, b.h, b.detect_label, b.detect_confidence[0]) for b in det]


def test_yolo_v1v2_tf_det_box() -> None:
    out = np.zeros((1, 1 * 6 * 4 * 4), F32).reshape(1, 6, 4, 4)  # 1 box, 1 class, 4x4 cells (NCHW)
    out[0, 0, 2, 1] = 1.0  # x offset at cx=1, cy=2 -> centre 2/4 of the width
    out[0, 1, 2, 1] = 0.0  # y: (2 + 0)/4
    out[0, 4, 2, 1] = 0.9  # objectness
    out[0, 5, 2, 1] = 1.0  # class 0 score
    c = ctx(cell_w=4, cell_h=4, nb_classes=1, anchors=(2.0, 2.0), confidence=0.5)
    det = parse("yolo", [out, np.ones((1, 3, 3, 3), F32)], c)  # only output 0 is parsed
    assert summary(det) == [(REGION[0], "0", (9000, 10000))]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_yolov3_tf_det_box(layout: str) -> None:
    out = np.zeros((1, 6, 4, 4), F32)
    out[0, 0, 0, 2] = 0.0
    out[0, 1, 0, 2] = 0.0
    out[0, 1, 0, 2] = 2.0  # y = (0 + 2)/4
    out[0, 4, 0, 2] = 0.9
    out[0, 5, 0, 2] = 1.0
    if layout == "NHWC":
        out = out.transpose(0, 2, 3, 1).copy()  # [1, 4, 4, 6]
    c = ctx(input_width=416, input_height=416, nb_classes=1, anchors=(208.0, 208.0))
    assert summary(parse("yolov3", [out], c)) == [(REGION[0], "0", (9000, 10000))]


def test_yolov4_tf_det_box_sigmoid() -> None:
    out = np.zeros((1, 6, 3, 3), F32)
    out[0, 4, 1, 1] = np.log(0.9 / 0.1)
    out[0, 5, 1, 1] = 50.0
    c = ctx(input_width=416, input_height=416, nb_classes=1, anchors=(208.0, 208.0))
    assert summary(parse("yolov4", [out], c)) == [(REGION[0], "0", (9000, 10000))]


def test_yolo_anchors_across_outputs_nchw_and_nhwc() -> None:
    rng = np.random.default_rng(1)
    nb = 2
    o1 = np.zeros((1, 2 * (nb + 5), 2, 2), F32)  # 2 boxes per cell, grid 2x2
    o2 = np.zeros((1, 1 * (nb + 5), 4, 4), F32)  # 1 box per cell, grid 4x4
    for o in (o1, o2):
        o[:] = rng.normal(0, 0.3, o.shape)
    o1[0, 4] = o1[0, 4 + 7] = 0.0
    o1[0, 4, 1, 0] = 0.95
    o1[0, 5, 1, 0] = 1.0
    o1[0, 7 + 4, 0, 1] = 0.8
    o1[0, 7 + 6, 0, 1] = 1.0
    o2[0, 4] = 0.0
    o2[0, 4, 3, 3] = 0.7
    o2[0, 5, 3, 3] = 1.0
    anchors = [10, 12, 30, 20, 50, 60]
    c = ctx(
        frame_width=320,
        frame_height=240,
        input_width=160,
        input_height=160,
        nb_classes=nb,
        anchors=tuple(anchors),
        confidence=0.5,
    )
    det = parse("yolov3", [o1, o2], c)
    want = c_yolo([o1, o2], "yolov3", 320, 240, 160, 160, 0.5, nb, anchors)
    assert as_tuples(det) == want and len(want) == 3
    # the widths come from anchors 0, 2 and 4: w = exp(t) * anchor * 320 / 160
    for (_, _, w, _, _, _), a, t in zip(
        want, (10, 30, 50), (o1[0, 2, 1, 0], o1[0, 9, 0, 1], o2[0, 2, 3, 3]), strict=True
    ):
        assert w == int(math.exp(float(t)) * float(np.float32(a)) * 320 / 160)
    nhwc = [o1.transpose(0, 2, 3, 1).copy(), o2.transpose(0, 2, 3, 1).copy()]
    assert as_tuples(parse("yolov3", nhwc, replace(c, layout="NHWC"))) == want
    with pytest.raises(InvalidArgumentError, match=r"output 1 needs 2 anchor values .* only 4") as info:
        parse("yolov3", [o1, o2], replace(c, anchors=tuple(anchors[:4])))
    assert info.value.code == AVERROR(22) and info.value.option == "anchors"


def test_yolo_nhwc_auto_detect_matches_ffmpeg_rule() -> None:
    rng = np.random.default_rng(2)
    o = rng.normal(0, 1, (1, 13, 13, 3 * 7)).astype(F32)  # NHWC: dims[2] != dims[3] and dims[2] == dims[1]
    anchors = [10, 13, 16, 30, 33, 23]
    c = ctx(
        frame_width=416,
        frame_height=416,
        input_width=416,
        input_height=416,
        nb_classes=2,
        anchors=tuple(anchors),
        confidence=0.3,
    )
    assert as_tuples(parse("yolov3", [o], c)) == c_yolo([o], "yolov3", 416, 416, 416, 416, 0.3, 2, anchors)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    model_type=st.sampled_from(["yolo", "yolov3", "yolov4"]),
    nhwc=st.booleans(),
    thr=st.sampled_from([0.05, 0.2, 0.5, 0.7]),
)
def test_yolo_matches_c_transcription(seed: int, model_type: str, nhwc: bool, thr: float) -> None:
    rng = np.random.default_rng(seed)
    nb, boxes, gw, gh = int(rng.integers(1, 4)), int(rng.integers(1, 4)), 5, 3
    shape = (1, boxes * (nb + 5), gh, gw)
    outs = [rng.normal(0.3, 0.6, shape).astype(F32)]
    if model_type != "yolo":
        outs.append(rng.normal(0.3, 0.6, (1, boxes * (nb + 5), 2, 4)).astype(F32))
    for o in outs:  # w, h fields small enough that no edge reaches FFmpeg 1ae40482's clamp
        o.reshape(boxes, nb + 5, -1)[:, 2:4] = rng.uniform(-1, 1, o.reshape(boxes, nb + 5, -1)[:, 2:4].shape)
    nhwc = nhwc and model_type != "yolo"
    if nhwc:
        outs = [o.transpose(0, 2, 3, 1).copy() for o in outs]
    anchors = [float(v) for v in rng.uniform(0.2, 1.5, 4 * boxes) * (1 if model_type == "yolo" else 40)]
    W, H = int(rng.integers(32, 700)), int(rng.integers(32, 500))
    c = DetectContext(
        frame_width=W,
        frame_height=H,
        input_width=320,
        input_height=224,
        confidence=thr,
        nb_classes=nb,
        anchors=tuple(anchors),
        cell_w=gw,
        cell_h=gh,
        layout="NHWC" if nhwc else "NCHW",
    )
    want = c_yolo(outs, model_type, W, H, 320, 224, thr, nb, anchors, (gw, gh)) if not nhwc else None
    got = as_tuples(parse(model_type, outs, c))
    if want is not None:
        assert got == want
    else:  # NHWC input gives what the NCHW layout of the same tensors gives
        back = [o.transpose(0, 3, 1, 2).copy() for o in outs]
        assert got == c_yolo(back, model_type, W, H, 320, 224, thr, nb, anchors, (gw, gh))


def test_yolo_greedy_instead_of_ffmpeg_rule() -> None:
    o = np.zeros((1, 6, 1, 3), F32)  # three candidates along x, same class
    o[0, 0] = [1.0, 0.3, -0.4]  # centres x = 100, 130, 160; 100x100 boxes: IoU(A,B) = IoU(B,C) = .54
    o[0, 1] = 0.5
    o[0, 4] = [0.9, 0.8, 0.7]
    o[0, 5] = 1.0
    c = {
        "frame_width": 300,
        "frame_height": 100,
        "input_width": 300,
        "input_height": 100,
        "nb_classes": 1,
        "anchors": (100.0, 100.0),
        "confidence": 0.5,
        "layout": "NCHW",
    }
    ffmpeg = parse("yolov3", [o], DetectContext(**c))  # type: ignore[arg-type]
    greedy = parse("yolov3", [o], DetectContext(**c, nms="greedy", iou=0.5))  # type: ignore[arg-type]
    # FFmpeg drops C because B outranks and overlaps it, although B itself is dropped by A
    assert ffmpeg.confidence_q().tolist() == [9000]
    assert greedy.confidence_q().tolist() == [9000, 7000]
    assert ffmpeg.ffmpeg_boxes().tolist() == [[50, 0, 100, 100]]


@pytest.mark.parametrize(
    ("kw", "err", "text"),
    [
        ({"anchors": ()}, InvalidArgumentError, "anchors is not set"),
        ({"nb_classes": 0}, InvalidArgumentError, "nb_classes is not set"),
        ({"nb_classes": 2}, InvalidDataError, "wrong cell_w, cell_h or nb_classes"),
    ],
)
def test_yolo_option_errors(kw: dict[str, object], err: type[Exception], text: str) -> None:
    c = {
        "frame_width": 64,
        "frame_height": 64,
        "input_width": 64,
        "input_height": 64,
        "nb_classes": 1,
        "anchors": (1.0, 1.0),
    }
    c.update(kw)
    with pytest.raises(err, match=text):
        parse("yolov3", [np.zeros((1, 6, 2, 2), F32)], DetectContext(**c))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="cell_w and cell_h"):
        parse("yolo", [np.zeros((1, 6, 2, 2), F32)], ctx(nb_classes=1, anchors=(1.0, 1.0)))


def test_yolo_batch_and_nan() -> None:
    c = ctx(input_width=64, input_height=64, nb_classes=1, anchors=(1.0, 1.0))
    with pytest.raises(InvalidDataError, match="batch 1"):
        parse("yolov3", [np.zeros((2, 6, 2, 2), F32)], c)
    with pytest.raises(InvalidDataError, match="yolov3: every one of the 4 confidences is NaN"):
        parse("yolov3", [np.full((1, 6, 2, 2), np.nan, F32)], c)


def test_yolo_letterbox_maps_back_to_frame() -> None:
    out = np.zeros((1, 6, 4, 4), F32)
    out[0, 1, 0, 2] = 2.0
    out[0, 4, 0, 2] = 0.9
    out[0, 5, 0, 2] = 1.0
    # 128x64 frame letterboxed into a 64x64 input: picture 64x32 at y=16
    lb = letterbox(128, 64, 64, 64)
    c = DetectContext(
        frame_width=128,
        frame_height=64,
        input_width=64,
        input_height=64,
        nb_classes=1,
        anchors=(32.0, 32.0),
        letterbox=lb,
    )
    (box,) = parse("yolov3", [out], c)
    # in input pixels the box is (16, 16)-(48, 48); the frame box is ((16-0)*2, (16-16)*2)-(96, 64)
    assert box.xyxy == (32.0, 0.0, 96.0, 64.0)


def test_parse_anchors() -> None:
    assert parse_anchors("10&13&16.5&30") == (10.0, 13.0, 16.5, 30.0)
    with pytest.raises(InvalidArgumentError, match="token 1 ''"):
        parse_anchors("10&&13")
    with pytest.raises(InvalidArgumentError, match="'abc'"):
        parse_anchors("10&abc")
