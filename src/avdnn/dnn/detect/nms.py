"""Overlap removal: classic greedy NMS, MediaPipe's weighted NMS, and FFmpeg's own rule.

FFmpeg's YOLO parsers do not run greedy NMS (reference s.4.3, s.7 #15): a candidate is dropped
when *any* other candidate with the same label and a strictly higher confidence overlaps it by
IoU >= the threshold (which FFmpeg takes from ``confidence``), even one that is itself dropped;
IoU is taken on the integer boxes in float32. :func:`ffmpeg_overlap_keep` reproduces that for
parity; :func:`nms` is the greedy NMS the modern families expect.
"""

from __future__ import annotations

import numpy as np

_CHUNK = 2048  # rows of an IoU matrix computed at once, to bound memory at O(chunk * n)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of ``a`` (Na, 4) with every box of ``b`` (Nb, 4), corners; 0 where the union is empty."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(1, -1, 4)
    iw = (np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0])).clip(min=0)
    ih = (np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1])).clip(min=0)
    inter = iw * ih
    area_a = (a[..., 2] - a[..., 0]).clip(min=0) * (a[..., 3] - a[..., 1]).clip(min=0)
    area_b = (b[..., 2] - b[..., 0]).clip(min=0) * (b[..., 3] - b[..., 1]).clip(min=0)
    union = area_a + area_b - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(union > 0, inter / union, 0.0)
    return out.astype(np.float32)


def nms(
    xyxy: np.ndarray,
    scores: np.ndarray,
    iou_threshold: float,
    *,
    class_id: np.ndarray | None = None,
    max_det: int | None = None,
) -> np.ndarray:
    """Greedy NMS: indices of the kept boxes, best score first.

    A box is suppressed by a kept box of higher score (ties: lower index first) whose IoU with it
    is > ``iou_threshold`` (torchvision's rule). With ``class_id`` boxes only suppress boxes of
    their own class (each class is moved to its own region, as torchvision's batched_nms does).
    The Python loop runs once per *kept* box; each step is vectorised over the rest.
    """
    boxes = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if boxes.shape[0] == 0:
        return np.zeros(0, np.intp)
    if class_id is not None:
        span = float(np.abs(boxes).max()) * 2 + 1
        boxes = boxes + (np.asarray(class_id, dtype=np.float64).reshape(-1, 1) * span)
    order = np.argsort(-s, kind="stable")
    keep: list[int] = []
    limit = boxes.shape[0] if max_det is None else max_det
    while order.size and len(keep) < limit:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        if not rest.size:
            break
        order = rest[iou_matrix(boxes[i], boxes[rest])[0] <= iou_threshold]
    return np.asarray(keep, dtype=np.intp)


def weighted_nms(
    xyxy: np.ndarray, scores: np.ndarray, iou_threshold: float, *, max_det: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MediaPipe's weighted NMS (BlazeFace): each cluster becomes its score-weighted mean box.

    A cluster is the best remaining box plus every remaining box whose IoU with it is above
    ``iou_threshold``; it keeps the best box's score. Returns (boxes (K, 4) float32, scores (K,)
    float32, index of each cluster's best box).
    """
    boxes = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    order = np.argsort(-s, kind="stable")
    out_boxes: list[np.ndarray] = []
    out_idx: list[int] = []
    limit = boxes.shape[0] if max_det is None else max_det
    while order.size and len(out_idx) < limit:
        i = int(order[0])
        member = iou_matrix(boxes[i], boxes[order])[0] > iou_threshold
        member[0] = True
        cluster = order[member]
        w = s[cluster]
        out_boxes.append((boxes[cluster] * w[:, None]).sum(axis=0) / w.sum() if w.sum() > 0 else boxes[i])
        out_idx.append(i)
        order = order[~member]
    idx = np.asarray(out_idx, dtype=np.intp)
    merged = np.asarray(out_boxes, dtype=np.float32).reshape(-1, 4)
    return merged, s[idx].astype(np.float32), idx


def ffmpeg_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """FFmpeg's dnn_detect_IOU on int (x, y, w, h) boxes, in its float32 arithmetic, (Na, Nb).

    Degenerate pairs (empty union) give 0, as FFmpeg 1ae40482 hardened it.
    """
    a = np.asarray(a, dtype=np.int64).reshape(-1, 1, 4)
    b = np.asarray(b, dtype=np.int64).reshape(1, -1, 4)
    ow = np.minimum(a[..., 0] + a[..., 2], b[..., 0] + b[..., 2]) - np.maximum(a[..., 0], b[..., 0])
    oh = np.minimum(a[..., 1] + a[..., 3], b[..., 1] + b[..., 3]) - np.maximum(a[..., 1], b[..., 1])
    inter = np.where((ow < 0) | (oh < 0), np.float32(0), oh.astype(np.float32) * ow.astype(np.float32))
    union = (a[..., 2] * a[..., 3] + b[..., 2] * b[..., 3]).astype(np.float32) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, np.float32(0)).astype(np.float32)


def ffmpeg_overlap_keep(
    xywh: np.ndarray, confidence_num: np.ndarray, label_code: np.ndarray, threshold: float
) -> np.ndarray:
    """FFmpeg's YOLO overlap removal as a keep mask over candidates in scan order.

    Drop i if some j has the same label, a strictly larger rational confidence
    (``confidence_num``, over 10000) and ``ffmpeg_iou(i, j) >= threshold`` (float32).
    Vectorised O(n^2) within each label (one loop step per label), in row chunks.
    """
    boxes = np.asarray(xywh, dtype=np.int64).reshape(-1, 4)
    q = np.asarray(confidence_num, dtype=np.int64).reshape(-1)
    lab = np.asarray(label_code).reshape(-1)
    thr = np.float32(threshold)
    keep = np.ones(boxes.shape[0], dtype=bool)
    for code in np.unique(lab):
        members = np.flatnonzero(lab == code)
        gb, gq = boxes[members], q[members]
        for start in range(0, members.size, _CHUNK):
            rows = slice(start, min(members.size, start + _CHUNK))
            hit = gq[rows, None] < gq[None, :]
            if hit.any():
                hit &= ffmpeg_iou(gb[rows], gb) >= thr
            keep[members[rows]] = ~hit.any(axis=1)
    return keep


__all__ = ["ffmpeg_iou", "ffmpeg_overlap_keep", "iou_matrix", "nms", "weighted_nms"]
