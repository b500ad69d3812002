"""``yolov8_obb`` (rotated boxes) and ``yolo26`` (the end-to-end ``(1, 300, 6)`` head).

* ``yolov8_obb``: [1, 4 + nc + 1, N] (or transposed): cx, cy, w, h, class scores, angle in
  radians (Ultralytics' OBB export). Overlaps are removed by greedy NMS on the probabilistic IoU
  of the boxes' Gaussians (Ultralytics' ``batch_probiou``), per class; the rotated box is kept
  in ``xywhr`` (frame pixels) and ``xyxy`` holds its axis-aligned bounds. Under FFmpeg's
  stretch the two sides of a box scale differently: each side's vector is mapped and the angle
  follows the first side (exact for a letterbox, the usual case).
* ``yolo26``: [1, N, 6] rows of x0, y0, x1, y1 (input pixels), score, class: the model removed
  its duplicates itself (YOLO26, YOLOv10), so no NMS; rows under ``confidence`` dropped, at most
  ``max_det`` kept, best first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections
from avdnn.media.objects import rotated_bounds

_EPS = 1e-7


def _covariance(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b = r[:, 2] ** 2 / 12, r[:, 3] ** 2 / 12
    cos, sin = np.cos(r[:, 4]), np.sin(r[:, 4])
    return a * cos**2 + b * sin**2, a * sin**2 + b * cos**2, (a - b) * cos * sin


def probiou(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """(N1, N2) probabilistic IoU of rotated boxes (cx, cy, w, h, angle), Ultralytics' formula."""
    p = np.asarray(r1, dtype=np.float64).reshape(-1, 5)
    q = np.asarray(r2, dtype=np.float64).reshape(-1, 5)
    a1, b1, c1 = (v[:, None] for v in _covariance(p))
    a2, b2, c2 = (v[None, :] for v in _covariance(q))
    dx = p[:, None, 0] - q[None, :, 0]
    dy = p[:, None, 1] - q[None, :, 1]
    den = (a1 + a2) * (b1 + b2) - (c1 + c2) ** 2 + _EPS
    t1 = ((a1 + a2) * dy**2 + (b1 + b2) * dx**2) / den * 0.25
    t2 = ((c1 + c2) * (-dx) * dy) / den * 0.5
    det1 = np.clip(a1 * b1 - c1**2, 0, None)
    det2 = np.clip(a2 * b2 - c2**2, 0, None)
    t3 = np.log(((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2) / (4 * np.sqrt(det1 * det2) + _EPS) + _EPS) * 0.5
    bd = np.clip(t1 + t2 + t3, _EPS, 100.0)
    out: np.ndarray = 1.0 - np.sqrt(1.0 - np.exp(-bd) + _EPS)
    return out


def rotated_nms(
    xywhr: np.ndarray, scores: np.ndarray, iou: float, *, class_id: np.ndarray | None, max_det: int
) -> np.ndarray:
    """Greedy NMS on :func:`probiou`: kept indices, best first (ties: lower index first)."""
    r = np.asarray(xywhr, dtype=np.float64).reshape(-1, 5).copy()
    if class_id is not None and r.shape[0]:
        span = float(np.abs(r[:, :4]).max()) * 4 + 1  # classes far apart never overlap
        r[:, 0] += np.asarray(class_id, dtype=np.float64) * span
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    keep: list[int] = []
    while order.size and len(keep) < max_det:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        order = rest[probiou(r[i : i + 1], r[rest])[0] <= iou] if rest.size else rest
    return np.asarray(keep, dtype=np.intp)


def _to_frame(ctx: DetectContext, r: np.ndarray) -> np.ndarray:
    """Rotated boxes from input to frame pixels (see the module docstring for a stretch)."""
    g = c.geometry(ctx)
    sx, sy = g.resized_width / g.frame_width, g.resized_height / g.frame_height
    cos, sin = np.cos(r[:, 4]), np.sin(r[:, 4])
    wx, wy = cos * r[:, 2] / sx, sin * r[:, 2] / sy
    hx, hy = -sin * r[:, 3] / sx, cos * r[:, 3] / sy
    out = np.stack(
        [
            (r[:, 0] - g.pad_left) / sx,
            (r[:, 1] - g.pad_top) / sy,
            np.hypot(wx, wy),
            np.hypot(hx, hy),
            np.arctan2(wy, wx) if sx != sy else r[:, 4],
        ],
        axis=1,
    )
    return out.astype(np.float32)


def parse_yolov8_obb(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov8_obb``: see the module docstring."""
    if not outputs:
        raise InvalidDataError("yolov8_obb: expected one output [1, 4 + nc + 1, N], got none")
    t = c.table(outputs[0], "yolov8_obb", "[1, D, N]")
    want = 5 + ctx.nb_classes if ctx.nb_classes else None
    rows: np.ndarray = t.T if (t.shape[0] == want if want else t.shape[0] <= t.shape[1]) else t
    nc = rows.shape[1] - 5
    if nc < 1 or (want and rows.shape[1] != want):
        raise InvalidDataError(
            f"yolov8_obb: expected 4 + nb_classes ({ctx.nb_classes or '>= 1'}) + 1 values per box, "
            f"got shape {tuple(np.shape(outputs[0]))}"
        )
    cls_scores = rows[:, 4 : 4 + nc]
    cls, best = c.best_class(cls_scores)
    score = best.astype(np.float32)
    c.check_some_finite(score, "yolov8_obb")
    keep = np.flatnonzero(c.score_mask(score, ctx.confidence))
    r = np.nan_to_num(np.concatenate([rows[keep, :4], rows[keep, -1:]], axis=1)).astype(np.float64)
    if ctx.nms != "none":
        order = rotated_nms(
            r, score[keep], ctx.iou, class_id=None if ctx.class_agnostic else cls[keep], max_det=ctx.max_det
        )
        keep, r = keep[order], r[order]
    xywhr = _to_frame(ctx, r)
    xyxy = rotated_bounds(xywhr)
    xyxy[:, 0::2] = xyxy[:, 0::2].clip(0, ctx.frame_width)
    xyxy[:, 1::2] = xyxy[:, 1::2].clip(0, ctx.frame_height)
    return c.with_columns(c.make(ctx, xyxy, score[keep], cls[keep]), xywhr=xywhr)


def parse_yolo26(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolo26``: see the module docstring."""
    if not outputs:
        raise InvalidDataError("yolo26: expected one output [1, N, 6], got none")
    t = c.as_float(outputs[0], "yolo26", 0)
    if t.ndim == 3 and t.shape[0] == 1 and t.shape[1] == 6 and t.shape[2] != 6:
        t = t.transpose(0, 2, 1)
    rows = c.rows(t, 6, "yolo26", "output 0")
    c.check_some_finite(rows[:, 4], "yolo26")
    keep = np.flatnonzero(c.score_mask(rows[:, 4], ctx.confidence))
    keep = keep[np.argsort(-rows[keep, 4], kind="stable")][: ctx.max_det]
    xyxy = c.input_to_frame(ctx, c.clamp_edges(rows[keep, :4], ctx.input_width, ctx.input_height))
    return c.make(ctx, xyxy, rows[keep, 4], c.class_ids_from_float(rows[keep, 5]))


__all__ = ["parse_yolo26", "parse_yolov8_obb", "probiou", "rotated_nms"]
