"""Zones and lines counting by a keypoint (``anchor=keypoint:NAME``), and a zone by mask area."""

from __future__ import annotations

import numpy as np
import pytest

from avdnn.errors import InvalidArgumentError
from avdnn.events.geometry import Points, anchor_points, mask_inside
from avdnn.events.lines import LineCounter
from avdnn.events.zones import ZoneCounter
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter
from avdnn.graph.parse import split_options
from avdnn.media.detections import Detections, Mask


def person(track_id: int, box: list[float], ankle: tuple[float, float, float], mask: Mask | None = None) -> Detections:
    kp = np.zeros((1, 2, 3), np.float32)
    kp[0, 0] = (box[0], box[1], 0.9)  # nose at the top-left
    kp[0, 1] = ankle
    return Detections(
        xyxy=[box],
        confidence=[0.9],
        class_id=[0],
        labels=("person",),
        frame_size=(100, 100),
        track_id=[track_id],
        keypoints=kp,
        keypoint_names=("nose", "left_ankle"),
        masks=None if mask is None else (mask,),
    )


def test_anchor_points_use_the_keypoint_when_sure() -> None:
    det = Detections.merge([person(1, [10, 10, 30, 50], (12, 48, 0.8)), person(2, [60, 10, 80, 50], (70, 40, 0.1))])
    pts = anchor_points(det, [0, 1], "keypoint:left_ankle", (2.0, 1.0))
    assert pts.tolist() == [[24.0, 48.0], [140.0, 50.0]]  # the unsure ankle: the box's bottom centre
    assert anchor_points(det, [1], "keypoint:elbow", (1.0, 1.0)).tolist() == [[70.0, 50.0]]  # not a keypoint of it
    assert anchor_points(det, [0], "center", (1.0, 1.0)).tolist() == [[20.0, 30.0]]


def test_anchor_keypoint_in_a_filter_string_and_refusals() -> None:
    cls = get_filter("zone")
    items = split_options("name=z:points=0_0|50_0|50_50:anchor=keypoint:left_ankle", cls.joins)
    values = bind_options(cls.options, items, filter_name="zone")
    assert cls(values, label="zone").counter.anchor == "keypoint:left_ankle"
    assert cls(bind_options(cls.options, [("points", "0_0|5_0|5_5"), ("anchor", "center")], filter_name="zone"))
    with pytest.raises(InvalidArgumentError, match="keypoint's name"):
        cls(bind_options(cls.options, [("points", "0_0|5_0|5_5"), ("anchor", "keypoint:")], filter_name="zone"))


def test_zone_enters_by_the_ankle_and_line_crosses_by_it() -> None:
    zone = ZoneCounter("floor", Points.parse("0_60|100_60|100_100|0_100", at_least=3), anchor="keypoint:left_ankle")
    box = [10.0, 10.0, 30.0, 70.0]  # the box's bottom centre (20, 70) is in the zone, the ankle not yet
    assert zone.update(person(1, box, (15, 55, 0.9)), (100, 100), 0.0, 0) == []
    events = zone.update(person(1, box, (15, 65, 0.9)), (100, 100), 0.04, 1)
    assert [e["type"] for e in events] == ["enter"]
    line = LineCounter("gate", Points.parse("0_50|100_50", at_least=2, at_most=2), anchor="keypoint:left_ankle")
    line.update(person(1, box, (15, 45, 0.9)), (100, 100), 0.0, 0)
    crossed = line.update(person(1, box, (15, 55, 0.9)), (100, 100), 0.04, 1)
    assert [e["type"] for e in crossed] == ["cross"]


def test_zone_by_mask_share() -> None:
    bits = np.zeros((40, 20), bool)
    bits[:, :] = True  # a 20x40 mask at (10, 10): rows 10..49
    mask = Mask(10, 10, bits)
    zone_pts = np.array([[0, 0], [100, 0], [100, 30], [0, 30]], np.float64)  # rows 0..29: half the mask
    det = person(1, [10, 10, 30, 50], (0, 0, 0.0), mask)
    far = np.array([False])
    assert mask_inside(det, [0], zone_pts, (1.0, 1.0), 0.5, far).tolist() == [True]
    assert mask_inside(det, [0], zone_pts, (1.0, 1.0), 0.51, far).tolist() == [False]
    # the frame is twice the detections' size: the polygon is scaled back onto the mask
    assert mask_inside(det, [0], zone_pts * 2, (2.0, 2.0), 0.5, far).tolist() == [True]
    plain = Detections(xyxy=[[0, 0, 1, 1]], confidence=[1], class_id=[0], frame_size=(100, 100))
    assert mask_inside(plain, [0], zone_pts, (1.0, 1.0), 0.5, np.array([True])).tolist() == [True]
    zone = ZoneCounter("top", Points.parse("0_0|100_0|100_30|0_30", at_least=3), mask_overlap=0.5)
    assert [e["type"] for e in zone.update(det, (100, 100), 0.0, 0)] == ["enter"]
    by_anchor = ZoneCounter("top", Points.parse("0_0|100_0|100_30|0_30", at_least=3))
    assert by_anchor.update(det, (100, 100), 0.0, 0) == []  # its bottom centre (20, 50) is below the zone
