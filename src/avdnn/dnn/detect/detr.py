"""End-to-end DETR-family heads (no NMS by default): ``detr``.

Two forms are accepted:

* boxes [1, Q, 4] (cx, cy, w, h normalised to the input) + logits/scores [1, Q, C]. DETR
  uses a softmax whose last class is "no object"; RT-DETR, D-FINE and RF-DETR use a sigmoid
  per class and keep the top ``max_det`` (query, class) pairs, so one query may give several
  boxes. ``score_activation`` picks (see :class:`DetectContext`).
* RT-DETR/D-FINE deployment exports: labels [1, Q], boxes [1, Q, 4] (x0, y0, x1, y1 in
  model-input pixels), scores [1, Q]; kept in model order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest finite scores, best first (ties by index)."""
    s = np.where(np.isfinite(scores), scores, -np.inf)
    if k < s.size:
        part = np.argpartition(-s, k - 1)[:k]
        return part[np.lexsort((part, -s[part]))]
    return np.argsort(-s, kind="stable")


def _three(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    arrs = [np.asarray(o) for o in outputs]
    bi = [i for i, a in enumerate(arrs) if a.ndim >= 2 and a.shape[-1] == 4]
    if len(bi) != 1:
        raise InvalidDataError(
            f"detr: three outputs must be labels [1, Q], boxes [1, Q, 4], scores [1, Q]; got {c.shapes(arrs)}"
        )
    boxes = c.rows(c.as_float(arrs[bi[0]], "detr", bi[0]), 4, "detr", "the boxes output")
    rest = [i for i in range(3) if i != bi[0]]
    ints = [i for i in rest if np.issubdtype(arrs[i].dtype, np.integer)]
    li = ints[0] if len(ints) == 1 else rest[0]  # export order: labels, boxes, scores
    si = rest[1] if li == rest[0] else rest[0]
    labels, scores = arrs[li].reshape(-1), c.as_float(arrs[si], "detr", si).reshape(-1)
    q = boxes.shape[0]
    if labels.size != q or scores.size != q:
        raise InvalidDataError(
            f"detr: labels and scores must have {q} elements (as boxes), got shapes "
            f"{tuple(arrs[li].shape)} and {tuple(arrs[si].shape)}"
        )
    c.check_some_finite(scores, "detr")
    keep = np.flatnonzero(c.score_mask(scores, ctx.confidence))[: ctx.max_det]
    xyxy = c.input_to_frame(ctx, np.nan_to_num(boxes[keep]))
    return c.suppress(ctx, c.make(ctx, xyxy, scores[keep], c.class_ids_from_float(labels[keep])), "none")


def parse_detr(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``detr``: DETR, RT-DETR, D-FINE, RF-DETR (see the module docstring for the forms)."""
    if len(outputs) == 3:
        return _three(outputs, ctx)
    if len(outputs) != 2:
        raise InvalidDataError(
            f"detr: expected boxes [1, Q, 4] + logits [1, Q, C] (or labels, boxes, scores), got "
            f"{len(outputs)} outputs: {c.shapes(outputs)}"
        )
    arrs = [c.as_float(o, "detr", i) for i, o in enumerate(outputs)]
    four = [i for i, a in enumerate(arrs) if a.ndim >= 2 and a.shape[-1] == 4]
    if not four:
        raise InvalidDataError(f"detr: one output must be boxes [1, Q, 4], got {c.shapes(arrs)}")
    bi = four[-1]  # with C == 4 both match; exports put the logits first
    boxes = c.rows(arrs[bi], 4, "detr", "the boxes output")
    la = arrs[1 - bi]
    if la.ndim < 2 or any(d != 1 for d in la.shape[:-2]) or la.shape[-2] != boxes.shape[0]:
        raise InvalidDataError(
            f"detr: logits must have shape [1, {boxes.shape[0]}, C] to match boxes "
            f"{tuple(arrs[bi].shape)}, got {tuple(la.shape)}"
        )
    logits: np.ndarray = la.reshape(la.shape[-2:])
    c.check_some_finite(logits, "detr", "logits")
    mode = ctx.score_activation
    if mode == "auto":
        mode = "softmax" if ctx.nb_classes and logits.shape[1] == ctx.nb_classes + 1 else "sigmoid"
    if mode == "softmax":
        if logits.shape[1] < 2:
            raise InvalidDataError(f"detr: softmax needs classes plus a no-object class, got {tuple(la.shape)}")
        probs = c.softmax(logits)[:, :-1]
        s = np.where(np.isnan(probs), -np.inf, probs)
        cls = s.argmax(axis=1)
        score = probs[np.arange(probs.shape[0]), cls]
        order = _top(score, ctx.max_det)
        query = order
    else:
        probs = c.sigmoid(logits) if mode == "sigmoid" else logits
        flat = probs.reshape(-1)
        order = _top(flat, min(ctx.max_det, flat.size))
        query, cls = np.divmod(order, probs.shape[1])
        score = flat
    score_sel = score[order]
    keep = c.score_mask(score_sel, ctx.confidence)
    sel_q, sel_c = query[keep], (cls[order] if mode == "softmax" else cls)[keep]
    b = boxes[sel_q].astype(np.float64) * np.array([ctx.input_width, ctx.input_height] * 2)
    xyxy = c.input_to_frame(ctx, np.nan_to_num(c.cxcywh_to_xyxy(b)))
    return c.suppress(ctx, c.make(ctx, xyxy, score_sel[keep], sel_c), "none")
