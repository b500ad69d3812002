"""Mask heads: ``yolov8_seg`` (YOLOv8/YOLO11 -seg prototype masks) and ``semantic`` (a class map).

Masks are made in frame pixels and kept cropped (:class:`~avdnn.media.objects.Mask`): a frame
pixel's centre is mapped into the model's map through the input geometry and sampled there,
bilinearly for scores and logits, so no full-frame array is kept per object. Sampling is
separable (one index vector per axis), all numpy.

* ``yolov8_seg``: outputs [1, 4 + nc + nm, N] and prototypes [1, nm, mh, mw] (either order).
  After NMS each kept box's mask is ``coefficients @ prototypes``, sampled at the frame pixels
  inside its box and kept where the logit is > 0 (Ultralytics' ``process_mask``: upsampled
  logits thresholded at 0, cropped to the box).
* ``semantic``: scores [1, C, H, W] or [1, H, W, C] (the class axis is the smaller of axes 1
  and 3, or ``layout``), or a class map [1, H, W]. One object per class present, its mask
  every pixel of that class: C = 1 is a foreground probability (pixels at >= 0.5, sampled
  bilinearly; MediaPipe's selfie segmentation), C > 1 an argmax (sampled nearest), class 0
  being the background and not reported (Pascal VOC, ADE20K, Cityscapes' void). An object's
  score is its class's mean probability over its pixels, kept at ``confidence``. Scores outside
  0..1 are logits: sigmoid (C = 1) or softmax, unless ``score_activation`` says.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections
from avdnn.media.objects import Mask


def map_coords(ctx: DetectContext, size: int, start: int, stop: int, axis: str) -> np.ndarray:
    """Continuous coordinates in a map of ``size`` cells over the model input (align_corners
    False) of frame pixel centres ``start..stop-1`` along ``axis`` ("x" or "y")."""
    g = c.geometry(ctx)
    if axis == "x":
        scale, pad, extent = g.resized_width / g.frame_width, g.pad_left, g.input_width
    else:
        scale, pad, extent = g.resized_height / g.frame_height, g.pad_top, g.input_height
    u = (np.arange(start, stop, dtype=np.float64) + 0.5) * scale + pad
    out: np.ndarray = u * (size / extent) - 0.5
    return out


def bilinear(grid: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """``grid`` (..., H, W) sampled at rows ``ys`` x columns ``xs`` (edge-clamped), (..., len(ys), len(xs))."""
    h, w = grid.shape[-2:]
    ys = ys.clip(0, h - 1)
    xs = xs.clip(0, w - 1)
    y0 = np.floor(ys).astype(np.intp)
    x0 = np.floor(xs).astype(np.intp)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy = (ys - y0).astype(np.float32)[:, None]
    wx = (xs - x0).astype(np.float32)
    rows = grid[..., y0, :] * (1 - wy) + grid[..., y1, :] * wy  # separable: rows first, then columns
    out: np.ndarray = rows[..., x0] * (1 - wx) + rows[..., x1] * wx
    return out


def nearest(size: int, coords: np.ndarray) -> np.ndarray:
    """The map cell each continuous coordinate falls in."""
    out: np.ndarray = np.floor(coords + 0.5).clip(0, size - 1).astype(np.intp)
    return out


def _box_window(ctx: DetectContext, xyxy: np.ndarray) -> tuple[int, int, int, int]:
    x0 = int(np.clip(np.floor(xyxy[0]), 0, ctx.frame_width))
    y0 = int(np.clip(np.floor(xyxy[1]), 0, ctx.frame_height))
    x1 = int(np.clip(np.ceil(xyxy[2]), x0, ctx.frame_width))
    y1 = int(np.clip(np.ceil(xyxy[3]), y0, ctx.frame_height))
    return x0, y0, x1, y1


def proto_mask(ctx: DetectContext, coef: np.ndarray, protos: np.ndarray, xyxy: np.ndarray) -> Mask:
    """One object's mask from its coefficients: the prototype window under its box only."""
    x0, y0, x1, y1 = _box_window(ctx, xyxy)
    nm, mh, mw = protos.shape
    if x1 <= x0 or y1 <= y0:
        return Mask(x0, y0, np.zeros((y1 - y0, x1 - x0), bool))
    xs = map_coords(ctx, mw, x0, x1, "x").clip(0, mw - 1)
    ys = map_coords(ctx, mh, y0, y1, "y").clip(0, mh - 1)
    c0, c1 = int(np.floor(xs.min())), min(int(np.floor(xs.max())) + 2, mw)
    r0, r1 = int(np.floor(ys.min())), min(int(np.floor(ys.max())) + 2, mh)
    window = protos[:, r0:r1, c0:c1]
    logits = (coef.astype(np.float32) @ window.reshape(nm, -1)).reshape(r1 - r0, c1 - c0)
    return Mask(x0, y0, bilinear(logits, ys - r0, xs - c0) > 0)


def parse_yolov8_seg(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov8_seg``: boxes as ``yolov8`` plus nm mask coefficients, and the prototypes."""
    arrs = [c.as_float(o, "yolov8_seg", i) for i, o in enumerate(outputs)]
    protos_i = [i for i, a in enumerate(arrs) if a.ndim == 4]
    preds_i = [i for i, a in enumerate(arrs) if a.ndim == 3]
    if len(arrs) != 2 or len(protos_i) != 1 or len(preds_i) != 1 or arrs[protos_i[0]].shape[0] != 1:
        raise InvalidDataError(
            f"yolov8_seg: expected outputs [1, 4 + nc + nm, N] and prototypes [1, nm, mh, mw], got {c.shapes(arrs)}"
        )
    protos = arrs[protos_i[0]][0]
    t = arrs[preds_i[0]]
    if t.shape[0] != 1:
        raise InvalidDataError(f"yolov8_seg: output must have shape [1, D, N], got {tuple(t.shape)}")
    t = t[0]
    nm = protos.shape[0]
    rows = t.T if t.shape[0] <= t.shape[1] else t
    nc = rows.shape[1] - 4 - nm
    if nc < 1 or (ctx.nb_classes and nc != ctx.nb_classes):
        raise InvalidDataError(
            f"yolov8_seg: expected 4 + nb_classes ({ctx.nb_classes or '>= 1'}) + {nm} values per box, "
            f"got shape {tuple(arrs[preds_i[0]].shape)}"
        )
    cls_scores = rows[:, 4 : 4 + nc]
    cls, best = c.best_class(cls_scores)
    score = best.astype(np.float32)
    c.check_some_finite(score, "yolov8_seg")
    keep = c.score_mask(score, ctx.confidence)
    r = rows[keep]
    xyxy = c.input_to_frame(ctx, np.nan_to_num(c.cxcywh_to_xyxy(r[:, :4])))
    det = c.with_columns(c.make(ctx, xyxy, score[keep], cls[keep]), data={"coef": r[:, 4 + nc :]})
    det = c.suppress(ctx, det, "greedy")
    assert det.data is not None
    coef = det.data["coef"]
    masks = tuple(proto_mask(ctx, coef[i], protos, det.xyxy[i]) for i in range(len(det)))
    return c.with_columns(det, data=None, masks=masks)


def _scores(t: np.ndarray, ctx: DetectContext) -> np.ndarray:
    """(C, H, W) scores of a semantic output, activated when they are logits."""
    if t.ndim != 4 or t.shape[0] != 1:
        raise InvalidDataError(f"semantic: expected scores [1, C, H, W] or [1, H, W, C], got {tuple(t.shape)}")
    nhwc = ctx.layout == "NHWC" or (ctx.layout == "auto" and t.shape[3] < t.shape[1])
    s = t[0].transpose(2, 0, 1) if nhwc else t[0]
    act = ctx.score_activation
    if act == "auto":
        finite = s[np.isfinite(s)]
        logits = finite.size and (finite.min() < 0 or finite.max() > 1)
        act = ("sigmoid" if s.shape[0] == 1 else "softmax") if logits else "none"
    if act == "sigmoid":
        return c.sigmoid(s)
    if act == "softmax":
        return c.softmax(s, axis=0)
    out: np.ndarray = np.nan_to_num(s, nan=0.0)
    return out


def parse_semantic(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``semantic``: a per-pixel class map -> one object per class present, with its mask."""
    if len(outputs) != 1:
        raise InvalidDataError(f"semantic: expected one output, got {len(outputs)}: {c.shapes(outputs)}")
    t = np.asarray(outputs[0])
    fw, fh = ctx.frame_width, ctx.frame_height
    if t.ndim == 3 and t.shape[0] == 1:  # an argmax already taken in the graph
        cmap = t[0].astype(np.int64)
        probs = None
    else:
        probs = _scores(c.as_float(t, "semantic", 0), ctx)
        c.check_some_finite(probs, "semantic")
        cmap = probs.argmax(axis=0) if probs.shape[0] > 1 else None
    mh, mw = (cmap if cmap is not None else probs).shape[-2:]  # type: ignore[union-attr]
    xs, ys = map_coords(ctx, mw, 0, fw, "x"), map_coords(ctx, mh, 0, fh, "y")
    found: list[tuple[int, float, Mask]] = []
    if cmap is None:  # one foreground probability
        assert probs is not None
        p = bilinear(probs[0], ys, xs)
        fg = p >= np.float32(0.5)
        if fg.any():
            found.append((0, float(p[fg].mean()), Mask(0, 0, fg).tight()))
    else:
        iy, ix = nearest(mh, ys), nearest(mw, xs)  # non-decreasing: a cell's pixels are one range
        for k in np.unique(cmap).tolist():  # the classes of the map's cells, not of every frame pixel
            if k <= 0:
                continue
            cells = cmap == k
            score = 1.0 if probs is None else float(probs[k][cells].mean())
            if not np.float32(score) >= np.float32(ctx.confidence):
                continue  # judged on the map's cells: no mask made for a class that is dropped
            r = np.flatnonzero(cells.any(axis=1))
            col = np.flatnonzero(cells.any(axis=0))
            y0, y1 = np.searchsorted(iy, r[0]), np.searchsorted(iy, r[-1], side="right")
            x0, x1 = np.searchsorted(ix, col[0]), np.searchsorted(ix, col[-1], side="right")
            # nearest sampling of only the window the class's cells cover, rows then columns
            bits = np.take(np.take(cells, iy[y0:y1], axis=0), ix[x0:x1], axis=1)
            if not bits.any():
                continue
            found.append((int(k), score, Mask(int(x0), int(y0), bits).tight()))
    kept = [f for f in found if np.float32(f[1]) >= np.float32(ctx.confidence)]
    xyxy = [[m.x, m.y, m.x + m.shape[1], m.y + m.shape[0]] for _, _, m in kept]
    det = c.make(
        ctx, np.asarray(xyxy, np.float32), np.array([s for _, s, _ in kept]), np.array([k for k, _, _ in kept])
    )
    return c.with_columns(det, masks=tuple(m for _, _, m in kept))


__all__ = ["bilinear", "map_coords", "nearest", "parse_semantic", "parse_yolov8_seg", "proto_mask"]
