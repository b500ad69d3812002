"""Two-stage OCR: ``dbnet`` text detection (dnn_detect) and greedy CTC decoding (dnn_classify).

``dbnet``: a DBNet probability map [1, 1, H, W] (PaddleOCR's PP-OCR detectors) becomes text
boxes as PaddleOCR's ``DBPostProcess`` does it, with axis-aligned boxes: pixels above
:data:`BINARIZE` (0.3) are text, each 8-connected region whose mean probability reaches
``confidence`` (PaddleOCR's ``box_thresh`` 0.5) and whose sides are at least :data:`MIN_SIZE`
is grown by ``area * UNCLIP / perimeter`` on every side (the unclip of its rectangle, 1.6)
and mapped to frame pixels. The label is ``text``; the string comes from a recognizer.

The regions come from :func:`label_runs`: runs of set pixels per row, joined to the runs they
touch in the next row, and the run graph's components found by vectorised minimum-label
propagation (one step per run of the longest chain, a few dozen for a text line): no per-pixel
Python and no scipy.

:func:`ctc_greedy`: a CTC recognizer's [B, T, C] probabilities (PP-OCR's ``character``
metadata: C = 1 blank + the characters + an optional space) -> per crop the best class per
step, repeats collapsed, blanks dropped; the score is the mean probability of the characters kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from avdnn.dnn.detect import _common as c
from avdnn.dnn.detect.context import DetectContext
from avdnn.errors import InvalidDataError
from avdnn.media.detections import Detections

#: PaddleOCR's DB ``thresh``: pixels at or above it are text
BINARIZE = 0.3
#: PaddleOCR's DB ``unclip_ratio``
UNCLIP = 1.6
#: PaddleOCR's DB ``min_size``: a region with a shorter side is noise
MIN_SIZE = 3


def label_runs(binary: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """8-connected components of a 2-D bool map, as runs.

    Returns (row, start, stop, component, count): one entry per horizontal run of set pixels
    (columns start..stop-1), its component numbered 0..count-1 in order of first appearance.
    """
    h, w = binary.shape
    padded = np.zeros((h, w + 2), dtype=np.int8)
    padded[:, 1:-1] = binary
    edges = np.diff(padded, axis=1)
    rs, cs = np.nonzero(edges == 1)
    _, ce = np.nonzero(edges == -1)
    n = rs.size
    if n == 0:
        return rs, cs, ce, np.zeros(0, np.int64), 0
    # runs of row r + 1 touching runs of row r (8-connectivity: columns overlap within one pixel)
    key_start = rs.astype(np.int64) * (w + 2) + cs
    key_stop = rs.astype(np.int64) * (w + 2) + ce
    below = rs > 0
    b = np.flatnonzero(below)
    prev = (rs[b] - 1).astype(np.int64) * (w + 2)
    lo = np.searchsorted(key_stop, prev + cs[b], side="left")  # first run of row r ending at/after start - 1
    hi = np.searchsorted(key_start, prev + ce[b] + 1, side="left")  # runs starting before stop + 1
    lo = np.maximum(lo, np.searchsorted(key_start, prev, side="left"))
    count = np.maximum(hi - lo, 0)
    src = np.repeat(b, count)
    dst = np.repeat(lo, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    labels = np.arange(n)
    while True:
        low = labels.copy()
        np.minimum.at(low, src, labels[dst])
        np.minimum.at(low, dst, labels[src])
        low = low[low]  # pointer jumping: follow the smaller label's own label
        if np.array_equal(low, labels):
            break
        labels = low
    roots, comp = np.unique(labels, return_inverse=True)
    return rs, cs, ce, comp.reshape(-1), int(roots.size)


def parse_dbnet(outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """``dbnet``: see the module docstring."""
    if len(outputs) != 1:
        raise InvalidDataError(f"dbnet: expected one output [1, 1, H, W], got {len(outputs)}: {c.shapes(outputs)}")
    t = c.as_float(outputs[0], "dbnet", 0)
    if t.ndim < 2 or any(d != 1 for d in t.shape[:-2]):
        raise InvalidDataError(f"dbnet: output 0 must have shape [1, 1, H, W], got {tuple(t.shape)}")
    prob = np.nan_to_num(t.reshape(t.shape[-2:]), nan=0.0)
    mh, mw = prob.shape
    rs, cs, ce, comp, count = label_runs(prob >= np.float32(BINARIZE))
    if count == 0:
        return c.make(ctx, np.zeros((0, 4)), np.zeros(0), np.zeros(0))
    cum = np.concatenate([np.zeros((mh, 1)), np.cumsum(prob, axis=1, dtype=np.float64)], axis=1)
    total = np.zeros(count)
    np.add.at(total, comp, cum[rs, ce] - cum[rs, cs])
    pixels = np.bincount(comp, weights=ce - cs, minlength=count)
    x0 = np.full(count, mw)
    y0 = np.full(count, mh)
    x1 = np.zeros(count, np.int64)
    y1 = np.zeros(count, np.int64)
    np.minimum.at(x0, comp, cs)
    np.maximum.at(x1, comp, ce)
    np.minimum.at(y0, comp, rs)
    np.maximum.at(y1, comp, rs + 1)
    score = (total / pixels).astype(np.float32)
    w, h = (x1 - x0).astype(np.float64), (y1 - y0).astype(np.float64)
    keep = (np.minimum(w, h) >= MIN_SIZE) & c.score_mask(score, ctx.confidence)
    grow = w * h * UNCLIP / (2 * (w + h))
    boxes = np.stack([x0 - grow, y0 - grow, x1 + grow, y1 + grow], axis=1)[keep]
    # map cells to model-input pixels, then to the frame
    boxes[:, 0::2] *= ctx.input_width / mw
    boxes[:, 1::2] *= ctx.input_height / mh
    xyxy = c.input_to_frame(ctx, boxes)
    order = np.lexsort((xyxy[:, 0], xyxy[:, 1]))  # reading order: top to bottom, then left to right
    det = c.make(ctx, xyxy[order], score[keep][order], np.zeros(int(keep.sum()), np.int32))
    return det[np.argsort(-det.confidence, kind="stable")[: ctx.max_det]] if len(det) > ctx.max_det else det


def characters(text: str) -> tuple[str, ...]:
    """PP-OCR's ``character`` metadata: one character per line."""
    return tuple(text.split("\n"))


def ctc_greedy(output: np.ndarray, chars: Sequence[str]) -> list[tuple[str, float]]:
    """(text, score) per crop of a [B, T, C] CTC output; see the module docstring.

    C must be ``len(chars) + 1`` (blank first) or ``len(chars) + 2`` (a space last, PaddleOCR's
    ``use_space_char``). A crop with nothing read gives ("", 0.0).
    """
    arr = np.asarray(output, dtype=np.float32)
    if arr.ndim != 3 or arr.shape[0] < 1:
        raise InvalidDataError(f"ctc: expected an output [B, T, C], got shape {tuple(arr.shape)}")
    n = arr.shape[2]
    if n not in (len(chars) + 1, len(chars) + 2):
        raise InvalidDataError(
            f"ctc: the output has {n} classes, but the character set has {len(chars)} (expected +1 blank, "
            f"or +2 with a space)"
        )
    table = np.asarray(["", *chars, " "][:n], dtype=object)
    finite = np.where(np.isfinite(arr), arr, -np.inf) if not np.isfinite(arr).all() else arr  # NaN never wins
    best = finite.argmax(axis=2)
    prob = np.take_along_axis(arr, best[..., None], axis=2)[..., 0]
    kept = best != 0
    kept[:, 1:] &= best[:, 1:] != best[:, :-1]
    out = []
    for row, keep, p in zip(best, kept, prob, strict=True):
        idx = row[keep]
        out.append(("".join(table[idx].tolist()), float(p[keep].mean()) if idx.size else 0.0))
    return out


__all__ = ["BINARIZE", "MIN_SIZE", "UNCLIP", "characters", "ctc_greedy", "label_runs", "parse_dbnet"]
