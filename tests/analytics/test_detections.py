"""The Detections record: validation, indexing, merge, classification, JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avdnn.errors import AVERROR_INVALIDDATA, InvalidArgumentError, InvalidDataError
from avdnn.media.detections import Box, Detections, confidence_num


def rec(n: int = 3, **kw: object) -> Detections:
    xyxy = np.array([[16, 16, 48, 48], [0.5, 1.5, 10.7, 20.2], [-3.5, 2, 5, 9]], np.float32)[:n]
    args: dict[str, object] = {
        "xyxy": xyxy,
        "confidence": np.array([0.9, 0.5, 0.75], np.float32)[:n],
        "class_id": np.array([1, 2, -1], np.int32)[:n],
        "labels": ("cat", "dog", "x")[:n],
        "frame_size": (64, 64),
        "source": "det.onnx",
        "pts": 7,
    }
    args.update(kw)
    return Detections(**args)  # type: ignore[arg-type]


def test_tf_det_reference_box() -> None:
    det = Detections(xyxy=[[16, 16, 48, 48]], confidence=[0.9], class_id=[0], labels=("0",), frame_size=(64, 64))
    (box,) = list(det)
    assert (box.x, box.y, box.w, box.h) == (16, 16, 32, 32)
    assert box.region == ((16, 16), (48, 48))
    assert box.detect_confidence == (9000, 10000)


def test_confidence_is_float32_product() -> None:
    # 0.9f * 10000 in float32 is 9000; in double it would truncate to 8999
    assert confidence_num(np.float32(0.9)) == 9000
    assert confidence_num(np.float32(0.29)) == int(np.float32(0.29) * np.float32(10000))
    assert confidence_num(np.float32(np.nan)) == 0 and confidence_num(np.float32(1e30)) == 2**31 - 1


def test_ffmpeg_boxes_truncate_toward_zero() -> None:
    d = rec()
    assert d.ffmpeg_boxes().tolist() == [[16, 16, 32, 32], [0, 1, 10, 19], [-3, 2, 8, 7]]
    assert d.ffmpeg_boxes().dtype == np.int32


def test_defaults_and_empty() -> None:
    d = Detections(xyxy=np.zeros((2, 4)), confidence=[0.1, 0.2], class_id=[3, 4])
    assert d.labels == ("3", "4") and d.classify == ((), ())
    e = Detections.empty((64, 48), source="m")
    assert len(e) == 0 and e.frame_size == (64, 48) and e.xyxy.shape == (0, 4) and list(e) == []
    assert bool(e)
    assert e.to_dict()["boxes"] == []


@pytest.mark.parametrize(
    ("kw", "err", "text"),
    [
        ({"xyxy": np.zeros((3, 5))}, InvalidArgumentError, "expected shape (N, 4), got (3, 5)"),
        ({"confidence": np.zeros(2)}, InvalidArgumentError, "expected shape (3,) to match xyxy, got (2,)"),
        ({"class_id": np.zeros((3, 1))}, InvalidArgumentError, "class_id"),
        ({"labels": ("a", "b")}, InvalidArgumentError, "expected 3 labels"),
        ({"labels": ("a" * 64, "b", "c")}, InvalidArgumentError, "at most 63 bytes"),
        ({"classify": ((), ())}, InvalidArgumentError, "expected 3 rows"),
        ({"classify": (((("a", 0.5),) * 5), (), ())}, InvalidArgumentError, "at most 4 classifications"),
        ({"source": "s" * 256}, InvalidArgumentError, "source"),
        ({"frame_size": (64, -1)}, InvalidArgumentError, "frame_size"),
        ({"ffmpeg_xywh": np.zeros((2, 4))}, InvalidArgumentError, "ffmpeg_xywh"),
        ({"xyxy": np.array([[0, 0, np.nan, 1]] * 3)}, InvalidDataError, "finite"),
        ({"xyxy": np.array([[5, 0, 1, 1]] * 3)}, InvalidDataError, "x1 >= x0"),
    ],
)
def test_validation(kw: dict[str, object], err: type[Exception], text: str) -> None:
    with pytest.raises(err) as info:
        rec(**kw)
    assert text in str(info.value)


def test_immutable() -> None:
    src = np.array([[1, 2, 3, 4]], np.float32)
    d = Detections(xyxy=src, confidence=[0.5], class_id=[0])
    src[0, 0] = 99
    assert d.xyxy[0, 0] == 1
    with pytest.raises(ValueError):
        d.xyxy[0, 0] = 5
    with pytest.raises(AttributeError):
        d.source = "x"  # type: ignore[misc]


def test_indexing() -> None:
    d = rec()
    assert isinstance(d[0], Box) and d[-1].detect_label == "x"
    with pytest.raises(IndexError):
        d[3]
    m = d[np.array([True, False, True])]
    assert m.labels == ("cat", "x") and m.source == "det.onnx" and m.pts == 7
    assert d[[2, 0]].labels == ("x", "cat")
    assert d[1:].labels == ("dog", "x")
    assert len(d[np.array([], dtype=np.int64)]) == 0
    assert d[d.confidence > 0.6].class_id.tolist() == [1, -1]
    with pytest.raises(IndexError):
        d[np.array([True, False])]
    # explicit FFmpeg ints follow the selection
    e = rec(ffmpeg_xywh=[[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]])
    assert e[[2]].ffmpeg_boxes().tolist() == [[3, 3, 3, 3]]


def test_iteration_matches_columns() -> None:
    d = rec()
    boxes = list(d)
    assert [b.detect_label for b in boxes] == list(d.labels)
    assert [b.detect_confidence[0] for b in boxes] == d.confidence_q().tolist()
    assert [(b.x, b.y, b.w, b.h) for b in boxes] == [tuple(r) for r in d.ffmpeg_boxes().tolist()]


def test_merge() -> None:
    a, b = rec(2), rec(1, source="other.onnx", labels=("z",), ffmpeg_xywh=[[9, 9, 9, 9]])
    m = Detections.merge([a, b, Detections.empty((64, 64), source="det.onnx")])
    assert len(m) == 3 and m.labels == ("cat", "dog", "z")
    assert m.source == "det.onnx, other.onnx"
    assert m.ffmpeg_boxes().tolist()[2] == [9, 9, 9, 9] and m.ffmpeg_boxes().tolist()[0] == [16, 16, 32, 32]
    with pytest.raises(InvalidArgumentError, match="one frame size"):
        Detections.merge([a, rec(1, frame_size=(32, 32))])
    with pytest.raises(InvalidArgumentError):
        Detections.merge([])


def test_with_classification() -> None:
    d = rec()
    e = d.with_classification(1, "happy", 0.75)
    assert d.classify[1] == () and e.classify[1] == (("happy", 0.75),)
    for i in range(3):
        e = e.with_classification(1, f"l{i}", 0.5)
    assert e[1].classify_count == 4
    assert e[1].classify_confidences[0] == (7500, 10000)
    with pytest.raises(InvalidArgumentError, match="already has 4"):
        e.with_classification(1, "more", 0.9)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        d.with_classification(3, "x", 0.9)
    with pytest.raises(InvalidArgumentError, match="63 bytes"):
        d.with_classification(0, "y" * 64, 0.9)


def test_source_append_truncates_like_strlcat() -> None:
    d = rec(source="a" * 250)
    e = d.with_source_appended("emotion.onnx")
    assert len(e.source.encode()) == 255 and e.source.startswith("a" * 250 + ", em")
    assert rec().with_source_appended("c.onnx").source == "det.onnx, c.onnx"


def test_json_round_trip() -> None:
    d = rec(ffmpeg_xywh=None).with_classification(0, "happy", 0.8125).with_classification(0, "tabby", 0.3)
    text = json.dumps(d.to_dict())
    back = Detections.from_dict(json.loads(text))
    assert back == d
    assert back.confidence.tobytes() == d.confidence.tobytes()
    box = json.loads(text)["boxes"][0]
    assert (box["x"], box["y"], box["w"], box["h"]) == (16, 16, 32, 32)
    assert box["detect_confidence"] == [9000, 10000]
    assert box["classify"][0] == {"label": "happy", "confidence": 0.8125, "confidence_q": [8125, 10000]}


def test_from_dict_malformed() -> None:
    with pytest.raises(InvalidDataError) as info:
        Detections.from_dict({"boxes": [{"xyxy": [1, 2, 3]}]})
    assert info.value.code == AVERROR_INVALIDDATA
    with pytest.raises(InvalidDataError):
        Detections.from_dict({"source": "x"})
