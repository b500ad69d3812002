"""FFmpeg's SSD parsers (``model_type=ssd``) and the TF Object Detection API form (``tf``).

Math as vf_dnn_detect.c (reference s.4.2, s.4.4): keep ``conf >= confidence``; ``x = (int)(x0 *
W)``, ``w = (int)(x1 * W) - x`` with float32 products; no NMS; proposals keep their order.
Hardening from FFmpeg 1ae40482: NaN/inf scores skipped, label ids validated, edges clamped to
[-W, 2W] x [-H, 2H]. Fixed here: the TF form no longer assumes score-sorted proposals (s.7 #24).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections


def _place(ctx: DetectContext, norm: np.ndarray | None, pixels: np.ndarray | None) -> np.ndarray:
    """Frame-pixel corners from normalised (or model-input pixel) corners.

    Stretch: FFmpeg's float32 ``x0 * frame->width``. Letterbox: through the input geometry.
    """
    W, H = ctx.frame_width, ctx.frame_height
    if ctx.letterbox is None:
        if norm is None:  # FFmpeg: x0 = det / scale_w in float32, then * W
            assert pixels is not None
            scale = np.array([ctx.input_width, ctx.input_height] * 2, dtype=np.float32)
            norm = pixels.astype(np.float32) / scale
        xyxy = norm.astype(np.float32) * np.array([W, H, W, H], dtype=np.float32)
    else:
        if pixels is None:
            assert norm is not None
            pixels = norm.astype(np.float64) * np.array([ctx.input_width, ctx.input_height] * 2, dtype=np.float64)
        xyxy = c.input_to_frame(ctx, pixels, clip=False)
    return c.clamp_edges(xyxy, W, H)


def parse_ssd(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``ssd``: one [1,1,N,7] output (image_id, label, conf, x0, y0, x1, y1 normalised), or two
    outputs [1,1,N,5] (x0, y0, x1, y1 in model-input pixels, conf) + labels [1,1,N].

    avdnn extension: four outputs are read as the TF Object Detection API form (:func:`parse_tf`).
    """
    outs = [c.as_float(o, "ssd", i) for i, o in enumerate(outputs)]
    if len(outs) == 4:
        return parse_tf(outputs, ctx)
    if len(outs) == 1 and outs[0].ndim >= 2 and outs[0].shape[-1] == 7:
        det = c.rows(outs[0], 7, "ssd", "the detection output")
        cls = c.class_ids_from_float(det[:, 1])
        conf = det[:, 2]
        norm, pixels = det[:, 3:7], None
    elif len(outs) == 2 and any(o.ndim >= 2 and o.shape[-1] == 5 for o in outs):
        di = 0 if outs[0].ndim >= 2 and outs[0].shape[-1] == 5 else 1
        det = c.rows(outs[di], 5, "ssd", "the box output")
        lab = np.asarray(outputs[1 - di]).reshape(-1)
        if lab.size != det.shape[0]:
            raise InvalidDataError(
                f"ssd: the label output must have {det.shape[0]} elements (one per box of "
                f"{tuple(outs[di].shape)}), got {lab.size} in {tuple(np.shape(outputs[1 - di]))}"
            )
        cls = c.class_ids_from_float(lab)
        conf = det[:, 4]
        norm, pixels = None, det[:, 0:4]
    else:
        raise InvalidDataError(
            "ssd: model output shape doesn't match ssd requirement: expected one [1, 1, N, 7] "
            f"output or two outputs [1, 1, N, 5] + [1, 1, N], got {c.shapes(outs)}"
        )
    c.check_some_finite(conf, "ssd")
    keep = c.score_mask(conf, ctx.confidence)
    xyxy = _place(ctx, None if norm is None else norm[keep], None if pixels is None else pixels[keep])
    return c.suppress(ctx, c.make(ctx, xyxy, conf[keep], cls[keep]), "none")


def parse_tf(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``tf``: num_detections [1], scores [1,N], classes [1,N], boxes [1,N,4] (ymin, xmin, ymax, xmax
    normalised), in that order (FFmpeg's dnn_detect_post_proc_tf). Class ids index the labels
    directly (TF COCO ids are 1-based; line 0 of the labels file is normally a placeholder).
    """
    if len(outputs) != 4:
        raise InvalidDataError(
            f"tf: expected 4 outputs (num_detections, detection_scores, detection_classes, "
            f"detection_boxes), got {len(outputs)}: {c.shapes(outputs)}"
        )
    num_t, scores_t, classes_t, boxes_t = (c.as_float(o, "tf", i) for i, o in enumerate(outputs))
    if num_t.size < 1:
        raise InvalidDataError(f"tf: num_detections must hold a count, got shape {tuple(num_t.shape)}")
    boxes = c.rows(boxes_t, 4, "tf", "detection_boxes")
    n = boxes.shape[0]
    scores, classes = scores_t.reshape(-1), classes_t.reshape(-1)
    if scores.size != n or classes.size != n:
        raise InvalidDataError(
            f"tf: detection_scores and detection_classes must have {n} elements (as boxes "
            f"{tuple(boxes_t.shape)}), got {tuple(scores_t.shape)} and {tuple(classes_t.shape)}"
        )
    num_f = float(num_t.reshape(-1)[0])
    if not np.isfinite(num_f) or num_f < 0 or int(num_f) > n:
        raise InvalidDataError(f"tf: num_detections must be a count in 0..{n}, got {num_f}")
    count = int(num_f)  # FFmpeg: proposal_count = *(float *)data, truncated
    scores, classes, boxes = scores[:count], classes[:count], boxes[:count]
    c.check_some_finite(scores, "tf")
    keep = c.score_mask(scores, ctx.confidence)
    yxyx = boxes[keep]
    norm = yxyx[:, [1, 0, 3, 2]]
    xyxy = _place(ctx, norm, None)
    return c.suppress(ctx, c.make(ctx, xyxy, scores[keep], c.class_ids_from_float(classes[keep])), "none")
