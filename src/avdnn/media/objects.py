"""What an object carries besides its box: keypoints, a mask, read text, a rotation, free data.

FFmpeg's AVDetectionBBox has none of these, so they travel as avdnn's own columns of
:class:`~avdnn.media.detections.Detections` (with the record, on the frame's side data), aligned
with the boxes row for row. Each is optional; a record without them costs nothing:

* ``keypoints`` (N, K, 3) float32: x, y, score in frame pixels, in the model's order, with
  ``keypoint_names`` (K); a row of NaN is an object without keypoints (a face merged with poses);
* ``masks``: one :class:`Mask` or None per object, its bits cropped to a box (never a full
  frame per object); :func:`rle_encode` gives COCO's run-length encoding of the frame;
* ``text`` (one string per object, "" for none) and ``text_score`` (N,) float32 (NaN for none);
* ``xywhr`` (N, 5) float32: a rotated box (centre, size, angle in radians, clockwise in image
  coordinates as Ultralytics' OBB), NaN rows for boxes that are not rotated; ``xyxy`` holds
  its axis-aligned bounds;
* ``data``: name -> (N, ...) array, supervision's per-object dict.

The helpers here check, index and concatenate those columns, so every stage that filters,
reorders or merges boxes keeps them aligned by going through one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from avdnn.errors import InvalidArgumentError, InvalidDataError


@dataclass(frozen=True, eq=False)
class Mask:
    """One object's mask: ``bits`` (h, w) bool covering frame pixels [y, y + h) x [x, x + w).

    Pixels outside that window are not the object's. The array is a read-only copy.
    """

    x: int
    y: int
    bits: np.ndarray

    def __post_init__(self) -> None:
        bits = np.array(self.bits, dtype=bool, copy=True)
        if bits.ndim != 2:
            raise InvalidArgumentError(f"Mask.bits: expected a 2-D array, got shape {bits.shape}")
        if int(self.x) != self.x or int(self.y) != self.y or self.x < 0 or self.y < 0:
            raise InvalidArgumentError(f"Mask: expected an origin of integers >= 0, got ({self.x}, {self.y})")
        bits.flags.writeable = False
        object.__setattr__(self, "x", int(self.x))
        object.__setattr__(self, "y", int(self.y))
        object.__setattr__(self, "bits", bits)

    @property
    def area(self) -> int:
        """Pixels in the mask."""
        return int(np.count_nonzero(self.bits))

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.bits.shape[0]), int(self.bits.shape[1]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mask):
            return NotImplemented
        return (self.x, self.y) == (other.x, other.y) and np.array_equal(self.bits, other.bits)

    __hash__ = None  # type: ignore[assignment]

    def clipped(self, width: int, height: int) -> Mask:
        """The part inside a width x height frame."""
        return Mask(
            min(self.x, width), min(self.y, height), self.bits[: max(0, height - self.y), : max(0, width - self.x)]
        )

    def full(self, width: int, height: int) -> np.ndarray:
        """The mask as an (height, width) bool frame (for callers that need one; avdnn keeps crops)."""
        out = np.zeros((height, width), dtype=bool)
        m = self.clipped(width, height)
        h, w = m.shape
        out[m.y : m.y + h, m.x : m.x + w] = m.bits
        return out

    def bounds(self) -> tuple[int, int, int, int] | None:
        """(x0, y0, x1, y1) of the set pixels in frame pixels, None when the mask is empty."""
        rows = np.flatnonzero(self.bits.any(axis=1))
        if not rows.size:
            return None
        cols = np.flatnonzero(self.bits.any(axis=0))
        return (self.x + int(cols[0]), self.y + int(rows[0]), self.x + int(cols[-1]) + 1, self.y + int(rows[-1]) + 1)

    def tight(self) -> Mask:
        """The same mask cropped to its set pixels (an empty mask becomes 0 x 0)."""
        b = self.bounds()
        if b is None:
            return Mask(self.x, self.y, np.zeros((0, 0), bool))
        x0, y0, x1, y1 = b
        return Mask(x0, y0, self.bits[y0 - self.y : y1 - self.y, x0 - self.x : x1 - self.x])


def rle_encode(mask: Mask, width: int, height: int) -> dict[str, Any]:
    """COCO's uncompressed RLE of ``mask`` in a width x height frame, as pycocotools writes it.

    Column-major order; ``counts`` alternate runs of 0 and 1 starting with 0 (a 0 first when
    pixel (0, 0) is set), with no trailing empty run. Vectorised: the runs come from the
    transitions of each padded column, merged where a run continues into the next column.
    """
    total = width * height
    m = mask.clipped(width, height)
    h, w = m.shape
    if total == 0:
        return {"size": [height, width], "counts": []}
    if m.area == 0:
        return {"size": [height, width], "counts": [total]}
    cols = np.zeros((w, h + 2), dtype=np.int8)
    cols[:, 1:-1] = m.bits.T
    edges = np.diff(cols, axis=1)
    sc, sr = np.nonzero(edges == 1)  # column, row in column-major order
    ec, er = np.nonzero(edges == -1)
    starts = (sc + m.x).astype(np.int64) * height + sr + m.y
    ends = (ec + m.x).astype(np.int64) * height + er + m.y
    join = starts[1:] == ends[:-1]  # a run that goes on at the top of the next column
    starts = np.concatenate([starts[:1], starts[1:][~join]])
    ends = np.concatenate([ends[:-1][~join], ends[-1:]])
    bounds = np.empty(2 * starts.size + 2, dtype=np.int64)
    bounds[0], bounds[-1] = 0, total
    bounds[1:-1:2], bounds[2:-1:2] = starts, ends
    counts = np.diff(bounds)
    if counts[-1] == 0:
        counts = counts[:-1]
    return {"size": [height, width], "counts": counts.tolist()}


def rle_decode(rle: Mapping[str, Any]) -> tuple[Mask, int, int]:
    """The inverse of :func:`rle_encode`: (the mask cropped to its set pixels, width, height)."""
    try:
        height, width = (int(v) for v in rle["size"])
        counts = np.asarray(rle["counts"], dtype=np.int64).reshape(-1)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidDataError(f"mask: expected COCO RLE {{'size': [h, w], 'counts': [...]}}, got {rle!r:.80}") from exc
    if height < 0 or width < 0 or (counts < 0).any() or int(counts.sum()) != width * height:
        raise InvalidDataError(f"mask: RLE counts sum to {int(counts.sum())}, expected {width} x {height}")
    values = np.zeros(counts.size, dtype=bool)
    values[1::2] = True
    flat = np.repeat(values, counts)
    full = flat.reshape(width, height).T
    return Mask(0, 0, full).tight(), width, height


# -- the columns, as Detections holds them ---------------------------------------------------

#: names of the optional columns, in the order Detections declares them
COLUMNS = ("keypoints", "masks", "text", "text_score", "xywhr", "data")


@dataclass(frozen=True)
class Extras:
    """The optional columns of one record, checked (see the module docstring)."""

    keypoints: np.ndarray | None = None
    keypoint_names: tuple[str, ...] = ()
    masks: tuple[Mask | None, ...] | None = None
    text: tuple[str, ...] | None = None
    text_score: np.ndarray | None = None
    xywhr: np.ndarray | None = None
    data: Mapping[str, np.ndarray] | None = None


def _float_column(name: str, values: Any, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.array(values, dtype=np.float32, copy=True)
    if arr.size == 0 and shape[0] == 0:
        arr = arr.reshape(shape)
    if arr.shape != shape:
        raise InvalidArgumentError(f"Detections.{name}: expected shape {shape}, got {arr.shape}")
    arr.flags.writeable = False
    return arr


def check(
    n: int,
    *,
    keypoints: Any,
    keypoint_names: Sequence[str],
    masks: Any,
    text: Any,
    text_score: Any,
    xywhr: Any,
    data: Any,
) -> Extras:
    """The columns as read-only arrays of n rows; a wrong shape is InvalidArgumentError naming it."""
    kp = None
    names = tuple(str(s) for s in keypoint_names)
    if keypoints is not None:
        raw = np.asarray(keypoints, dtype=np.float32)
        k = raw.shape[1] if raw.ndim == 3 else len(names)
        kp = _float_column("keypoints", raw, (n, k, 3))
        if not names:
            names = tuple(str(i) for i in range(k))
        if len(names) != k:
            raise InvalidArgumentError(f"Detections.keypoint_names: expected {k} names, got {len(names)}")
    elif names:
        raise InvalidArgumentError("Detections.keypoint_names: given without keypoints")
    mk = None
    if masks is not None:
        mk = tuple(masks)
        if len(mk) != n:
            raise InvalidArgumentError(f"Detections.masks: expected {n} masks (one per box, or None), got {len(mk)}")
        for i, m in enumerate(mk):
            if m is not None and not isinstance(m, Mask):
                raise InvalidArgumentError(f"Detections.masks[{i}]: expected a Mask or None, got {type(m).__name__}")
    tx = ts = None
    if text is not None or text_score is not None:
        tx = tuple(str(t) for t in text) if text is not None else ("",) * n
        if len(tx) != n:
            raise InvalidArgumentError(f"Detections.text: expected {n} strings, got {len(tx)}")
        ts = _float_column(
            "text_score",
            text_score if text_score is not None else [np.nan if not t else 1.0 for t in tx],
            (n,),
        )
    rb = None if xywhr is None else _float_column("xywhr", xywhr, (n, 5))
    dt: dict[str, np.ndarray] | None = None
    if data:
        dt = {}
        for key, value in dict(data).items():
            arr = np.array(value, copy=True)
            if arr.ndim < 1 or arr.shape[0] != n:
                raise InvalidArgumentError(f"Detections.data[{key!r}]: expected {n} rows, got shape {arr.shape}")
            arr.flags.writeable = False
            dt[str(key)] = arr
    return Extras(kp, names, mk, tx, ts, rb, dt)


def take(ex: Extras, idx: np.ndarray) -> Extras:
    """The rows ``idx`` of every column present."""
    rows = idx.tolist()
    return Extras(
        None if ex.keypoints is None else ex.keypoints[idx],
        ex.keypoint_names,
        None if ex.masks is None else tuple(ex.masks[i] for i in rows),
        None if ex.text is None else tuple(ex.text[i] for i in rows),
        None if ex.text_score is None else ex.text_score[idx],
        None if ex.xywhr is None else ex.xywhr[idx],
        None if ex.data is None else {k: v[idx] for k, v in ex.data.items()},
    )


def concat(parts: Sequence[tuple[int, Extras]]) -> Extras:
    """The columns of records of (length, columns) one after the other; a column one record lacks
    is filled (NaN keypoints and rotations, no mask, no text). Keypoint sets must agree."""
    with_kp = [ex for _, ex in parts if ex.keypoints is not None]
    names = {ex.keypoint_names for ex in with_kp}
    if len(names) > 1:
        raise InvalidArgumentError(f"Detections.merge: records with different keypoint sets: {sorted(names)}")
    kp = None
    if with_kp:
        k = len(next(iter(names)))
        kp = np.concatenate(
            [ex.keypoints if ex.keypoints is not None else np.full((n, k, 3), np.nan, np.float32) for n, ex in parts]
        )
    masks = None
    if any(ex.masks is not None for _, ex in parts):
        masks = tuple(m for n, ex in parts for m in (ex.masks if ex.masks is not None else (None,) * n))
    text = score = None
    if any(ex.text is not None for _, ex in parts):
        text = tuple(t for n, ex in parts for t in (ex.text if ex.text is not None else ("",) * n))
        score = np.concatenate(
            [ex.text_score if ex.text_score is not None else np.full(n, np.nan, np.float32) for n, ex in parts]
        )
    rb = None
    if any(ex.xywhr is not None for _, ex in parts):
        rb = np.concatenate(
            [ex.xywhr if ex.xywhr is not None else np.full((n, 5), np.nan, np.float32) for n, ex in parts]
        )
    data = None
    keys = [set(ex.data) for n, ex in parts if n and ex.data]
    if keys:
        if any(k != keys[0] for k in keys):
            raise InvalidArgumentError(
                f"Detections.merge: records with different data keys: {[sorted(k) for k in keys]}"
            )
        model = next(ex.data for n, ex in parts if n and ex.data)
        data = {
            key: np.concatenate([ex.data[key] if ex.data else _filler(model[key], n) for n, ex in parts if n])
            for key in keys[0]
        }
    return Extras(kp, next(iter(names)) if names else (), masks, text, score, rb, data)


def _filler(like: np.ndarray, n: int) -> np.ndarray:
    """Rows for a record without ``data``: NaN, -1 or "" by the column's kind."""
    fill: Any = np.nan if like.dtype.kind in "fc" else -1 if like.dtype.kind in "iu" else ""
    return np.full((n, *like.shape[1:]), fill, dtype=like.dtype if like.dtype.kind != "O" else object)


def equal(a: Extras, b: Extras) -> bool:
    """Column-wise equality (NaN equals NaN)."""

    def same(x: np.ndarray | None, y: np.ndarray | None) -> bool:
        if x is None or y is None:
            return x is y
        return x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))

    return (
        same(a.keypoints, b.keypoints)
        and a.keypoint_names == b.keypoint_names
        and a.masks == b.masks
        and a.text == b.text
        and same(a.text_score, b.text_score)
        and same(a.xywhr, b.xywhr)
        and (a.data or {}).keys() == (b.data or {}).keys()
        and all(same(v, (b.data or {})[k]) for k, v in (a.data or {}).items())
    )


def box_fields(ex: Extras, i: int, frame_size: tuple[int, int]) -> dict[str, Any]:
    """The JSON keys of box ``i`` for the columns it has (none for a plain box)."""
    out: dict[str, Any] = {}
    if ex.keypoints is not None and not np.isnan(ex.keypoints[i]).all():
        out["keypoints"] = ex.keypoints[i].tolist()
        out["keypoint_names"] = list(ex.keypoint_names)
    if ex.masks is not None and ex.masks[i] is not None:
        mask = ex.masks[i]
        assert mask is not None
        out["mask"] = rle_encode(mask, frame_size[0], frame_size[1])
    if ex.text is not None and ex.text[i]:
        assert ex.text_score is not None
        out["text"] = ex.text[i]
        out["text_score"] = float(ex.text_score[i])
    if ex.xywhr is not None and not np.isnan(ex.xywhr[i]).any():
        out["angle"] = float(ex.xywhr[i, 4])
        out["xywhr"] = ex.xywhr[i].tolist()
    if ex.data:
        out["data"] = {k: v[i].tolist() for k, v in ex.data.items()}
    return out


def from_boxes(boxes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The columns (Detections keyword arguments) of JSON boxes written by :func:`box_fields`."""
    n = len(boxes)
    out: dict[str, Any] = {}
    kp_rows = [b for b in boxes if "keypoints" in b]
    if kp_rows:
        names = tuple(kp_rows[0].get("keypoint_names") or ())
        k = len(kp_rows[0]["keypoints"])
        kp = np.full((n, k, 3), np.nan, np.float32)
        for i, b in enumerate(boxes):
            if "keypoints" in b:
                kp[i] = np.asarray(b["keypoints"], dtype=np.float32).reshape(k, 3)
        out["keypoints"], out["keypoint_names"] = kp, names
    if any("mask" in b for b in boxes):
        out["masks"] = tuple(rle_decode(b["mask"])[0] if "mask" in b else None for b in boxes)
    if any("text" in b for b in boxes):
        out["text"] = tuple(str(b.get("text", "")) for b in boxes)
        out["text_score"] = np.array([b.get("text_score", np.nan) for b in boxes], dtype=np.float32)
    if any("xywhr" in b for b in boxes):
        out["xywhr"] = np.array([b.get("xywhr", [np.nan] * 5) for b in boxes], dtype=np.float32).reshape(n, 5)
    if n and all("data" in b for b in boxes):
        out["data"] = {k: np.asarray([b["data"][k] for b in boxes]) for k in boxes[0]["data"]}
    return out


def rotated_corners(xywhr: np.ndarray) -> np.ndarray:
    """(N, 4, 2) corners of rotated boxes (centre, size, angle), in drawing order."""
    r = np.asarray(xywhr, dtype=np.float64).reshape(-1, 5)
    c, s = np.cos(r[:, 4]), np.sin(r[:, 4])
    wv = np.stack([c, s], axis=1) * (r[:, 2:3] / 2)
    hv = np.stack([-s, c], axis=1) * (r[:, 3:4] / 2)
    ctr = r[:, :2]
    return np.stack([ctr + wv + hv, ctr + wv - hv, ctr - wv - hv, ctr - wv + hv], axis=1)


def rotated_bounds(xywhr: np.ndarray) -> np.ndarray:
    """(N, 4) axis-aligned xyxy around rotated boxes."""
    pts = rotated_corners(xywhr)
    return np.concatenate([pts.min(axis=1), pts.max(axis=1)], axis=1).astype(np.float32)


__all__ = [
    "COLUMNS",
    "Extras",
    "Mask",
    "box_fields",
    "check",
    "concat",
    "equal",
    "from_boxes",
    "rle_decode",
    "rle_encode",
    "rotated_bounds",
    "rotated_corners",
    "take",
]
