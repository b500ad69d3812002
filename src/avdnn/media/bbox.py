"""FFmpeg's per-box record (libavutil/detection_bbox.h): its size limits, C's number rules, and :class:`Box`.

The columns of :class:`~avdnn.media.detections.Detections` turn into these when a caller looks at one
box; the helpers give FFmpeg's exact integers (confidence numerators, C's float-to-int casts) and
byte limits (labels, the header's source), so that showinfo and drawbox print what FFmpeg prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from avdnn.errors import InvalidArgumentError
from avdnn.media import objects
from avdnn.media.objects import Mask

#: AV_DETECTION_BBOX_LABEL_NAME_MAX_SIZE: a label is at most 63 bytes plus NUL.
LABEL_MAX_SIZE = 64
#: sizeof(AVDetectionBBoxHeader.source): at most 255 bytes plus NUL.
SOURCE_MAX_SIZE = 256
#: AV_NUM_DETECTION_BBOX_CLASSIFY: classifications one box can hold.
NUM_CLASSIFY = 4
#: The denominator FFmpeg's detect and classify filters use for confidences.
CONFIDENCE_DEN = 10000

Classification = tuple[str, float]

#: Frame metadata key dnn_detect sets on a frame its ``interval`` skipped (no inference ran):
#: the ``track`` filter then predicts the boxes instead of updating with an empty frame.
SKIPPED_KEY = "avdnn.dnn_detect.skipped"

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def confidence_num(conf: np.ndarray | float) -> np.ndarray:
    """Numerators of FFmpeg's ``av_make_q((int)(conf * 10000), 10000)``.

    The product is taken in float32, as C does for ``float * int``: 0.9f * 10000 is 9000, not
    the 8999 a double product would truncate to. The result is clamped into int range (FFmpeg
    1ae40482 hardening) so that a huge raw score cannot overflow.
    """
    prod = np.asarray(conf, dtype=np.float32) * np.float32(CONFIDENCE_DEN)
    prod64 = np.nan_to_num(prod.astype(np.float64), nan=0.0, posinf=_INT_MAX, neginf=_INT_MIN)
    return np.trunc(np.clip(prod64, _INT_MIN, _INT_MAX)).astype(np.int32)


def to_c_int(values: np.ndarray) -> np.ndarray:
    """C's float-to-int conversion (truncation toward zero), clamped into int range."""
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=_INT_MAX, neginf=_INT_MIN)
    return np.trunc(np.clip(v, _INT_MIN, _INT_MAX)).astype(np.int32)


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes on a character boundary (av_strlcpy)."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def _check_label(label: str, what: str) -> None:
    if not isinstance(label, str):
        raise InvalidArgumentError(f"{what}: expected a str, got {type(label).__name__}")
    size = len(label.encode("utf-8"))
    if size >= LABEL_MAX_SIZE:
        raise InvalidArgumentError(
            f"{what}: expected at most {LABEL_MAX_SIZE - 1} bytes (FFmpeg's label size), got {size}: {label!r}"
        )


@dataclass(frozen=True, slots=True)
class Box:
    """One box as FFmpeg's AVDetectionBBox sees it, plus avdnn's float corners and class id."""

    x: int
    y: int
    w: int
    h: int
    detect_label: str
    detect_confidence: tuple[int, int]
    classify: tuple[Classification, ...]
    confidence: float
    class_id: int
    xyxy: tuple[float, float, float, float]
    track_id: int = -1
    predicted: bool = False
    #: avdnn's own columns for this box (avdnn.media.objects): (K, 3) keypoints, mask, text, rotated box
    keypoints: np.ndarray | None = None
    mask: Mask | None = None
    text: str = ""
    text_score: float | None = None
    xywhr: tuple[float, float, float, float, float] | None = None

    @property
    def classify_count(self) -> int:
        return len(self.classify)

    @property
    def classify_confidences(self) -> tuple[tuple[int, int], ...]:
        """The classify confidences as FFmpeg stores them: (num, 10000) rationals."""
        nums = confidence_num(np.array([c for _, c in self.classify], dtype=np.float32))
        return tuple((int(n), CONFIDENCE_DEN) for n in nums)

    @property
    def region(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """``(x, y) -> (x + w, y + h)``, the corners showinfo prints."""
        return (self.x, self.y), (self.x + self.w, self.y + self.h)


def five(row: np.ndarray) -> tuple[float, float, float, float, float]:
    """A rotated box row (cx, cy, w, h, angle) as a tuple of floats."""
    cx, cy, w, h, r = (float(v) for v in row)
    return (cx, cy, w, h, r)


def index_rows(index: slice | np.ndarray | Sequence[int] | Sequence[bool], n: int) -> np.ndarray:
    """The rows of ``n`` a slice, boolean mask or index array selects (Detections' indexing)."""
    if isinstance(index, slice):
        out: np.ndarray = np.arange(n)[index]
        return out
    arr = np.asarray(index)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise IndexError(f"boolean mask: expected shape ({n},), got {arr.shape}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, np.intp)
    if np.issubdtype(arr.dtype, np.integer):
        return arr.reshape(-1)
    raise IndexError(f"Detections index: expected an int, slice, bool mask or int array, got {arr.dtype}")


def record_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """Detections' keyword arguments from its JSON dict (``Detections.to_dict``); KeyError,
    TypeError or ValueError when it is malformed (from_dict says so as InvalidDataError)."""
    boxes = list(data["boxes"])
    return {
        "xyxy": np.array([b["xyxy"] for b in boxes], dtype=np.float32).reshape(-1, 4),
        "confidence": np.array([b["confidence"] for b in boxes], dtype=np.float32),
        "class_id": np.array([b["class_id"] for b in boxes], dtype=np.int32),
        "labels": tuple(b["label"] for b in boxes),
        "classify": tuple(tuple((c["label"], c["confidence"]) for c in b.get("classify", ())) for b in boxes),
        "source": data.get("source", ""),
        "frame_size": tuple(data.get("frame_size", (0, 0))),
        "pts": data.get("pts"),
        "ffmpeg_xywh": np.array([[b["x"], b["y"], b["w"], b["h"]] for b in boxes], dtype=np.int32).reshape(-1, 4),
        "track_id": np.array([b.get("track_id", -1) for b in boxes], dtype=np.int32),
        "predicted": np.array([bool(b.get("predicted", False)) for b in boxes], dtype=bool),
        **objects.from_boxes(boxes),
    }
