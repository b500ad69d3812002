"""FFmpeg's YOLO parsers: ``yolo`` (v1/v2), ``yolov3`` (identity) and ``yolov4`` (sigmoid).

Math as vf_dnn_detect.c (reference s.4.3), reproduced in its own precision so that the integer
boxes match FFmpeg's: ``w = (int)(exp(w) * anchor_w * W / scale_w)`` in double, then
``x = (int)((cx + x) / cell_w * W - w / 2)`` in float32 with ``w / 2`` an int division.
Candidates are scanned box, cx, cy (FFmpeg's loop order) and filtered by FFmpeg's overlap rule.
Hardening from FFmpeg 1ae40482: batch must be 1, NaN/inf confidences skipped, anchors consumed
cumulatively across outputs with a bounds check, edges clamped to [-W, 2W] x [-H, 2H].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidArgumentError, InvalidDataError
from avdnn.media.detections import Detections, to_c_int


def _identity(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _as_4d(arr: np.ndarray, model_type: str, index: int) -> np.ndarray:
    """FFmpeg's 4-D DNNData dims: shorter tensors get leading 1s, longer ones must be 1 there; batch 1."""
    shape = tuple(arr.shape)
    if arr.ndim > 4:
        if any(d != 1 for d in shape[:-4]):
            raise InvalidDataError(
                f"{model_type}: output {index} must be 4-D [1, C, H, W] or [1, H, W, C], got {shape}"
            )
        arr = arr.reshape(shape[-4:])
    while arr.ndim < 4:
        arr = arr[None]
    if arr.shape[0] != 1:
        raise InvalidDataError(f"{model_type}: output {index} must have batch 1, got {shape}")
    return arr


def _grid(dims: tuple[int, ...], ctx: DetectContext, model_type: str) -> tuple[int, int, bool]:
    """(cell_w, cell_h, is_nhwc): from the options for v1/v2, FFmpeg's shape rule for v3/v4."""
    if model_type == "yolo":
        return ctx.cell_w, ctx.cell_h, ctx.layout == "NHWC"
    if ctx.layout == "NHWC":
        return dims[2], dims[1], True
    if ctx.layout == "NCHW":
        return dims[3], dims[2], False
    if dims[2] != dims[3] and dims[2] == dims[1]:
        return dims[2], dims[1], True
    return dims[3], dims[2], False


def _require_options(ctx: DetectContext, model_type: str) -> None:
    if model_type == "yolo" and (ctx.cell_w <= 0 or ctx.cell_h <= 0):
        raise InvalidArgumentError(
            f"{model_type}: cell_w and cell_h must be set (got {ctx.cell_w}x{ctx.cell_h})", option="cell_w"
        )
    if ctx.nb_classes <= 0:
        raise InvalidArgumentError(f"{model_type}: nb_classes is not set", option="nb_classes")
    if not ctx.anchors:
        raise InvalidArgumentError(
            f"{model_type}: anchors is not set (anchors=w0&h0&w1&h1..., in output order)", option="anchors"
        )


def _decode(
    arr: np.ndarray,
    index: int,
    anchor_offset: int,
    ctx: DetectContext,
    model_type: str,
    act: Callable[[np.ndarray], np.ndarray],
) -> tuple[dict[str, np.ndarray], int]:
    """Candidates of one output, in FFmpeg's scan order, and the anchor values it consumed."""
    dims = tuple(int(d) for d in arr.shape)
    cell_w, cell_h, nhwc = _grid(dims, ctx, model_type)
    box_size = ctx.nb_classes + 5
    total = dims[1] * dims[2] * dims[3]
    cells = cell_w * cell_h
    if cells <= 0 or total % (box_size * cells):
        raise InvalidDataError(
            f"{model_type}: wrong cell_w, cell_h or nb_classes: output {index} {dims} holds {total} values, not a "
            f"multiple of (nb_classes + 5) * cell_w * cell_h = {box_size} * {cell_w} * {cell_h}"
        )
    boxes = total // (box_size * cells)
    if anchor_offset + 2 * boxes > len(ctx.anchors):
        raise InvalidArgumentError(
            f"{model_type}: output {index} needs {2 * boxes} anchor values (at {anchor_offset}..."
            f"{anchor_offset + 2 * boxes - 1}) but only {len(ctx.anchors)} were given",
            option="anchors",
        )
    data = arr.reshape(-1)
    if nhwc:  # ((cy * cell_w + cx) * boxes + b) * box_size + k
        grid = data.reshape(cell_h, cell_w, boxes, box_size).transpose(2, 1, 0, 3)
    else:  # b * box_size * cells + k * cells + cy * cell_w + cx
        grid = data.reshape(boxes, box_size, cell_h, cell_w).transpose(0, 3, 2, 1)
    f: np.ndarray = grid.reshape(-1, box_size)  # rows in scan order: box, cx, cy
    b_idx, cx, cy = (g.reshape(-1) for g in np.indices((boxes, cell_w, cell_h)))
    scores = f[:, 5:]
    finite = np.where(np.isnan(scores), -np.inf, scores)
    best = finite.argmax(axis=1)
    label = np.where(finite.max(axis=1) > 0, best, 0)  # FFmpeg: running max starts at 0, strict >
    conf = act(f[:, 4]) * act(scores[np.arange(scores.shape[0]), label])
    anchors = np.asarray(ctx.anchors, dtype=np.float32)[anchor_offset : anchor_offset + 2 * boxes].reshape(boxes, 2)
    return {
        "f": f,
        "conf": conf.astype(np.float32),
        "label": label,
        "b": b_idx,
        "cx": cx,
        "cy": cy,
        "aw": anchors[b_idx, 0],
        "ah": anchors[b_idx, 1],
        "cell": np.broadcast_to(np.array([cell_w, cell_h]), (f.shape[0], 2)),
    }, 2 * boxes


def _parse(
    outputs: Sequence[np.ndarray], ctx: DetectContext, model_type: str, act: Callable[[np.ndarray], np.ndarray]
) -> Detections:
    _require_options(ctx, model_type)
    if not outputs:
        raise InvalidDataError(f"{model_type}: expected at least one output, got none")
    used = outputs[:1] if model_type == "yolo" else outputs  # FFmpeg: v1/v2 parse only output 0
    parts, offset = [], 0
    for i, out in enumerate(used):
        part, n = _decode(_as_4d(c.as_float(out, model_type, i), model_type, i), i, offset, ctx, model_type, act)
        offset += n if model_type != "yolo" else 0
        parts.append(part)
    cand = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    c.check_some_finite(cand["conf"], model_type, "confidences")
    keep = c.score_mask(cand["conf"], ctx.confidence)
    k = {name: v[keep] for name, v in cand.items()}
    f = k["f"]
    if model_type == "yolo":
        scale_w, scale_h = float(ctx.cell_w), float(ctx.cell_h)
    else:
        scale_w, scale_h = float(ctx.input_width), float(ctx.input_height)
    # FFmpeg computes in frame pixels; with a letterbox the same formula runs in input pixels
    tw, th = (ctx.frame_width, ctx.frame_height) if ctx.letterbox is None else (ctx.input_width, ctx.input_height)
    with np.errstate(over="ignore", invalid="ignore"):
        w_d = np.exp(f[:, 2].astype(np.float64)) * k["aw"].astype(np.float64) * tw / scale_w
        h_d = np.exp(f[:, 3].astype(np.float64)) * k["ah"].astype(np.float64) * th / scale_h
    w_i, h_i = to_c_int(w_d), to_c_int(h_d)
    half_w = np.fix(w_i / 2).astype(np.float32)  # C int division truncates toward zero
    half_h = np.fix(h_i / 2).astype(np.float32)
    cell = k["cell"].astype(np.float32)
    x_f = (k["cx"].astype(np.float32) + act(f[:, 0])) / cell[:, 0] * np.float32(tw) - half_w
    y_f = (k["cy"].astype(np.float32) + act(f[:, 1])) / cell[:, 1] * np.float32(th) - half_h
    raw = np.stack([x_f, y_f, x_f + w_d, y_f + h_d], axis=1).astype(np.float32)
    if ctx.letterbox is not None:
        xyxy = c.clamp_edges(c.input_to_frame(ctx, raw, clip=False), ctx.frame_width, ctx.frame_height)
        det = c.make(ctx, xyxy, k["conf"], k["label"])
    else:
        xyxy = c.clamp_edges(raw, ctx.frame_width, ctx.frame_height)
        ints = np.stack([to_c_int(x_f), to_c_int(y_f), w_i, h_i], axis=1)
        clamped = (xyxy != raw).any(axis=1)
        if clamped.any():  # FFmpeg 1ae40482: clamped boxes are re-derived from their clamped edges
            e = to_c_int(xyxy[clamped])
            ints[clamped] = np.stack([e[:, 0], e[:, 1], e[:, 2] - e[:, 0], e[:, 3] - e[:, 1]], axis=1)
        det = c.make(ctx, xyxy, k["conf"], k["label"], ffmpeg_xywh=ints)
    return c.suppress(ctx, det, "ffmpeg")


def parse_yolo(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolo`` (v1/v2): output 0 only, grid from cell_w/cell_h, anchors in cell units, identity."""
    return _parse(outputs, ctx, "yolo", _identity)


def parse_yolov3(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov3``: every output, grid from its shape (NCHW/NHWC), anchors in input pixels, identity."""
    return _parse(outputs, ctx, "yolov3", _identity)


def parse_yolov4(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``yolov4``: as yolov3 with a sigmoid on x, y, objectness and the class score."""
    return _parse(outputs, ctx, "yolov4", c.sigmoid)
