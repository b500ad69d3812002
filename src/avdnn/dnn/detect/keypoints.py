"""Pose heads: ``movenet`` (one person, MoveNet SinglePose) and ``yolov8_pose`` (YOLOv8/YOLO11 -pose).

Keypoints leave in frame pixels as (x, y, score), in the model's order, named by the context's
``keypoint_names`` or, for 17 points, COCO's (nose first). The input geometry is the one every
head uses (:mod:`avdnn.dnn.detect.letterbox`), so a letterboxed MoveNet maps back exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.dnn.detect.letterbox import boxes_to_frame
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections

#: COCO's 17 person keypoints, in the order MoveNet and Ultralytics' -pose models give them.
COCO_KEYPOINTS: tuple[str, ...] = (
    "nose",
    "left_eye",
    "right_eye",
    "left_ear",
    "right_ear",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hip",
    "right_hip",
    "left_knee",
    "right_knee",
    "left_ankle",
    "right_ankle",
)

#: COCO's skeleton (pairs of keypoint indices), for drawing.
COCO_SKELETON: tuple[tuple[int, int], ...] = (
    (15, 13),
    (13, 11),
    (16, 14),
    (14, 12),
    (11, 12),
    (5, 11),
    (6, 12),
    (5, 6),
    (5, 7),
    (6, 8),
    (7, 9),
    (8, 10),
    (1, 2),
    (0, 1),
    (0, 2),
    (1, 3),
    (2, 4),
    (3, 5),
    (4, 6),
)


def keypoint_names(ctx: DetectContext, k: int, model_type: str) -> tuple[str, ...]:
    """The context's names (their count must match), COCO's for 17 points, else the indices."""
    if ctx.keypoint_names:
        if len(ctx.keypoint_names) != k:
            raise InvalidDataError(
                f"{model_type}: the model gives {k} keypoints, but {len(ctx.keypoint_names)} names were given"
            )
        return ctx.keypoint_names
    return COCO_KEYPOINTS if k == len(COCO_KEYPOINTS) else tuple(str(i) for i in range(k))


def points_to_frame(ctx: DetectContext, xy: np.ndarray) -> np.ndarray:
    """(..., 2) points in model-input pixels to frame pixels (not clipped: a joint may be off-frame)."""
    flat = np.asarray(xy, dtype=np.float32).reshape(-1, 2)
    out = boxes_to_frame(np.concatenate([flat, flat], axis=1), c.geometry(ctx))[:, :2]
    return out.reshape(np.shape(xy))


def parse_movenet(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``movenet``: [1, 1, K, 3] rows of (y, x, score), normalised to the model input.

    One person: its score is the mean keypoint score, kept at ``confidence``; its box spans the
    keypoints that reach ``confidence`` (all of them when none does). Class 0.
    """
    if len(outputs) != 1:
        raise InvalidDataError(f"movenet: expected one output [1, 1, K, 3], got {len(outputs)}: {c.shapes(outputs)}")
    t = c.rows(c.as_float(outputs[0], "movenet", 0), 3, "movenet", "output 0")
    if t.shape[0] < 1:
        raise InvalidDataError(f"movenet: output 0 holds no keypoints ({tuple(np.shape(outputs[0]))})")
    c.check_some_finite(t[:, 2], "movenet", "keypoint scores")
    score = np.nan_to_num(t[:, 2], nan=0.0)
    conf = np.float32(score.mean())
    if not conf >= np.float32(ctx.confidence):
        return c.make(ctx, np.zeros((0, 4)), np.zeros(0), np.zeros(0))
    xy = np.stack([t[:, 1] * ctx.input_width, t[:, 0] * ctx.input_height], axis=1)
    pts = points_to_frame(ctx, np.nan_to_num(xy))
    seen = c.score_mask(score, ctx.confidence)
    span = pts[seen] if seen.any() else pts
    xyxy = np.concatenate([span.min(axis=0), span.max(axis=0)])
    xyxy[0::2] = xyxy[0::2].clip(0, ctx.frame_width)
    xyxy[1::2] = xyxy[1::2].clip(0, ctx.frame_height)
    det = c.make(ctx, xyxy[None], np.array([conf]), np.zeros(1))
    kp = np.concatenate([pts, score[:, None]], axis=1)[None]
    return c.with_columns(det, keypoints=kp, keypoint_names=keypoint_names(ctx, t.shape[0], "movenet"))


def parse_yolov8_pose(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov8_pose``: [1, 4 + nc + 3K, N] (or transposed): cx, cy, w, h, class scores, then K
    keypoints (x, y in input pixels, score already a sigmoid); nc from ``nb_classes`` (default 1).
    Greedy NMS, the keypoints going with their box."""
    if not outputs:
        raise InvalidDataError("yolov8_pose: expected one output [1, 4 + nc + 3K, N], got none")
    t = c.table(outputs[0], "yolov8_pose", "[1, D, N]")
    rows: np.ndarray = t.T if t.shape[0] <= t.shape[1] else t
    nc = ctx.nb_classes or 1
    extra = rows.shape[1] - 4 - nc
    if extra < 3 or extra % 3:
        raise InvalidDataError(
            f"yolov8_pose: expected 4 + nb_classes ({nc}) + 3 x K values per box, "
            f"got shape {tuple(np.shape(outputs[0]))}"
        )
    k = extra // 3
    cls_scores = rows[:, 4 : 4 + nc]
    cls, best = c.best_class(cls_scores)
    score = best.astype(np.float32)
    c.check_some_finite(score, "yolov8_pose")
    keep = c.score_mask(score, ctx.confidence)
    r = rows[keep]
    xyxy = c.input_to_frame(ctx, np.nan_to_num(c.cxcywh_to_xyxy(r[:, :4])))
    kp = r[:, 4 + nc :].reshape(-1, k, 3)
    pts = points_to_frame(ctx, np.nan_to_num(kp[..., :2]))
    det = c.make(ctx, xyxy, score[keep], cls[keep])
    det = c.with_columns(
        det,
        keypoints=np.concatenate([pts, kp[..., 2:]], axis=2),
        keypoint_names=keypoint_names(ctx, k, "yolov8_pose"),
    )
    return c.suppress(ctx, det, "greedy")


__all__ = ["COCO_KEYPOINTS", "COCO_SKELETON", "keypoint_names", "parse_movenet", "parse_yolov8_pose", "points_to_frame"]
