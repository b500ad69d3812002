"""A TF Object Detection API SSD cut before its post-processor (``tf_ssd``): decode and NMS here.

The whole graph ends in a post-processor that runs a non-max suppression loop per class (90 for
COCO) inside the runtime, one small op at a time; cut before it (``output=Squeeze&concat_1&
Concatenate/concat`` for the zoo's SSD-MobileNet-v2: box encodings, class logits, anchors), the
network runs as one block and this module does the rest in vectorised numpy, as the graph does it:

* scores: ``sigmoid(logits)`` (``score_activation``: auto = sigmoid, the graph's
  ``convert_scores``; softmax and none as the pipeline config says), background column 0 dropped,
  so class ids are 1-based as the whole graph's ``detection_classes``;
* boxes: the FasterRcnnBoxCoder with scale factors 10, 10, 5, 5 (the graph's ``Decode``):
  ``yc = ty / 10 * ha + yca``, ``h = exp(th / 5) * ha`` (x, w alike), normalised to the
  300x300 input the graph resized the frame to, clipped to [0, 1], empty boxes dropped
  (``ClipToWindow``);
* per-class greedy NMS at ``iou`` (the graph's 0.6: a box is dropped when its IoU with a kept
  box of its class is above it), at most ``max_det`` per class and in all, best first.

The graph keeps scores above 0.3 and dnn_detect then keeps those >= ``confidence``; here only
``confidence`` applies (the zoo's 0.5 gives the same boxes; a lower one gives more than the
whole graph could). Boxes are placed in the frame as ``tf`` places them (float32 ``x * W``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.dnn.detect.nms import nms
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections

__all__ = ["BOX_SCALES", "decode_boxes", "parse_tf_ssd"]

#: the FasterRcnnBoxCoder's scale factors (ty, tx, th, tw), as the graph's Decode divides by them
BOX_SCALES = np.array([10.0, 10.0, 5.0, 5.0], dtype=np.float32)
_NAME = "tf_ssd"


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """(ymin, xmin, ymax, xmax) from encodings (ty, tx, th, tw) and anchors in the same corners, float32."""
    a = anchors.astype(np.float32, copy=False)
    ha, wa = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    yca, xca = a[:, 0] + ha / 2, a[:, 1] + wa / 2
    t = encodings.astype(np.float32, copy=False) / BOX_SCALES
    yc, xc = t[:, 0] * ha + yca, t[:, 1] * wa + xca
    h, w = np.exp(t[:, 2]) * ha, np.exp(t[:, 3]) * wa
    return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=1)


def _candidates(logits: np.ndarray, ctx: DetectContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(anchor, class id, score) of every score >= confidence, background excluded."""
    activation = "sigmoid" if ctx.score_activation == "auto" else ctx.score_activation
    body = logits[:, 1:]
    if activation == "sigmoid":
        # sigmoid is monotonic: compare the logits first (a margin keeps float rounding on the safe side),
        # then take the exact scores of the few that pass
        conf = float(ctx.confidence)
        bound = -np.inf if conf <= 0 else np.inf if conf >= 1 else np.log(conf / (1 - conf)) - 1e-3
        anchor, cls = np.nonzero(body >= bound)
        scores = c.sigmoid(body[anchor, cls])
    else:
        probs = c.softmax(logits, axis=1)[:, 1:] if activation == "softmax" else body
        anchor, cls = np.nonzero(np.isfinite(probs) & (probs >= np.float32(ctx.confidence)))
        scores = probs[anchor, cls].astype(np.float32)
    keep = c.score_mask(scores, ctx.confidence)
    return anchor[keep], cls[keep] + 1, scores[keep]


def parse_tf_ssd(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``tf_ssd``: box encodings [1, N, 4], class logits [1, N, 1 + classes], anchors [N, 4] (or [1, N, 4])."""
    if len(outputs) != 3:
        raise InvalidDataError(
            f"{_NAME}: expected box encodings [1, N, 4], class logits [1, N, C] and anchors [N, 4] "
            f"(in that order), got {len(outputs)} outputs: {c.shapes(outputs)}"
        )
    arrs = [c.as_float(o, _NAME, i) for i, o in enumerate(outputs)]
    enc = c.rows(arrs[0], 4, _NAME, "the box encodings")
    logits = c.rows(arrs[1], arrs[1].shape[-1] if arrs[1].ndim >= 2 else None, _NAME, "the class logits")
    anchors = c.rows(arrs[2], 4, _NAME, "the anchors")
    if logits.ndim != 2 or logits.shape[1] < 2 or not enc.shape[0] == logits.shape[0] == anchors.shape[0]:
        raise InvalidDataError(
            f"{_NAME}: box encodings, class logits (background + classes) and anchors must have one row "
            f"per anchor, got {c.shapes(arrs)}"
        )
    c.check_some_finite(logits, _NAME, "class logits")
    anchor, cls, scores = _candidates(logits, ctx)
    yxyx = np.clip(decode_boxes(enc[anchor], anchors[anchor]), 0.0, 1.0)
    area = (yxyx[:, 2] - yxyx[:, 0]) * (yxyx[:, 3] - yxyx[:, 1])
    ok = np.isfinite(area) & (area > 0)
    norm, scores, cls = yxyx[ok][:, [1, 0, 3, 2]], scores[ok], cls[ok]
    mode = "greedy" if ctx.nms == "auto" else ctx.nms
    if mode in ("ffmpeg", "weighted"):  # another overlap rule, asked for by name
        return c.suppress(ctx, c.make(ctx, _place(ctx, norm), scores, cls), mode)
    if mode == "greedy":
        keep = nms(norm, scores, ctx.iou, class_id=None if ctx.class_agnostic else cls, max_det=ctx.max_det)
    else:
        keep = np.argsort(-scores, kind="stable")[: ctx.max_det]
    return c.make(ctx, _place(ctx, norm[keep]), scores[keep], cls[keep])


def _place(ctx: DetectContext, norm: np.ndarray) -> np.ndarray:
    """Frame pixels from normalised corners, as the ``tf`` form places the whole graph's boxes."""
    W, H = ctx.frame_width, ctx.frame_height
    if ctx.letterbox is None:
        xyxy = norm.astype(np.float32) * np.array([W, H, W, H], dtype=np.float32)
    else:
        pixels = norm.astype(np.float64) * np.array([ctx.input_width, ctx.input_height] * 2, dtype=np.float64)
        xyxy = c.input_to_frame(ctx, pixels, clip=False)
    return c.clamp_edges(xyxy, W, H)
