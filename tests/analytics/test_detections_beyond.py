"""Detections' own columns (keypoints, masks, text, rotated boxes, data): aligned through every
operation that filters, reorders or merges boxes, and COCO RLE exactly as pycocotools counts it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avdnn.dnn.detect import DetectContext
from avdnn.dnn.detect._common import suppress
from avdnn.errors import InvalidArgumentError, InvalidDataError
from avdnn.media.detections import Detections, Mask
from avdnn.media.objects import rle_decode, rle_encode, rotated_bounds, rotated_corners


def coco_rle(full: np.ndarray) -> list[int]:
    """pycocotools' rleEncode, transcribed: scan column-major, count runs, starting with zeros."""
    flat = full.T.reshape(-1)
    counts, prev, run = [], 0, 0
    for v in flat.tolist():
        if v != prev:
            counts.append(run)
            run, prev = 0, v
        run += 1
    counts.append(run)
    return counts


def record(n: int = 3) -> Detections:
    rng = np.random.default_rng(1)
    x0 = np.arange(n, dtype=np.float32) * 10
    kp = rng.random((n, 2, 3)).astype(np.float32)
    masks = tuple(Mask(int(x0[i]), 0, rng.random((4, 5)) > 0.5) if i % 2 == 0 else None for i in range(n))
    return Detections(
        xyxy=np.stack([x0, x0 * 0, x0 + 5, x0 * 0 + 4], axis=1),
        confidence=np.linspace(0.9, 0.5, n),
        class_id=np.arange(n),
        frame_size=(64, 48),
        keypoints=kp,
        keypoint_names=("nose", "tail"),
        masks=masks,
        text=tuple(f"t{i}" for i in range(n)),
        text_score=np.linspace(0.1, 0.3, n),
        xywhr=np.concatenate([rng.random((n, 4)) * 10 + 5, np.full((n, 1), 0.25)], axis=1),
        data={"speed": np.arange(n) * 2.0},
    )


@pytest.mark.parametrize("seed", range(6))
def test_rle_matches_pycocotools_counting(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    mh, mw = int(rng.integers(0, h + 1)), int(rng.integers(0, w + 1))
    y, x = int(rng.integers(0, h - mh + 1)), int(rng.integers(0, w - mw + 1))
    bits = rng.random((mh, mw)) > (0.2 if seed % 2 else 0.7)
    mask = Mask(x, y, bits)
    full = np.zeros((h, w), np.uint8)
    full[y : y + mh, x : x + mw] = bits
    rle = rle_encode(mask, w, h)
    assert rle == {"size": [h, w], "counts": coco_rle(full)}
    back, bw, bh = rle_decode(rle)
    assert (bw, bh) == (w, h) and np.array_equal(back.full(w, h), full.astype(bool))


def test_rle_run_across_columns_and_full_frame() -> None:
    full = np.ones((3, 2), bool)
    assert rle_encode(Mask(0, 0, full), 2, 3)["counts"] == [0, 6]
    tail = np.zeros((3, 2), bool)
    tail[2, 0] = tail[0, 1] = True  # the bottom of column 0 runs on into the top of column 1
    assert rle_encode(Mask(0, 0, tail), 2, 3)["counts"] == coco_rle(tail.astype(np.uint8)) == [2, 2, 2]
    with pytest.raises(InvalidDataError):
        rle_decode({"size": [3, 2], "counts": [1, 2]})


def test_indexing_keeps_columns_aligned() -> None:
    det = record(4)
    sub = det[np.array([2, 0])]
    assert sub.text == ("t2", "t0")
    assert np.array_equal(sub.keypoints, det.keypoints[[2, 0]])
    assert sub.masks == (det.masks[2], det.masks[0])  # type: ignore[index]
    assert np.array_equal(sub.xywhr, det.xywhr[[2, 0]])  # type: ignore[index]
    assert sub.data["speed"].tolist() == [4.0, 0.0]  # type: ignore[index]
    assert det[det.confidence > 0.7].text == ("t0", "t1")
    assert det[0].text == "t0" and det[0].mask == det.masks[0]  # type: ignore[index]


def test_merge_fills_what_a_record_lacks() -> None:
    det = record(2)
    plain = Detections(xyxy=[[1, 1, 2, 2]], confidence=[0.5], class_id=[7], frame_size=(64, 48))
    m = Detections.merge([plain, det])
    assert len(m) == 3 and m.text == ("", "t0", "t1") and m.masks[0] is None  # type: ignore[index]
    assert np.isnan(m.keypoints[0]).all() and np.array_equal(m.keypoints[1:], det.keypoints)  # type: ignore[index]
    assert "keypoints" not in m.to_dict()["boxes"][0] and "keypoints" in m.to_dict()["boxes"][1]
    other = Detections(
        xyxy=[[1, 1, 2, 2]], confidence=[0.5], class_id=[7], keypoints=np.zeros((1, 3, 3)), frame_size=(64, 48)
    )
    with pytest.raises(InvalidArgumentError, match="keypoint sets"):
        Detections.merge([det, other])


def test_json_round_trip_is_exact() -> None:
    det = record(3)
    text = json.dumps(det.to_dict())
    back = Detections.from_dict(json.loads(text))
    assert back == det
    box = det.to_dict()["boxes"][0]
    assert box["mask"]["size"] == [48, 64] and box["keypoint_names"] == ["nose", "tail"]
    assert box["text"] == "t0" and box["angle"] == pytest.approx(0.25)


def test_shapes_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="keypoints"):
        Detections(xyxy=[[0, 0, 1, 1]], confidence=[1], class_id=[0], keypoints=np.zeros((2, 3, 3)))
    with pytest.raises(InvalidArgumentError, match="masks"):
        Detections(xyxy=[[0, 0, 1, 1]], confidence=[1], class_id=[0], masks=())
    with pytest.raises(InvalidArgumentError, match="data"):
        Detections(xyxy=[[0, 0, 1, 1]], confidence=[1], class_id=[0], data={"a": np.zeros(2)})


def test_with_text_and_tracks_keep_the_rest() -> None:
    det = record(3).with_text(1, "ABC", 0.75)
    assert det.text == ("t0", "ABC", "t2") and det.text_score[1] == np.float32(0.75)  # type: ignore[index]
    tracked = det.with_tracks([5, -1, 6])
    assert tracked.text == det.text and tracked.masks == det.masks


def test_weighted_nms_keeps_the_best_box_columns() -> None:
    det = Detections(
        xyxy=[[0, 0, 10, 10], [1, 1, 11, 11], [30, 30, 40, 40]],
        confidence=[0.6, 0.9, 0.8],
        class_id=[0, 0, 0],
        frame_size=(64, 64),
        keypoints=np.arange(9, dtype=np.float32).reshape(3, 1, 3),
        text=("a", "b", "c"),
    )
    out = suppress(DetectContext(frame_width=64, frame_height=64, iou=0.3), det, "weighted")
    assert out.text == ("b", "c")
    assert out.keypoints[:, 0, 0].tolist() == [3.0, 6.0]  # type: ignore[index]


def test_rotated_corners_and_bounds() -> None:
    r = np.array([[10, 20, 4, 2, np.pi / 2]])
    corners = rotated_corners(r)[0]
    assert np.allclose(sorted(corners[:, 0].tolist()), [9, 9, 11, 11])
    assert np.allclose(rotated_bounds(r), [[9, 18, 11, 22]])
