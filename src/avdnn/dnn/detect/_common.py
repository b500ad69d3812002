"""Shared pieces of the detection parsers: shape checks, score masks, label lookup, NMS choice.

Parsers must never return a silently empty result for garbage: a wrong shape or element count,
or a score tensor with no finite value, is InvalidDataError naming the model type and the
expected and actual shapes. Single NaN/inf scores are skipped (FFmpeg 1ae40482 hardening).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect.context import DetectContext, NmsMode
from avdnn.dnn.detect.labels import label_names
from avdnn.dnn.detect.letterbox import Letterbox, boxes_to_frame, placement
from avdnn.dnn.detect.nms import ffmpeg_overlap_keep, nms, weighted_nms
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections


def shapes(outputs: Sequence[np.ndarray]) -> str:
    return ", ".join(str(tuple(np.shape(o))) for o in outputs) or "no outputs"


def as_float(output: np.ndarray, model_type: str, index: int) -> np.ndarray:
    """Output ``index`` as a float32 array (FFmpeg's parsers read floats)."""
    try:
        return np.asarray(output, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"{model_type}: output {index} is not numeric ({type(output).__name__})") from exc


def rows(output: np.ndarray, width: int | None, model_type: str, what: str) -> np.ndarray:
    """``output`` as (N, width) rows; every leading dimension must be 1 (one image per inference)."""
    arr = np.asarray(output)
    if (
        arr.ndim < 1
        or (width is not None and (arr.ndim < 2 or arr.shape[-1] != width))
        or any(d != 1 for d in arr.shape[:-2])
    ):
        want = f"[1, ..., N, {width}]" if width is not None else "[1, ..., N]"
        raise InvalidDataError(f"{model_type}: {what} must have shape {want}, got {tuple(arr.shape)}")
    return arr.reshape(-1, width) if width is not None else arr.reshape(-1)


def table(output: np.ndarray, model_type: str, want: str = "[1, N, D] or [1, D, N]") -> np.ndarray:
    """Output 0 as a 2-D float32 table; every leading dimension must be 1 (``want`` names the shape)."""
    arr = as_float(output, model_type, 0)
    if arr.ndim < 2 or any(d != 1 for d in arr.shape[:-2]):
        raise InvalidDataError(f"{model_type}: output 0 must have shape {want}, got {tuple(arr.shape)}")
    return arr.reshape(arr.shape[-2:])


def check_some_finite(scores: np.ndarray, model_type: str, what: str = "scores") -> None:
    """A score tensor with values but no finite one is garbage, not 'nothing detected'."""
    if scores.size and not np.isfinite(scores).any():
        raise InvalidDataError(f"{model_type}: every one of the {scores.size} {what} is NaN or inf")


def best_class(cls_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class id, score) of the best class per row; NaN scores never win."""
    s = np.where(np.isnan(cls_scores), -np.inf, cls_scores)
    best = s.argmax(axis=1)
    return best, cls_scores[np.arange(s.shape[0]), best]


def score_mask(scores: np.ndarray, threshold: float) -> np.ndarray:
    """``score >= threshold`` compared in float32 as FFmpeg does; NaN/inf never pass."""
    s = np.asarray(scores, dtype=np.float32)
    return np.isfinite(s) & (s >= np.float32(threshold))


def class_ids_from_float(values: np.ndarray) -> np.ndarray:
    """(int)label as C truncates it, with NaN and negative ids as -1 (FFmpeg 1ae40482)."""
    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isfinite(v) & (v >= 0), v, -1.0)
    return np.trunc(np.minimum(v, 2**31 - 1)).astype(np.int32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """FFmpeg's ``1.f / (1.f + exp(-x))``: double math, float result."""
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))).astype(np.float32)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.nanmax(x, axis=axis, keepdims=True))
    out: np.ndarray = (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)
    return out


def clamp_edges(xyxy: np.ndarray, width: int, height: int) -> np.ndarray:
    """FFmpeg 1ae40482: edges into [-W, 2W] x [-H, 2H], x1 < x0 collapsed onto x0; NaN -> 0."""
    b = np.nan_to_num(np.asarray(xyxy, dtype=np.float32).reshape(-1, 4), nan=0.0)
    b[:, 0::2] = b[:, 0::2].clip(-width, 2 * width)
    b[:, 1::2] = b[:, 1::2].clip(-height, 2 * height)
    b[:, 2] = np.maximum(b[:, 2], b[:, 0])
    b[:, 3] = np.maximum(b[:, 3], b[:, 1])
    return b


def geometry(ctx: DetectContext) -> Letterbox:
    """The context's letterbox, or FFmpeg's stretch."""
    return ctx.letterbox or placement(
        ctx.frame_width, ctx.frame_height, ctx.input_width, ctx.input_height, use_letterbox=False
    )


def input_to_frame(ctx: DetectContext, xyxy_input: np.ndarray, *, clip: bool = True) -> np.ndarray:
    """Boxes in model-input pixels to frame pixels (clipped to the frame for the modern families)."""
    return boxes_to_frame(xyxy_input, geometry(ctx), clip=clip)


def cxcywh_to_xyxy(b: np.ndarray) -> np.ndarray:
    b = np.asarray(b, dtype=np.float32).reshape(-1, 4)
    half = b[:, 2:] / 2
    return np.concatenate([b[:, :2] - half, b[:, :2] + half], axis=1)


def make(
    ctx: DetectContext,
    xyxy: np.ndarray,
    confidence: np.ndarray,
    class_id: np.ndarray,
    ffmpeg_xywh: np.ndarray | None = None,
) -> Detections:
    """A Detections record for the context's frame, labels looked up FFmpeg's way."""
    cls = np.asarray(class_id, dtype=np.int32).reshape(-1)
    return Detections(
        xyxy=np.asarray(xyxy, dtype=np.float32).reshape(-1, 4),
        confidence=confidence,
        class_id=cls,
        labels=label_names(cls, ctx.labels),
        source=ctx.source,
        frame_size=(ctx.frame_width, ctx.frame_height),
        pts=ctx.pts,
        ffmpeg_xywh=ffmpeg_xywh,
    )


def with_columns(det: Detections, **columns: object) -> Detections:
    """``det`` with avdnn's own columns (keypoints, masks, text, xywhr, data) set."""
    return dataclasses.replace(det, **columns)  # type: ignore[arg-type]


def suppress(ctx: DetectContext, det: Detections, default: NmsMode) -> Detections:
    """Apply the context's overlap removal (``auto`` = the family's ``default``)."""
    mode = default if ctx.nms == "auto" else ctx.nms
    if len(det) == 0 or mode == "none":
        return det
    if mode == "ffmpeg":
        _, codes = np.unique(np.asarray(det.labels, dtype=object).astype(str), return_inverse=True)
        return det[ffmpeg_overlap_keep(det.ffmpeg_boxes(), det.confidence_q(), codes, ctx.confidence)]
    classes = None if ctx.class_agnostic else det.class_id
    if mode == "greedy":
        return det[nms(det.xyxy, det.confidence, ctx.iou, class_id=classes, max_det=ctx.max_det)]
    # weighted: per class (a handful), each cluster's best box carries its label and score
    groups = [np.arange(len(det))] if classes is None else [np.flatnonzero(classes == c) for c in np.unique(classes)]
    parts = []
    for g in groups:
        merged, _, best = weighted_nms(det.xyxy[g], det.confidence[g], ctx.iou, max_det=ctx.max_det)
        # the cluster's best box keeps its own keypoints, mask and text
        parts.append(dataclasses.replace(det[g[best]], xyxy=merged, ffmpeg_xywh=None))
    out = Detections.merge(parts)
    return out[np.argsort(-out.confidence, kind="stable")[: ctx.max_det]]
