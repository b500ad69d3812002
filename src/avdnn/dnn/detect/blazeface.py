"""BlazeFace (MediaPipe face detection): ``blazeface``.

Anchors as MediaPipe's SsdAnchorsCalculator makes them with fixed anchor size: per group of
equal consecutive strides, a ceil(H/s) x ceil(W/s) grid, centres ((x + 0.5)/w, (y + 0.5)/h),
``anchors per layer x layers in the group`` per cell. Short range: 128x128 input, strides
8, 16, 16, 16 with 2 anchors per layer (16*16*2 + 8*8*6 = 896); full range: 192x192, stride 4,
1 anchor (2304). Decode (reference models.md s.5D): cx = r0/W + ax, cy = r1/H + ay, w = r2/W,
h = r3/H; score = sigmoid(clip(c, -100, 100)); then MediaPipe's weighted NMS by default
(MediaPipe uses IoU 0.3; pass ``iou=0.3`` to match it).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections

#: (strides, anchors per layer): short range, then full range.
CONFIGS: tuple[tuple[tuple[int, ...], int], ...] = (((8, 16, 16, 16), 2), ((4,), 1))


def ssd_anchors(input_width: int, input_height: int, strides: Sequence[int], per_layer: int) -> np.ndarray:
    """(N, 2) normalised anchor centres in MediaPipe's order (group, y, x, anchor)."""
    out = []
    for stride, group in groupby(strides):
        n = len(list(group)) * per_layer
        gh, gw = -(-input_height // stride), -(-input_width // stride)
        yy, xx = np.meshgrid((np.arange(gh) + 0.5) / gh, (np.arange(gw) + 0.5) / gw, indexing="ij")
        centres = np.stack([xx.reshape(-1), yy.reshape(-1)], axis=1)
        out.append(np.repeat(centres, n, axis=0))
    return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 2), np.float32)


def parse_blazeface(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``blazeface``: regressors [1, N, 16] + scores [1, N, 1], in either order."""
    arrs = [c.as_float(o, "blazeface", i) for i, o in enumerate(outputs)]
    if len(arrs) != 2:
        raise InvalidDataError(
            f"blazeface: expected regressors [1, N, 16] and scores [1, N, 1], got {len(arrs)} outputs: {c.shapes(arrs)}"
        )
    si = [i for i, a in enumerate(arrs) if a.ndim >= 2 and a.shape[-1] == 1]
    ri = [i for i, a in enumerate(arrs) if a.ndim >= 2 and a.shape[-1] >= 4]
    if len(si) != 1 or len(ri) != 1:
        raise InvalidDataError(f"blazeface: expected regressors [1, N, 16] and scores [1, N, 1], got {c.shapes(arrs)}")
    reg = c.rows(arrs[ri[0]], arrs[ri[0]].shape[-1], "blazeface", "the regressors")
    raw = c.rows(arrs[si[0]], 1, "blazeface", "the scores")[:, 0]
    if raw.size != reg.shape[0]:
        raise InvalidDataError(
            f"blazeface: scores must have {reg.shape[0]} rows (as the regressors), got {tuple(arrs[si[0]].shape)}"
        )
    configs = ((ctx.strides, 2), (ctx.strides, 1)) if ctx.strides else CONFIGS
    anchors = None
    for strides, per_layer in configs:
        a = ssd_anchors(ctx.input_width, ctx.input_height, strides, per_layer)
        if a.shape[0] == reg.shape[0]:
            anchors = a
            break
    if anchors is None:
        counts = [ssd_anchors(ctx.input_width, ctx.input_height, s, p).shape[0] for s, p in configs]
        raise InvalidDataError(
            f"blazeface: a {ctx.input_width}x{ctx.input_height} input has {counts} anchors "
            f"(strides {[s for s, _ in configs]}), but the outputs have {reg.shape[0]} rows"
        )
    c.check_some_finite(raw, "blazeface")
    score = c.sigmoid(np.clip(raw, -100, 100))
    keep = c.score_mask(np.where(np.isfinite(raw), score, np.nan), ctx.confidence)
    r, a = reg[keep, :4].astype(np.float64), anchors[keep].astype(np.float64)
    size = np.array([ctx.input_width, ctx.input_height], dtype=np.float64)
    centre = (r[:, :2] / size + a) * size
    wh = r[:, 2:4]  # r/W normalised, times W in input pixels
    xyxy = c.input_to_frame(ctx, np.nan_to_num(np.concatenate([centre - wh / 2, centre + wh / 2], axis=1)))
    return c.suppress(ctx, c.make(ctx, xyxy, score[keep], np.zeros(int(keep.sum()), np.int32)), "weighted")
