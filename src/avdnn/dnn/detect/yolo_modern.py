"""Modern YOLO heads FFmpeg lacks: ``yolov5``, ``yolov8`` (also YOLO11) and ``yolox``.

All give boxes as centre/size in model-input pixels; they are mapped to frame pixels through
the context's letterbox (or FFmpeg's stretch), clipped to the frame, and filtered by greedy
NMS with ``iou`` per class (``nms`` and ``class_agnostic`` change that).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections


def _finish(ctx: DetectContext, model_type: str, cxcywh: np.ndarray, score: np.ndarray, cls: np.ndarray) -> Detections:
    c.check_some_finite(score, model_type)
    keep = c.score_mask(score, ctx.confidence)
    xyxy = c.input_to_frame(ctx, np.nan_to_num(c.cxcywh_to_xyxy(cxcywh[keep])))
    return c.suppress(ctx, c.make(ctx, xyxy, score[keep], cls[keep]), "greedy")


def _check_classes(ctx: DetectContext, model_type: str, found: int, shape: tuple[int, ...], extra: int) -> None:
    if found < 1 or (ctx.nb_classes and found != ctx.nb_classes):
        want = ctx.nb_classes if ctx.nb_classes else ">= 1"
        raise InvalidDataError(
            f"{model_type}: expected {extra} + nb_classes ({want}) values per box, got shape {shape}"
        )


def parse_yolov5(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov5``: [1, N, 5 + nc] rows (cx, cy, w, h, objectness, class scores); score = obj * cls.

    Also YOLOv7 and YOLOX exported with its decoding in the graph.
    """
    t = c.table(outputs[0] if outputs else np.zeros(0), "yolov5")
    _check_classes(ctx, "yolov5", t.shape[1] - 5, tuple(np.shape(outputs[0])), 5)
    cls, cls_score = c.best_class(t[:, 5:])
    return _finish(ctx, "yolov5", t[:, :4], (t[:, 4] * cls_score).astype(np.float32), cls)


def parse_yolov8(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov8`` (and YOLO11): anchor free [1, 4 + nc, N]; the transposed [1, N, 4 + nc] too.

    The class axis is the one of size 4 + nb_classes, else the shorter one (N is in the thousands).
    """
    if not outputs:
        raise InvalidDataError("yolov8: expected one output [1, 4 + nc, N], got none")
    t = c.table(outputs[0], "yolov8")
    a, b = t.shape
    if ctx.nb_classes:
        want = 4 + ctx.nb_classes
        if a != want and b != want:
            raise InvalidDataError(
                f"yolov8: expected [1, {want}, N] or [1, N, {want}] for nb_classes="
                f"{ctx.nb_classes}, got {tuple(np.shape(outputs[0]))}"
            )
        rows = t.T if a == want else t
    else:
        rows = t.T if a <= b else t
    _check_classes(ctx, "yolov8", rows.shape[1] - 4, tuple(np.shape(outputs[0])), 4)
    cls, score = c.best_class(rows[:, 4:])
    return _finish(ctx, "yolov8", rows[:, :4], score.astype(np.float32), cls)


def yolox_grid(input_width: int, input_height: int, strides: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """YOLOX's (N, 2) grid cell offsets and (N,) strides: per stride, rows (y) then columns (x)."""
    grids, strs = [], []
    for s in strides:
        gh, gw = input_height // s, input_width // s
        yy, xx = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
        grids.append(np.stack([xx.reshape(-1), yy.reshape(-1)], axis=1))
        strs.append(np.full(gh * gw, s))
    return np.concatenate(grids).astype(np.float32), np.concatenate(strs).astype(np.float32)


def parse_yolox(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolox``: raw [1, N, 5 + nc] (decode_in_inference off): xy = (p + grid) * stride,
    wh = exp(p) * stride; objectness and class scores already sigmoid; strides 8, 16, 32.
    """
    if not outputs:
        raise InvalidDataError("yolox: expected one output [1, N, 5 + nc], got none")
    t = c.table(outputs[0], "yolox")
    _check_classes(ctx, "yolox", t.shape[1] - 5, tuple(np.shape(outputs[0])), 5)
    strides = ctx.strides or (8, 16, 32)
    grid, stride = yolox_grid(ctx.input_width, ctx.input_height, strides)
    if grid.shape[0] != t.shape[0]:
        raise InvalidDataError(
            f"yolox: a {ctx.input_width}x{ctx.input_height} input with strides {tuple(strides)} "
            f"has {grid.shape[0]} anchors, but the output has {t.shape[0]} "
            f"({tuple(np.shape(outputs[0]))})"
        )
    with np.errstate(over="ignore"):
        xy = (t[:, :2] + grid) * stride[:, None]
        wh = np.exp(t[:, 2:4].astype(np.float64)).astype(np.float32) * stride[:, None]
    cls, cls_score = c.best_class(t[:, 5:])
    return _finish(ctx, "yolox", np.concatenate([xy, wh], axis=1), (t[:, 4] * cls_score).astype(np.float32), cls)
