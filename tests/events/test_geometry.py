"""Points, anchors, polygons and lines: the parser, and the geometry against supervision's own."""

from __future__ import annotations

import numpy as np
import pytest

from avdnn.errors import InvalidArgumentError
from avdnn.events.geometry import ANCHORS, Points, anchors, crosses_segment, inside_polygon, side_of_line


def test_points_take_pixels_and_size_expressions() -> None:
    pts = Points.parse("0_ih/2|iw_ih/2|iw-10_H-(ih/4)|-5_2.5", at_least=2)
    assert pts.resolve(640, 272).tolist() == [[0, 136], [640, 136], [630, 204], [-5, 2.5]]
    assert pts.resolve(100, 100).tolist() == [[0, 50], [100, 50], [90, 75], [-5, 2.5]]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("10_20|30", "is not X_Y"),
        ("10_20|30_40_50", "is not X_Y"),
        ("10_20|x_40", "is not a coordinate"),
        ("10_20|exit(1)_1", "is not a coordinate"),
        ("10_20|1/0_1", "is not a coordinate"),
        ("10_20", "expected 2 points"),
        ("10_20|1_2|3_4", "expected 2 points"),
    ],
)
def test_bad_points_are_refused_with_the_reason(text: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match=why) as err:
        Points.parse(text, at_least=2, at_most=2)
    assert err.value.option == "points"


def test_anchors_follow_supervision_positions() -> None:
    sv = pytest.importorskip("supervision")
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 100, (20, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(1, 50, (20, 2))], axis=1)
    det = sv.Detections(xyxy=boxes)
    for name in ANCHORS:
        want = det.get_anchors_coordinates(sv.Position[name.upper()])
        assert np.allclose(anchors(boxes, name), want), name


def test_inside_polygon_agrees_with_supervision_polygon_zone() -> None:
    sv = pytest.importorskip("supervision")
    polygon = np.array([[10, 10], [90, 20], [70, 80], [40, 50], [15, 85]])
    rng = np.random.default_rng(7)
    centres = rng.integers(0, 100, (400, 2)).astype(float)
    boxes = np.concatenate([centres - [3, 6], centres], axis=1)  # bottom centre = the integer point
    zone = sv.PolygonZone(polygon=polygon, triggering_anchors=(sv.Position.BOTTOM_CENTER,))
    want = zone.trigger(sv.Detections(xyxy=boxes))
    got = inside_polygon(anchors(boxes, "bottom_center"), polygon.astype(float))
    # supervision rasterises the polygon (cv2.fillPoly): its edge pixels may go either way
    edge = np.array([_near_edge(p, polygon) for p in anchors(boxes, "bottom_center")])
    assert (got == want)[~edge].all()
    assert (~edge).sum() > 300


def _near_edge(p: np.ndarray, polygon: np.ndarray) -> bool:
    for a, b in zip(polygon, np.roll(polygon, -1, axis=0), strict=True):
        d = b - a
        t = np.clip(np.dot(p - a, d) / np.dot(d, d), 0, 1)
        if np.hypot(*(a + t * d - p)) < 1.5:
            return True
    return False


def test_a_point_on_the_edge_or_a_vertex_is_inside() -> None:
    square = np.array([[0, 0], [10, 0], [10, 10], [0, 10]], dtype=float)
    pts = np.array([[5, 0], [10, 5], [0, 0], [10, 10], [5, 5], [10.001, 5], [-0.001, 0]])
    assert inside_polygon(pts, square).tolist() == [True, True, True, True, True, False, False]


def test_left_of_a_directed_line_is_supervisions_in_side() -> None:
    """A line drawn left to right: above it is its left (positive), as supervision counts 'in'."""
    a, b = np.array([0.0, 100.0]), np.array([200.0, 100.0])
    assert side_of_line(np.array([[50, 60], [50, 140], [50, 100]]), a, b).tolist() == [40.0, -40.0, 0.0]
    sv = pytest.importorskip("supervision")
    line = sv.LineZone(start=sv.Point(0, 100), end=sv.Point(200, 100), triggering_anchors=[sv.Position.BOTTOM_CENTER])
    for y in (140, 60):  # from below (right of the line) to above (its left)
        line.trigger(sv.Detections(xyxy=np.array([[45.0, y - 10, 55, y]]), tracker_id=np.array([1])))
    assert (line.in_count, line.out_count) == (1, 0)


def test_a_move_round_the_end_of_a_line_does_not_cross_it() -> None:
    a, b = np.array([0.0, 0.0]), np.array([10.0, 0.0])
    assert crosses_segment(np.array([5.0, -3]), np.array([5.0, 3]), a, b)
    assert crosses_segment(np.array([10.0, -3]), np.array([10.0, 3]), a, b)  # through its end point
    assert not crosses_segment(np.array([12.0, -3]), np.array([13.0, 3]), a, b)
    assert not crosses_segment(np.array([-4.0, -3]), np.array([-1.0, 3]), a, b)
