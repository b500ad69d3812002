"""Keypoints, masks, text and rotated boxes on the way out: showinfo's lines, the JSONL record, drawobjects."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from analytics_models import make_filter, run_filter

from avdnn.dnn.detect import COCO_KEYPOINTS
from avdnn.filters.metadata_jsonl import frame_record
from avdnn.filters.showinfo import detection_lines
from avdnn.media.detections import Detections, Mask
from avdnn.media.frame import Frame

pytest.importorskip("PIL")


def record() -> Detections:
    bits = np.zeros((4, 6), bool)
    bits[1:3, 1:5] = True
    kp = np.zeros((2, 17, 3), np.float32)
    kp[0, :, 0] = np.arange(17) * 3  # along the bottom row, clear of the mask and the plate
    kp[0, :, 1] = 45
    kp[0, :, 2] = 0.5
    kp[0, 16, :] = (60, 2, 0.1)  # under drawobjects' keypoint_threshold: not drawn
    kp[1] = np.nan
    return Detections(
        xyxy=[[10, 10, 16, 14], [30, 30, 50, 40]],
        confidence=[0.9, 0.8],
        class_id=[0, 1],
        labels=("person", "plate"),
        frame_size=(64, 48),
        source="m",
        keypoints=kp,
        keypoint_names=COCO_KEYPOINTS,
        masks=(Mask(10, 10, bits), None),
        text=("", "AB12"),
        text_score=[np.nan, 0.97],
        xywhr=[[np.nan] * 5, [40, 35, 20, 10, 0.5]],
    )


def test_showinfo_prints_the_objects_columns() -> None:
    lines = detection_lines(record())
    assert lines[1] == "index: 0,\tregion: (10, 10) -> (16, 14), label: person, confidence: 9000/10000."
    assert lines[2] == "\t\tmask:  area: 8, bounds: (11, 11) -> (15, 13)."
    assert lines[3].startswith("\t\tkeypoints:  nose: (0.0, 45.0) 0.50, left_eye: (3.0, 45.0) 0.50, ")
    assert lines[3].endswith("right_ankle: (60.0, 2.0) 0.10.")
    assert lines[5:7] == [
        '\t\ttext:  "AB12", confidence: 9700/10000.',
        "\t\tangle:  0.5000 rad, centre: (40.0, 35.0), size: 20.0x10.0.",
    ]
    assert lines[-1] == "" and len(lines) == 8


def test_jsonl_record_carries_them(tmp_path: Path) -> None:
    frame = Frame.from_ndarray(np.zeros((48, 64, 3), np.uint8))
    frame.side_data.detections = record()
    rec = json.loads(json.dumps(frame_record(frame, 0), allow_nan=False))
    person, plate = rec["boxes"]
    assert person["keypoint_names"][:2] == ["nose", "left_eye"] and person["keypoints"][1] == [3.0, 45.0, 0.5]
    # column-major COCO RLE of the 64x48 frame: columns 11..14, rows 11..12
    assert person["mask"]["size"] == [48, 64]
    assert person["mask"]["counts"] == [11 * 48 + 11, 2, 46, 2, 46, 2, 46, 2, 48 * 64 - (14 * 48 + 13)]
    assert "text" not in person and "angle" not in person and "keypoints" not in plate
    assert (plate["text"], plate["angle"]) == ("AB12", 0.5) and plate["text_score"] == pytest.approx(0.97)


def test_drawobjects_blends_masks_and_draws_points_lines_and_text() -> None:
    grey = np.full((48, 64, 3), 100, np.uint8)
    frame = Frame.from_ndarray(grey.copy())
    frame.side_data.detections = record()
    f = make_filter("drawobjects", color="0xFF0000", mask_opacity=0.5, radius=2, keypoint_threshold=0.4)
    (out,) = run_filter(f, [frame])
    px = out.to_ndarray()
    # the mask: exactly half red over the grey, nothing outside it (away from the other drawings)
    assert px[11, 11].tolist() == [178, 50, 50] and px[12, 14].tolist() == [178, 50, 50]
    assert px[10, 10].tolist() == [100, 100, 100] and px[13, 15].tolist() == [100, 100, 100]
    assert px[45, 0].tolist() == [255, 0, 0]  # the nose's dot, full colour
    assert px[2, 60].tolist() == [100, 100, 100]  # the unsure ankle is left out
    assert (px[28:44, 28:54] != 100).any()  # the rotated box's outline
    assert (px[5:30, 28:60] != 100).any()  # the read text above the plate's box
    quiet = make_filter("drawobjects", mask_opacity=0, radius=0, text=0, keypoint_threshold=1)
    frame2 = Frame.from_ndarray(grey.copy())
    frame2.side_data.detections = record()[0:1]
    (same,) = run_filter(quiet, [frame2])
    assert np.array_equal(same.to_ndarray(), grey)
