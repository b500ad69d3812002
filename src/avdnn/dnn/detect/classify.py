"""dnn_classify's post-processing: top-1 of one crop's output (FFmpeg's dnn_classify_post_proc).

FFmpeg takes the raw values (no softmax), the first maximum wins (strict >), and the result is
kept when ``confidence`` is reached; the label is ``labels[id]`` or the decimal id. The output
must hold at least one value. avdnn adds an optional softmax for models that emit logits, skips
NaN values, and refuses an output that holds nothing but NaN/inf.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from avdnn.dnn.detect._common import softmax
from avdnn.dnn.detect.labels import label_names
from avdnn.errors import InvalidDataError
from avdnn.media.detections import CONFIDENCE_DEN, confidence_num


@dataclass(frozen=True)
class ClassifyResult:
    """One crop's top-1: class id, label and confidence (float32 value as a float)."""

    label_id: int
    label: str
    confidence: float

    @property
    def confidence_q(self) -> tuple[int, int]:
        """FFmpeg's stored rational (int)(conf * 10000) / 10000."""
        return int(confidence_num(self.confidence)), CONFIDENCE_DEN


def classify_batch(
    output: np.ndarray, *, confidence: float = 0.5, labels: Sequence[str] | None = None, apply_softmax: bool = False
) -> list[ClassifyResult | None]:
    """Top-1 per crop of a batched output (B, ...): one result, or None below ``confidence``."""
    arr = np.asarray(output, dtype=np.float32)
    if arr.ndim < 1 or arr.shape[0] < 1:
        raise InvalidDataError(f"classify: expected an output [B, ...] with B >= 1, got shape {tuple(arr.shape)}")
    flat = arr.reshape(arr.shape[0], -1)
    if flat.shape[1] <= 0:
        raise InvalidDataError(f"classify: the output holds no values (shape {tuple(arr.shape)})")
    finite = np.isfinite(flat)
    dead = ~finite.any(axis=1)
    if dead.any():
        raise InvalidDataError(
            f"classify: every value of crop {int(np.flatnonzero(dead)[0])} is NaN or inf "
            f"(output shape {tuple(arr.shape)})"
        )
    if apply_softmax:
        flat = softmax(np.where(finite, flat, -np.inf), axis=1)
    ids = np.where(finite, flat, -np.inf).argmax(axis=1)  # first maximum, as FFmpeg's strict >
    conf = flat[np.arange(flat.shape[0]), ids].astype(np.float32)
    ok = conf >= np.float32(confidence)
    names = label_names(ids, labels)
    return [
        ClassifyResult(int(i), n, float(cv)) if k else None
        for i, n, cv, k in zip(ids.tolist(), names, conf.tolist(), ok.tolist(), strict=True)
    ]


def classify_top1(
    output: np.ndarray, *, confidence: float = 0.5, labels: Sequence[str] | None = None, apply_softmax: bool = False
) -> ClassifyResult | None:
    """Top-1 of one crop's output (any shape, e.g. [1, C] or [1, 1, 1, C])."""
    return classify_batch(
        np.asarray(output).reshape(1, -1), confidence=confidence, labels=labels, apply_softmax=apply_softmax
    )[0]
