"""Points, anchors, polygons and directed lines in the pixels of a frame.

The ``zone`` and ``line`` filters take their shape as ``X_Y|X_Y|...``: each coordinate is a
number of pixels or an expression of the frame's size (``iw``, ``ih``, also ``W``, ``H``: the
width and height of the frame the filter sees), e.g. ``0_ih/2|iw_ih/2`` for a horizontal line
through the middle. Expressions are evaluated once per frame size, never per frame.

A box counts by one point of it, its *anchor* (supervision's ``Position`` names, lower-cased):
``bottom_center`` by default, which is where an object touches the ground (Frigate's rule for
zones). The tests compare this geometry with supervision's ``PolygonZone`` and ``LineZone``
(which need OpenCV; a zone here needs nothing but numpy).

A pose model's object may count by one of its keypoints instead: ``keypoint:left_ankle`` (the
model's keypoint names), where the keypoint scores at least :data:`KEYPOINT_MIN_SCORE`; an
object whose keypoint is missing or unsure counts by its box's ``bottom_center``. A zone may
also count an object with a mask by the share of the mask inside it (:func:`mask_inside`).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from avdnn.errors import InvalidArgumentError
from avdnn.media.detections import Detections

#: anchor name -> (fraction of the width from x0, fraction of the height from y0)
ANCHORS: dict[str, tuple[float, float]] = {
    "bottom_center": (0.5, 1.0),
    "center": (0.5, 0.5),
    "top_center": (0.5, 0.0),
    "top_left": (0.0, 0.0),
    "top_right": (1.0, 0.0),
    "bottom_left": (0.0, 1.0),
    "bottom_right": (1.0, 1.0),
    "center_left": (0.0, 0.5),
    "center_right": (1.0, 0.5),
}

#: ``anchor=`` named values, as an int option's constants (the order of :data:`ANCHORS`).
ANCHOR_CONSTS: dict[str, int] = {name: i for i, name in enumerate(ANCHORS)}


#: ``anchor=keypoint:NAME``: the object counts by its keypoint NAME
KEYPOINT_PREFIX = "keypoint:"
#: a keypoint scoring below this is not where the object is (its box's bottom centre is used)
KEYPOINT_MIN_SCORE = 0.3


def anchor_name(value: int | str) -> str:
    """The anchor's name from an ``anchor=`` value (its constant, its name or ``keypoint:NAME``)."""
    if isinstance(value, str) and value.startswith(KEYPOINT_PREFIX):
        if not value[len(KEYPOINT_PREFIX) :]:
            raise InvalidArgumentError("anchor=keypoint:NAME needs the keypoint's name", option="anchor")
        return value
    if isinstance(value, str):
        if value not in ANCHORS:
            raise InvalidArgumentError(f"unknown anchor '{value}' (known: {', '.join(ANCHORS)})", option="anchor")
        return value
    return list(ANCHORS)[int(value)]


def anchors(xyxy: np.ndarray, anchor: str, scale: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
    """(N, 2) anchor points of (N, 4) boxes, scaled by ``scale`` (boxes of another frame size)."""
    fx, fy = ANCHORS[anchor]
    boxes = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    x = boxes[:, 0] + fx * (boxes[:, 2] - boxes[:, 0])
    y = boxes[:, 1] + fy * (boxes[:, 3] - boxes[:, 1])
    return np.stack([x * scale[0], y * scale[1]], axis=1)


def anchor_points(det: Detections, rows: list[int], anchor: str, scale: tuple[float, float]) -> np.ndarray:
    """(len(rows), 2) points the boxes ``rows`` of ``det`` count by: their anchor, or a keypoint
    (see the module docstring), in the frame's pixels."""
    base = anchors(det.xyxy[rows], anchor if anchor in ANCHORS else "bottom_center", scale)
    name = anchor[len(KEYPOINT_PREFIX) :] if anchor.startswith(KEYPOINT_PREFIX) else None
    if name is None or det.keypoints is None or name not in det.keypoint_names:
        return base
    kp = det.keypoints[rows, det.keypoint_names.index(name)].astype(np.float64)
    ok = np.isfinite(kp).all(axis=1) & (kp[:, 2] >= KEYPOINT_MIN_SCORE)
    out: np.ndarray = np.where(ok[:, None], kp[:, :2] * np.asarray(scale), base)
    return out


@lru_cache(maxsize=16)
def _raster(polygon: tuple[tuple[float, float], ...], width: int, height: int) -> np.ndarray:
    """Which pixels (by their centres) of a width x height frame are inside ``polygon``."""
    ys, xs = np.mgrid[0:height, 0:width]
    centres = np.stack([xs.reshape(-1) + 0.5, ys.reshape(-1) + 0.5], axis=1)
    inside = inside_polygon(centres, np.asarray(polygon, dtype=np.float64)).reshape(height, width)
    inside.flags.writeable = False
    return inside


def mask_inside(
    det: Detections,
    rows: list[int],
    polygon: np.ndarray,
    scale: tuple[float, float],
    share: float,
    by_anchor: np.ndarray,
) -> np.ndarray:
    """(len(rows),) bool: each object inside ``polygon`` by its mask (at least ``share`` of its
    pixels in it), or by ``by_anchor`` for an object without a mask. The polygon (frame pixels)
    is rasterised once per size in the detections' pixels, so a mask costs one window's sum."""
    fw, fh = det.frame_size
    if det.masks is None or not fw or not fh:
        return by_anchor
    poly = tuple((float(x) / scale[0], float(y) / scale[1]) for x, y in np.asarray(polygon).tolist())
    raster = _raster(poly, fw, fh)
    out = by_anchor.copy()
    for j, i in enumerate(rows):
        mask = det.masks[i]
        if mask is None or not mask.area:
            continue
        m = mask.clipped(fw, fh)
        h, w = m.shape
        hit = np.count_nonzero(raster[m.y : m.y + h, m.x : m.x + w] & m.bits)
        out[j] = hit >= share * mask.area
    return out


def box_scale(box_size: tuple[int, int], frame_size: tuple[int, int]) -> tuple[float, float]:
    """Boxes refer to the frame their detector saw (``Detections.frame_size``): the factors to this frame."""
    bw, bh = box_size
    if not bw or not bh:
        return (1.0, 1.0)
    return (frame_size[0] / bw, frame_size[1] / bh)


# -- coordinates -------------------------------------------------------------------------------

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_NAMES = ("iw", "ih", "W", "H")


def _evaluate(node: ast.AST, names: Mapping[str, float]) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand, names)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left, names), _evaluate(node.right, names))
    raise ValueError(ast.dump(node))


def _check_expression(text: str) -> ast.Expression:
    try:
        tree = ast.parse(text.strip(), mode="eval")
        _evaluate(tree, dict.fromkeys(_NAMES, 1.0))
    except (SyntaxError, ValueError, ZeroDivisionError):
        raise InvalidArgumentError(
            f"'{text}' is not a coordinate (pixels, or an expression of iw and ih: iw/2, ih-10)"
        ) from None
    return tree


@dataclass(frozen=True)
class Points:
    """``X_Y|X_Y|...`` as written, checked once; :meth:`resolve` gives pixels for a frame size."""

    text: str
    exprs: tuple[tuple[ast.Expression, ast.Expression], ...]

    @classmethod
    def parse(cls, text: str, *, at_least: int, at_most: int | None = None, option: str = "points") -> Points:
        """Parse ``text``; fewer than ``at_least`` or more than ``at_most`` points is an error."""
        items = [p for p in (text or "").split("|") if p.strip()]
        exprs = []
        for item in items:
            x, sep, y = item.partition("_")
            if not sep or "_" in y:
                raise InvalidArgumentError(f"point '{item}' is not X_Y (e.g. 100_200 or iw/2_ih)", option=option)
            try:
                exprs.append((_check_expression(x), _check_expression(y)))
            except InvalidArgumentError as exc:
                raise exc.with_context(option=option) from None
        want = f"{at_least}" if at_most == at_least else f"at least {at_least}"
        if len(exprs) < at_least or (at_most is not None and len(exprs) > at_most):
            raise InvalidArgumentError(f"'{text}': expected {want} points X_Y|X_Y..., got {len(exprs)}", option=option)
        return cls(text, tuple(exprs))

    def resolve(self, width: int, height: int) -> np.ndarray:
        """(K, 2) float pixels for a frame of ``width`` x ``height``."""
        names = {"iw": float(width), "ih": float(height), "W": float(width), "H": float(height)}
        try:
            return np.array([[_evaluate(x, names), _evaluate(y, names)] for x, y in self.exprs], dtype=np.float64)
        except ZeroDivisionError:
            raise InvalidArgumentError(f"'{self.text}': division by zero for a {width}x{height} frame") from None


def format_point(p: np.ndarray) -> str:
    return f"{p[0]:g}_{p[1]:g}"


# -- polygons ---------------------------------------------------------------------------------


def inside_polygon(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """(N,) bool: each point inside ``polygon`` (K, 2) or on its edge (an edge is inside).

    Even-odd crossing number over every edge at once (numpy), plus an explicit on-edge test so
    that a point on the boundary gives the same answer whatever the float rounding.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if not len(pts):
        return np.zeros(0, bool)
    a = polygon
    b = np.roll(polygon, -1, axis=0)
    px, py = pts[:, 0:1], pts[:, 1:2]  # (N, 1) against (K,) edges
    ax, ay, bx, by = a[:, 0], a[:, 1], b[:, 0], b[:, 1]
    straddles = (ay > py) != (by > py)
    with np.errstate(divide="ignore", invalid="ignore"):
        x_cross = ax + (py - ay) * (bx - ax) / (by - ay)
    crossings = (straddles & (px < x_cross)).sum(axis=1)
    cross = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
    on_edge = (
        (cross == 0)
        & (np.minimum(ax, bx) <= px)
        & (px <= np.maximum(ax, bx))
        & (np.minimum(ay, by) <= py)
        & (py <= np.maximum(ay, by))
    ).any(axis=1)
    result: np.ndarray = (crossings % 2 == 1) | on_edge
    return result


# -- directed lines ---------------------------------------------------------------------------


def side_of_line(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N,) signed distance in pixels of each point from the line a->b: > 0 left of it, < 0 right.

    Left and right as seen on the picture by someone walking from ``a`` to ``b`` (image y grows
    downwards): for a line drawn from left to right across the picture, "left" is above it.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    d = b - a
    length = float(np.hypot(d[0], d[1]))
    # the cross product (b - a) x (p - a) is > 0 for a point *below* a left-to-right line in
    # image coordinates, which is the walker's right: negate so that left is positive.
    cross = d[0] * (pts[:, 1] - a[1]) - d[1] * (pts[:, 0] - a[0])
    result: np.ndarray = -cross / length
    return result


def crosses_segment(p: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the move p->q, whose ends lie on opposite sides of the line a->b, passes through
    the segment a-b itself (its ends included), not the line's extension beyond them."""
    sp = float(side_of_line(p, a, b)[0])
    sq = float(side_of_line(q, a, b)[0])
    if sp == sq:
        return False
    t = sp / (sp - sq)
    hit = p + t * (q - p)
    d = b - a
    u = float(np.dot(hit - a, d) / np.dot(d, d))
    return 0.0 <= u <= 1.0


__all__ = [
    "ANCHORS",
    "ANCHOR_CONSTS",
    "KEYPOINT_MIN_SCORE",
    "KEYPOINT_PREFIX",
    "Points",
    "anchor_name",
    "anchor_points",
    "anchors",
    "box_scale",
    "crosses_segment",
    "format_point",
    "inside_polygon",
    "mask_inside",
    "side_of_line",
]
