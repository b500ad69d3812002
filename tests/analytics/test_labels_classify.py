"""Labels files with FFmpeg's rules, and dnn_classify's top-1."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest

from avdnn.dnn.detect import classify_batch, classify_top1, label_names, read_labels
from avdnn.errors import AVERROR, AVERROR_INVALIDDATA, InvalidArgumentError, InvalidDataError

EINVAL = AVERROR(errno.EINVAL)


def write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "labels.txt"
    p.write_bytes(data)
    return p


def test_strip_and_skip_empty_lines(tmp_path: Path) -> None:
    p = write(tmp_path, b"person  \r\n\n   \nbicycle\ncar \r\n  leading kept\nlast without newline")
    assert read_labels(p) == ("person", "bicycle", "car", "  leading kept", "last without newline")


def test_lone_cr_stays_inside_a_line(tmp_path: Path) -> None:
    assert read_labels(write(tmp_path, b"a\rb\n")) == ("a\rb",)


def test_label_size_limit(tmp_path: Path) -> None:
    assert read_labels(write(tmp_path, b"x" * 63 + b"\n")) == ("x" * 63,)
    with pytest.raises(InvalidArgumentError, match="too long: expected at most 63 bytes, got 64") as info:
        read_labels(write(tmp_path, b"ok\n" + b"y" * 64 + b"\n"))
    assert info.value.code == EINVAL and info.value.file is not None


def test_fgets_chunks_of_255_bytes(tmp_path: Path) -> None:
    # fgets(buf, 256) reads 255 bytes at a time: "a" + 300 spaces is "a" plus an all-space chunk
    assert read_labels(write(tmp_path, b"a" + b" " * 300 + b"\nb\n")) == ("a", "b")
    assert read_labels(write(tmp_path, b"cat\0ignored after NUL\n")) == ("cat",)


def test_open_failure_is_einval_saying_why(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="No such file or directory") as info:
        read_labels(tmp_path / "missing.txt")
    assert info.value.code == EINVAL
    assert "failed to open file" in str(info.value)


def test_label_names_numeric_fallback() -> None:
    assert label_names(np.array([0, 2, 5, -1]), ("a", "b", "c")) == ("a", "c", "5", "-1")
    assert label_names([3], None) == ("3",)
    assert label_names(np.zeros(0, np.int64), ("a",)) == ()


def test_classify_top1_raw_values() -> None:
    out = np.array([[0.1, 0.7, 0.7, 0.2]], np.float32)  # ties: the first maximum wins
    r = classify_top1(out, confidence=0.5, labels=("a", "b", "c"))
    assert r is not None and (r.label_id, r.label, r.confidence_q) == (1, "b", (7000, 10000))
    assert classify_top1(out, confidence=0.75) is None
    raw = np.array([2.0, 5.0, 1.0], np.float32)  # logits > 1 are compared raw, as FFmpeg does
    r = classify_top1(raw, confidence=0.5)
    assert r is not None and r.label == "1" and r.confidence == 5.0
    r = classify_top1(raw, confidence=0.5, apply_softmax=True)
    assert r is not None and abs(r.confidence - 0.9362) < 1e-3
    nan = np.array([np.nan, 0.6, 0.1], np.float32)
    r = classify_top1(nan, confidence=0.5)
    assert r is not None and r.label_id == 1


def test_classify_batch_and_errors() -> None:
    out = np.array([[0.9, 0.1], [0.2, 0.3], [0.4, 0.6]], np.float32)
    res = classify_batch(out, confidence=0.5, labels=("cat", "dog"))
    assert [None if r is None else r.label for r in res] == ["cat", None, "dog"]
    with pytest.raises(InvalidDataError, match="every value of crop 1 is NaN") as info:
        classify_batch(np.array([[0.5, 0.1], [np.nan, np.nan]], np.float32))
    assert info.value.code == AVERROR_INVALIDDATA
    with pytest.raises(InvalidDataError, match="holds no values"):
        classify_batch(np.zeros((1, 0), np.float32))
    with pytest.raises(InvalidDataError):
        classify_top1(np.zeros(0, np.float32))
