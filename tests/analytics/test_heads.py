"""The heads that give more than boxes, each through dnn_detect (or dnn_classify) with a generated
constant model, against outputs computed here independently (by hand or by plain loops)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from analytics_models import constant, input_shape, lavfi_frames, make_filter, run_filter

from avdnn.dnn.detect import COCO_KEYPOINTS, ctc_greedy, label_runs, probiou
from avdnn.errors import InvalidArgumentError, InvalidDataError
from avdnn.media.detections import Detections

F32 = np.float32


def detect(model: str, w: int = 64, h: int = 64, **opts: object) -> Detections:
    frames = lavfi_frames("rgb24", w, h, 1)
    out = run_filter(make_filter("dnn_detect", model=model, **opts), frames)
    det: Detections = out[0].detections
    return det


def pad(rows: np.ndarray, n: int = 32) -> np.ndarray:
    """Candidate rows padded with empty ones: a real head has thousands, more than values per row."""
    out = np.zeros((n, rows.shape[1]), F32)
    out[: len(rows)] = rows
    return out


def lerp(grid: np.ndarray, y: float, x: float) -> float:
    """Bilinear sample with clamped edges, one point at a time (the reference for the vectorised one)."""
    h, w = grid.shape
    y, x = min(max(y, 0.0), h - 1.0), min(max(x, 0.0), w - 1.0)
    y0, x0 = math.floor(y), math.floor(x)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    fy, fx = y - y0, x - x0
    top = grid[y0, x0] * (1 - fx) + grid[y0, x1] * fx
    bottom = grid[y1, x0] * (1 - fx) + grid[y1, x1] * fx
    return float(top * (1 - fy) + bottom * fy)


# -- keypoints ---------------------------------------------------------------------------------


def test_movenet_stretch_and_letterbox(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    kp = np.zeros((1, 1, 17, 3), F32)
    kp[0, 0, :, 0] = rng.uniform(0.3, 0.7, 17)  # y
    kp[0, 0, :, 1] = rng.uniform(0.3, 0.7, 17)  # x
    kp[0, 0, :, 2] = np.linspace(0.1, 0.9, 17)  # mean 0.5
    model = constant(tmp_path, "movenet", [kp], shape=input_shape(192, 192, nhwc=True))
    det = detect(model, 64, 64, model_type="movenet", confidence=0.4)
    assert len(det) == 1 and det.keypoint_names == COCO_KEYPOINTS and det.keypoint_names[0] == "nose"
    want = np.stack([kp[0, 0, :, 1] * 64, kp[0, 0, :, 0] * 64, kp[0, 0, :, 2]], axis=1)
    np.testing.assert_allclose(det.keypoints[0], want, rtol=0, atol=1e-4)  # type: ignore[index]
    assert det.confidence[0] == pytest.approx(0.5, abs=1e-6)
    seen = want[want[:, 2] >= 0.4]
    np.testing.assert_allclose(det.xyxy[0], [*seen[:, :2].min(0), *seen[:, :2].max(0)], atol=1e-4)
    # a 128x64 frame letterboxed into 192x192: 192x96 at y offset 48, 1.5 input px per frame px
    wide = detect(model, 128, 64, model_type="movenet", confidence=0.4, letterbox=1)
    xs = kp[0, 0, :, 1] * 192 / 1.5
    ys = (kp[0, 0, :, 0] * 192 - 48) / 1.5
    np.testing.assert_allclose(wide.keypoints[0, :, :2], np.stack([xs, ys], 1), atol=1e-3)  # type: ignore[index]
    assert len(detect(model, model_type="movenet", confidence=0.6)) == 0


def test_yolov8_pose_nms_keeps_keypoints_with_their_box(tmp_path: Path) -> None:
    # 3 candidates (cx, cy, w, h, score, K=2 keypoints x, y, v); input 64x64 = frame
    rows = np.array(
        [
            [20, 20, 20, 20, 0.8, 11, 12, 0.9, 13, 14, 0.8],
            [21, 21, 20, 20, 0.9, 21, 22, 0.7, 23, 24, 0.6],  # overlaps the first (IoU > 0.45), better
            [50, 50, 10, 10, 0.6, 31, 32, 0.5, 33, 34, 0.4],
            [5, 5, 4, 4, 0.1, 0, 0, 0, 0, 0, 0],  # below confidence
        ],
        F32,
    )
    rows = pad(rows)
    model = constant(tmp_path, "pose", [rows.T[None].copy()], shape=input_shape(64, 64))
    det = detect(model, model_type="yolov8_pose")
    assert det.confidence.tolist() == pytest.approx([0.9, 0.6])
    np.testing.assert_allclose(det.xyxy, [[11, 11, 31, 31], [45, 45, 55, 55]])
    np.testing.assert_allclose(det.keypoints, [rows[1, 5:].reshape(2, 3), rows[2, 5:].reshape(2, 3)])  # type: ignore[arg-type]
    assert det.keypoint_names == ("0", "1")
    with pytest.raises(InvalidDataError, match="3 x K"):
        detect(
            constant(tmp_path, "bad", [rows[:, :-1].T[None].copy()], shape=input_shape(64, 64)),
            model_type="yolov8_pose",
        )


# -- masks -------------------------------------------------------------------------------------


def test_yolov8_seg_prototype_masks(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    protos = rng.normal(size=(1, 2, 4, 4)).astype(F32)
    preds = np.array(
        [[4, 4, 6, 5, 0.9, 0.05, 1.0, -0.5], [12, 11, 7, 8, 0.1, 0.8, -1.0, 1.5]], F32
    )  # 2 classes, 2 coef
    preds = pad(preds)
    model = constant(tmp_path, "seg", [preds.T[None].copy(), protos], shape=input_shape(16, 16))
    det = detect(model, 16, 16, model_type="yolov8_seg")
    assert det.class_id.tolist() == [0, 1] and det.masks is not None
    for i in range(2):
        cx, cy, w, h = preds[i, :4]
        x0, y0, x1, y1 = math.floor(cx - w / 2), math.floor(cy - h / 2), math.ceil(cx + w / 2), math.ceil(cy + h / 2)
        logits = np.tensordot(preds[i, 6:], protos[0], axes=1)
        want = np.zeros((y1 - y0, x1 - x0), bool)
        for r in range(y0, y1):
            for col in range(x0, x1):  # pixel centre -> prototype cell (4 cells over 16 input px)
                want[r - y0, col - x0] = lerp(logits, (r + 0.5) * 4 / 16 - 0.5, (col + 0.5) * 4 / 16 - 0.5) > 0
        mask = det.masks[i]
        assert mask is not None and (mask.x, mask.y) == (x0, y0)
        assert np.array_equal(mask.bits, want)


def test_semantic_foreground_probability(tmp_path: Path) -> None:
    prob = np.array([[0.0, 0.1, 0.2, 0.0], [0.1, 0.9, 0.95, 0.2], [0.0, 0.8, 0.7, 0.1], [0.0, 0.0, 0.1, 0.0]], F32)
    model = constant(tmp_path, "selfie", [prob[None, :, :, None]], shape=input_shape(8, 8, nhwc=True))
    det = detect(model, 8, 8, model_type="semantic", labels=str(_labels(tmp_path, "person")))
    full = np.array([[lerp(prob, (r + 0.5) / 2 - 0.5, (c + 0.5) / 2 - 0.5) for c in range(8)] for r in range(8)])
    fg = full >= 0.5
    assert len(det) == 1 and det.labels == ("person",) and det.masks is not None and det.masks[0] is not None
    assert np.array_equal(det.masks[0].full(8, 8), fg)
    rows, cols = np.nonzero(fg)
    np.testing.assert_allclose(det.xyxy[0], [cols.min(), rows.min(), cols.max() + 1, rows.max() + 1])
    assert det.confidence[0] == pytest.approx(full[fg].mean(), abs=1e-5)


def test_semantic_class_map_one_object_per_class(tmp_path: Path) -> None:
    logits = np.full((1, 3, 4, 4), -5.0, F32)
    logits[0, 0] = 5.0  # background
    logits[0, 1, :2, :2] = 9.0
    logits[0, 2, 2:, 1:] = 9.0
    logits[0, 2, 0, 3] = 9.0  # class 2 has two regions: still one object
    model = constant(tmp_path, "sem", [logits], shape=input_shape(4, 4))
    det = detect(model, 8, 8, model_type="semantic", confidence=0.9)
    assert det.class_id.tolist() == [1, 2] and det.masks is not None
    cmap = logits[0].argmax(0)
    fmap = np.array([[cmap[r // 2, c // 2] for c in range(8)] for r in range(8)])  # nearest, 2 px per cell
    for k, mask in zip((1, 2), det.masks, strict=True):
        assert mask is not None and np.array_equal(mask.full(8, 8), fmap == k)
    e = np.exp(logits[0] - logits[0].max(0))
    p = e / e.sum(0)
    assert det.confidence[1] == pytest.approx(p[2][cmap == 2].mean(), abs=1e-6)


# -- rotated and end-to-end boxes ---------------------------------------------------------------


def test_probiou_against_the_bhattacharyya_formula() -> None:
    a = np.array([[10, 10, 6, 4, 0.0]])
    b = np.array([[13, 10, 6, 4, 0.0]])
    bd = (3.0**2) / (8 * 36 / 12)  # equal covariances: dx^2 / (8 sigma_x^2)
    assert probiou(a, b)[0, 0] == pytest.approx(1 - math.sqrt(1 - math.exp(-bd)), abs=1e-6)
    assert probiou(a, a)[0, 0] == pytest.approx(1.0, abs=1e-3)
    # a box turned by 90 degrees is the same box with its sides swapped
    assert probiou(np.array([[0, 0, 6, 4, math.pi / 2]]), np.array([[0, 0, 4, 6, 0.0]]))[0, 0] == pytest.approx(
        1, abs=1e-3
    )


def test_yolov8_obb_rotated_nms_keeps_the_angle(tmp_path: Path) -> None:
    rows = np.array(
        [
            [20, 20, 16, 6, 0.7, 0.3],
            [20, 20, 16, 6, 0.9, 0.35],  # nearly the same box, better: the first goes
            [44, 40, 10, 4, 0.6, -0.8],
        ],
        F32,
    )
    rows = pad(rows)
    model = constant(tmp_path, "obb", [rows.T[None].copy()], shape=input_shape(64, 64))
    det = detect(model, model_type="yolov8_obb")
    assert det.confidence.tolist() == pytest.approx([0.9, 0.6])
    np.testing.assert_allclose(det.xywhr, rows[[1, 2]][:, [0, 1, 2, 3, 5]], atol=1e-5)  # type: ignore[arg-type]
    for box, (cx, cy, w, h, r) in zip(det.xyxy, rows[[1, 2]][:, [0, 1, 2, 3, 5]], strict=True):
        half_w = (abs(math.cos(r)) * w + abs(math.sin(r)) * h) / 2
        half_h = (abs(math.sin(r)) * w + abs(math.cos(r)) * h) / 2
        np.testing.assert_allclose(box, [cx - half_w, cy - half_h, cx + half_w, cy + half_h], atol=1e-4)
    assert det.to_dict()["boxes"][0]["angle"] == pytest.approx(0.35)


def test_yolo26_end_to_end_no_nms(tmp_path: Path) -> None:
    rows = np.zeros((1, 300, 6), F32)
    rows[0, 0] = [0, 0, 320, 320, 0.6, 2]
    rows[0, 1] = [10, 10, 330, 330, 0.8, 2]  # overlaps the first: both kept (no NMS), best first
    rows[0, 2] = [0, 0, 64, 64, 0.2, 1]
    model = constant(tmp_path, "y26", [rows], shape=input_shape(640, 640))
    det = detect(model, model_type="yolo26")
    assert det.confidence.tolist() == pytest.approx([0.8, 0.6]) and det.class_id.tolist() == [2, 2]
    np.testing.assert_allclose(det.xyxy, [[1, 1, 33, 33], [0, 0, 32, 32]])


# -- OCR ---------------------------------------------------------------------------------------


def flood(binary: np.ndarray) -> np.ndarray:
    """Reference 8-connected labelling by breadth-first flood fill, numbered in scan order."""
    labels = np.full(binary.shape, -1)
    n = 0
    for r0, c0 in zip(*np.nonzero(binary), strict=True):
        if labels[r0, c0] >= 0:
            continue
        stack = [(r0, c0)]
        labels[r0, c0] = n
        while stack:
            r, c = stack.pop()
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    if (
                        0 <= rr < binary.shape[0]
                        and 0 <= cc < binary.shape[1]
                        and binary[rr, cc]
                        and labels[rr, cc] < 0
                    ):
                        labels[rr, cc] = n
                        stack.append((rr, cc))
        n += 1
    return labels


@pytest.mark.parametrize("seed", range(5))
def test_label_runs_equals_a_flood_fill(seed: int) -> None:
    binary = np.random.default_rng(seed).random((17, 23)) > 0.55
    rows, starts, stops, comp, count = label_runs(binary)
    got = np.full(binary.shape, -1)
    for r, s, e, k in zip(rows, starts, stops, comp, strict=True):
        got[r, s:e] = k
    want = flood(binary)
    assert count == want.max() + 1
    # the same partition: a one-to-one map between the two numberings
    pairs = {(int(a), int(b)) for a, b in zip(got[binary], want[binary], strict=True)}
    assert len(pairs) == count == len({a for a, _ in pairs}) == len({b for _, b in pairs})


def test_dbnet_boxes(tmp_path: Path) -> None:
    prob = np.zeros((1, 1, 32, 64), F32)
    prob[0, 0, 4:10, 5:35] = 0.8  # a text line: 30 x 6
    prob[0, 0, 20:26, 40:60] = 0.35  # mean 0.35 < 0.5: dropped
    prob[0, 0, 28:30, 2:20] = 0.9  # 2 px high: noise
    model = constant(tmp_path, "db", [prob], shape=input_shape("H", "W"))
    det = detect(model, 64, 32, model_type="dbnet", input_multiple=32)
    grow = 30 * 6 * 1.6 / (2 * 36)
    np.testing.assert_allclose(det.xyxy, [[5 - grow, 4 - grow, 35 + grow, 10 + grow]], atol=1e-4)
    assert det.confidence[0] == pytest.approx(0.8)
    with pytest.raises(InvalidDataError, match="dbnet"):
        detect(constant(tmp_path, "db2", [prob, prob], shape=input_shape("H", "W")), 64, 32, model_type="dbnet")


def test_ctc_greedy_decoding() -> None:
    chars = ("a", "b", "c")
    steps = [1, 1, 0, 1, 2, 2, 0, 0, 3, 4]  # a a - a b b - - c <space>
    out = np.full((2, len(steps), 5), 0.01, F32)
    for t, k in enumerate(steps):
        out[0, t, k] = 0.9 - 0.01 * t
    out[1, :, 0] = 0.99  # nothing read
    (text, score), (empty, zero) = ctc_greedy(out, chars)
    assert text == "aabc " and (empty, zero) == ("", 0.0)
    kept = [0, 3, 4, 8, 9]
    assert score == pytest.approx(np.mean([0.9 - 0.01 * t for t in kept]), abs=1e-6)
    with pytest.raises(InvalidDataError, match="character set"):
        ctc_greedy(out, ("a",))


def _labels(tmp: Path, *names: str) -> Path:
    path = tmp / "labels.txt"
    path.write_text("".join(f"{n}\n" for n in names))
    return path


def _recognizer(tmp: Path, steps: list[int], chars: str) -> str:
    """A constant CTC recognizer [N, 3, 48, W] -> [N, T, C] carrying its characters as metadata."""
    out = np.full((1, len(steps), len(chars.split("\n")) + 2), 0.01, F32)
    for t, k in enumerate(steps):
        out[0, t, k] = 0.95
    path = constant(tmp, "rec", [out], shape=["N", 3, 48, "W"])
    model = onnx.load(path)
    entry = model.metadata_props.add()
    entry.key, entry.value = "character", chars
    onnx.save(model, path)
    return path


def test_ocr_detector_then_recognizer(tmp_path: Path) -> None:
    prob = np.zeros((1, 1, 64, 64), F32)
    prob[0, 0, 8:16, 8:40] = 0.9
    det_model = constant(tmp_path, "db", [prob], shape=input_shape("H", "W"))
    rec = _recognizer(tmp_path, [1, 0, 2, 2, 0, 3], "A\nV\n7")
    frames = lavfi_frames("rgb24", 64, 64, 2)
    chain = [
        make_filter("dnn_detect", model=det_model, model_type="dbnet", input_multiple=32),
        make_filter("dnn_classify", model=rec, model_type="ctc"),
    ]
    out = run_filter(chain[0], frames)
    out = run_filter(chain[1], out)
    det = out[1].detections
    assert det.text == ("AV7",) and det.text_score[0] == pytest.approx(0.95)  # type: ignore[index]
    assert det.classify == ((),) and det.to_dict()["boxes"][0]["text"] == "AV7"
    low = make_filter("dnn_classify", model=rec, model_type="ctc", confidence=0.99)
    fresh = lavfi_frames("rgb24", 64, 64, 1)
    found = run_filter(make_filter("dnn_detect", model=det_model, model_type="dbnet", input_multiple=32), fresh)
    assert run_filter(low, found)[0].detections.text is None
    plain = constant(tmp_path, "plain", [np.zeros((1, 6, 5), F32)], shape=["N", 3, 48, "W"])
    with pytest.raises(InvalidArgumentError, match="character"):
        make_filter("dnn_classify", model=plain, model_type="ctc")


def test_ctc_after_track_settles_the_text_by_vote(tmp_path: Path) -> None:
    rec = _recognizer(tmp_path, [1, 0, 2], "A\nV")
    frames = lavfi_frames("rgb24", 64, 64, 3)
    for f in frames:
        f.side_data.detections = Detections(
            xyxy=[[8, 8, 40, 16]], confidence=[0.9], class_id=[0], frame_size=(64, 64), track_id=[7]
        )
    out = run_filter(make_filter("dnn_classify", model=rec, model_type="ctc", text_votes=2), frames)
    assert [f.detections.text for f in out] == [("",), ("AV",), ("AV",)]
    with pytest.raises(InvalidArgumentError, match="text_votes"):
        make_filter("dnn_classify", model=rec, text_votes=2)
