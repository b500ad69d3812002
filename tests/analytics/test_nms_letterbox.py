"""Greedy NMS, FFmpeg's overlap rule, weighted NMS, and the letterbox mapping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from avdnn.dnn.detect import (
    Letterbox,
    boxes_to_frame,
    boxes_to_input,
    ffmpeg_iou,
    ffmpeg_overlap_keep,
    iou_matrix,
    letterbox,
    nms,
    stretch,
    weighted_nms,
)
from avdnn.errors import InvalidArgumentError

F32 = np.float32


def ref_greedy(boxes: np.ndarray, scores: np.ndarray, thr: float) -> list[int]:
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    keep: list[int] = []
    for i in order:
        if all(iou_matrix(boxes[i], boxes[k])[0, 0] <= thr for k in keep):
            keep.append(i)
    return keep


def ref_ffmpeg(xywh: np.ndarray, q: np.ndarray, labels: np.ndarray, thr: float) -> list[bool]:
    n = len(q)
    iou = ffmpeg_iou(xywh, xywh)
    return [
        not any(labels[i] == labels[j] and q[i] < q[j] and iou[i, j] >= F32(thr) for j in range(n)) for i in range(n)
    ]


def random_boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    xy = rng.uniform(0, 100, (n, 2))
    wh = rng.uniform(1, 40, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(F32)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), thr=st.floats(0.05, 0.95))
def test_greedy_nms_matches_reference(seed: int, n: int, thr: float) -> None:
    rng = np.random.default_rng(seed)
    boxes, scores = random_boxes(rng, n), rng.uniform(0, 1, n).astype(F32)
    assert nms(boxes, scores, thr).tolist() == ref_greedy(boxes, scores, thr)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), thr=st.floats(0.05, 0.95))
def test_ffmpeg_rule_matches_reference(seed: int, n: int, thr: float) -> None:
    rng = np.random.default_rng(seed)
    b = random_boxes(rng, n).astype(np.int64)
    xywh = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], axis=1)
    q = rng.integers(0, 4, n) * 2500  # many ties: equal confidences never suppress each other
    labels = rng.integers(0, 2, n)
    assert ffmpeg_overlap_keep(xywh, q, labels, thr).tolist() == ref_ffmpeg(xywh, q, labels, thr)


def test_greedy_vs_ffmpeg_chain() -> None:
    boxes = np.array([[0, 0, 100, 100], [30, 0, 130, 100], [60, 0, 160, 100]], F32)
    scores = np.array([0.9, 0.8, 0.7], F32)
    assert nms(boxes, scores, 0.5).tolist() == [0, 2]
    xywh = np.array([[0, 0, 100, 100], [30, 0, 100, 100], [60, 0, 100, 100]])
    assert ffmpeg_overlap_keep(xywh, [9000, 8000, 7000], [0, 0, 0], 0.5).tolist() == [True, False, False]
    assert ffmpeg_overlap_keep(xywh, [9000, 8000, 7000], [0, 1, 0], 0.5).tolist() == [True, True, True]
    # per class greedy NMS leaves other classes alone
    assert nms(boxes, scores, 0.5, class_id=np.array([0, 1, 0])).tolist() == [0, 1, 2]
    assert nms(boxes, scores, 0.5, max_det=1).tolist() == [0]


def test_ffmpeg_iou_degenerate_is_zero() -> None:
    assert ffmpeg_iou([[0, 0, 0, 0]], [[0, 0, 0, 0]]).tolist() == [[0.0]]
    assert ffmpeg_iou([[0, 0, 10, 10]], [[5, 0, 10, 10]])[0, 0] == F32(50) / F32(150)


def test_weighted_nms() -> None:
    boxes = np.array([[0, 0, 10, 10], [2, 0, 12, 10], [50, 50, 60, 60]], F32)
    scores = np.array([0.75, 0.25, 0.5], F32)
    merged, s, idx = weighted_nms(boxes, scores, 0.3)
    assert idx.tolist() == [0, 2] and s.tolist() == [0.75, 0.5]
    assert merged.tolist() == [[0.5, 0, 10.5, 10], [50, 50, 60, 60]]


def test_letterbox_geometry() -> None:
    lb = letterbox(1280, 720, 640, 640)
    assert (lb.resized_width, lb.resized_height, lb.pad_left, lb.pad_top) == (640, 360, 0, 140)
    assert lb.pad == (0, 140, 0, 140) and not lb.is_stretch
    assert letterbox(720, 1280, 640, 640, center=False).pad == (0, 0, 280, 0)
    assert stretch(64, 48, 300, 300).is_stretch
    out = boxes_to_frame(np.array([[0, 140, 640, 500], [320, 320, 320, 320]]), lb)
    assert out.tolist() == [[0, 0, 1280, 720], [640, 360, 640, 360]] and out.dtype == F32
    assert boxes_to_frame([[-10, 0, 700, 700]], lb, clip=True).tolist() == [[0, 0, 1280, 720]]
    with pytest.raises(InvalidArgumentError, match="does not fit"):
        Letterbox(10, 10, 8, 8, 8, 8, 1, 0)
    with pytest.raises(InvalidArgumentError):
        letterbox(0, 10, 8, 8)


sizes = st.integers(1, 2000)


@settings(max_examples=100, deadline=None)
@given(
    fw=sizes,
    fh=sizes,
    iw=st.integers(1, 1024),
    ih=st.integers(1, 1024),
    center=st.booleans(),
    use_stretch=st.booleans(),
    boxes=hnp.arrays(np.float64, (5, 4), elements=st.floats(-500, 2500, allow_nan=False)),
)
def test_letterbox_round_trip(
    fw: int, fh: int, iw: int, ih: int, center: bool, use_stretch: bool, boxes: np.ndarray
) -> None:
    lb = stretch(fw, fh, iw, ih) if use_stretch else letterbox(fw, fh, iw, ih, center=center)
    assert 0 < lb.resized_width <= iw and 0 < lb.resized_height <= ih
    assert lb.pad_left >= 0 and lb.pad_top >= 0
    if not use_stretch:  # one side fills the input; the aspect ratio is kept to within a pixel
        assert lb.resized_width == iw or lb.resized_height == ih
        s = min(iw / fw, ih / fh)
        assert abs(lb.resized_width - max(1, fw * s)) <= 0.5 + 1e-9
        assert abs(lb.resized_height - max(1, fh * s)) <= 0.5 + 1e-9
    back = boxes_to_frame(boxes_to_input(boxes, lb), lb)
    np.testing.assert_allclose(back, boxes.astype(F32), rtol=1e-5, atol=1e-3)
    fwd = boxes_to_input(boxes_to_frame(boxes, lb).astype(np.float64), lb)
    np.testing.assert_allclose(fwd, boxes, rtol=1e-5, atol=1e-2 * max(1, iw / fw, ih / fh))
    # the frame's own corners land on the picture's corners in the input
    corners = boxes_to_input([[0, 0, fw, fh]], lb)[0]
    np.testing.assert_allclose(
        corners, [lb.pad_left, lb.pad_top, lb.pad_left + lb.resized_width, lb.pad_top + lb.resized_height], atol=1e-6
    )
