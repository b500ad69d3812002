"""showinfo (byte for byte, vs the ffmpeg oracle), drawn boxes and labels, JSON Lines, chain routing, CLI."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest
from analytics_models import constant, lavfi_frames, make_filter, run_filter, ssd_output
from spine_util import need_installed

import avdnn
from avdnn.errors import FilterNotFoundError, InvalidArgumentError
from avdnn.filters.overlay_bboxes import DrawBoxFilter, run_lavfi
from avdnn.filters.showinfo import frame_lines
from avdnn.graph.chain import build_stages
from avdnn.graph.lavfi import LavfiSegment
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame

BBOX_HEAD = "  side data - Bounding boxes for object detection and classification: source: "


@pytest.fixture
def det_model(tmp_path: Path) -> str:
    return constant(tmp_path, "det", [ssd_output()])


def capture(logger: str = "avdnn") -> tuple[logging.Handler, list[str]]:
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    log = logging.getLogger(logger)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return handler, lines


# -- showinfo ----------------------------------------------------------------------------------------------


def test_showinfo_detection_lines_exact() -> None:
    frame = lavfi_frames("rgb24", 64, 64)[0]
    det = Detections(
        xyxy=[[16, 16, 48, 48], [0, 2, 5, 9]],
        confidence=[0.9, 0.55],
        class_id=[0, 1],
        labels=("face", "car"),
        frame_size=(64, 64),
        source="det.onnx",
    )
    frame.side_data.detections = det.with_classification(0, "happy", 0.8).with_classification(0, "young", 0.61)
    lines = frame_lines(frame, 0)
    assert lines[1:] == [
        BBOX_HEAD + "det.onnx",
        "index: 0,\tregion: (16, 16) -> (48, 48), label: face, confidence: 9000/10000.",
        "\t\tclassify:  label: happy, confidence: 8000/10000.",
        "\t\tclassify:  label: young, confidence: 6100/10000.",
        "index: 1,\tregion: (0, 2) -> (5, 9), label: car, confidence: 5500/10000.",
        "",
        "color_range:pc color_space:gbr color_primaries:unknown color_trc:unknown",
    ]
    assert lines[0].startswith(
        "n:   0 pts:      0 pts_time:0       duration:      1 duration_time:0.04    "
        "fmt:rgb24 cl:unspecified sar:0/1 s:64x64 i:P iskey:1 type:I checksum:"
    )


def test_showinfo_empty_record_prints_no_side_data() -> None:
    frame = lavfi_frames("rgb24")[0]
    frame.side_data.detections = Detections.empty((64, 64), source="det.onnx")
    assert len(frame_lines(frame, 0)) == 2  # FFmpeg attaches no side data when nothing was detected


@pytest.mark.parametrize(
    ("src", "chain"),
    [
        ("testsrc=s=64x48:r=25:d=0.12", "format=yuv420p,showinfo"),
        ("testsrc=s=65x47:r=25:d=0.08", "showinfo"),
        ("testsrc2=s=33x21:r=10:d=0.3", "format=nv12,showinfo"),
        ("testsrc2=s=33x21:r=10:d=0.3", "format=yuv420p10le,showinfo"),
        ("testsrc2=s=31x17:r=30000/1001:d=0.1", "format=gray,showinfo=checksum=0"),
        ("testsrc2=s=32x18:r=10:d=0.2", "format=yuva420p,showinfo"),
        ("testsrc2=s=32x18:r=10:d=0.2", "format=rgba,showinfo"),
        ("testsrc2=s=32x18:r=10:d=0.2", "format=bgr0,showinfo"),
    ],
)
def test_showinfo_matches_ffmpeg_oracle(ffmpeg: str, src: str, chain: str) -> None:
    proc = subprocess.run(
        [ffmpeg, "-hide_banner", "-nostdin", "-f", "lavfi", "-i", src, "-vf", chain, "-f", "null", "-"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    want = [
        re.sub(r"^\[Parsed_showinfo_\d+ @ 0x[0-9a-f]+\] ", "", line)
        for line in proc.stderr.splitlines()
        if re.match(r"^\[Parsed_showinfo_\d+ @ 0x", line)
    ]
    assert len(want) >= 4
    assert "showinfo" in [type(s).name for s in build_stages(chain) if not isinstance(s, LavfiSegment)]
    handler, lines = capture()
    try:
        frames = list(avdnn.run(src, chain, input_format="lavfi"))
    finally:
        logging.getLogger("avdnn").removeHandler(handler)
    assert frames and lines == want


def test_showinfo_after_detect_in_a_chain(det_model: str) -> None:
    handler, lines = capture()
    try:
        list(
            avdnn.run(
                "testsrc=s=64x64:r=25:d=0.08", f"dnn_detect=model={det_model}:labels=,showinfo", input_format="lavfi"
            )
        )
    finally:
        logging.getLogger("avdnn").removeHandler(handler)
    assert lines.count(BBOX_HEAD + det_model) == 2
    assert lines.count("index: 0,\tregion: (16, 16) -> (48, 48), label: 1, confidence: 9000/10000.") == 2


# -- drawbox / drawtext -----------------------------------------------------------------------------------


def test_chain_routes_box_source_to_avdnn_and_coordinates_to_libavfilter() -> None:
    stages = build_stages("drawbox=box_source=side_data_detection_bboxes:color=red,drawbox=x=1:y=1:w=4:h=4")
    assert isinstance(stages[0], DrawBoxFilter) and isinstance(stages[1], LavfiSegment)
    with pytest.raises(InvalidArgumentError, match="not supported"):
        build_stages("drawbox=box_source=something_else")


@pytest.mark.parametrize("fmt", ["yuv420p", "rgb24", "nv12"])
def test_drawbox_pixels_are_libavfilters(fmt: str) -> None:
    frame = lavfi_frames(fmt, 64, 64)[0]
    frame.side_data.detections = Detections(
        xyxy=[[16, 16, 48, 48], [-4, 50, 10, 70], [5, 5, 5, 9]],
        confidence=[0.9, 0.8, 0.7],
        class_id=[0, 0, 0],
        frame_size=(64, 64),
    )
    f = make_filter("drawbox", box_source="side_data_detection_bboxes", color="red@0.5", t=2)
    (out,) = run_filter(f, [frame])
    want = run_lavfi(
        lavfi_frames(fmt, 64, 64)[0],
        [
            ("drawbox", {"x": "16", "y": "16", "w": "32", "h": "32", "color": "red@0.5", "t": "2"}),
            ("drawbox", {"x": "-4", "y": "50", "w": "14", "h": "20", "color": "red@0.5", "t": "2"}),
        ],
    )
    for a, b in zip(out.planes, want.planes, strict=True):
        np.testing.assert_array_equal(a, b)
    assert out.detections is frame.detections or out.detections == frame.detections
    assert not np.array_equal(out.planes[0], lavfi_frames(fmt, 64, 64)[0].planes[0])


def test_drawbox_without_detections_passes_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    frame = lavfi_frames("yuv420p")[0]
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        (out,) = run_filter(make_filter("drawbox", box_source="side_data_detection_bboxes"), [frame, frame][:1])
    assert out is frame and "No detection bboxes." in caplog.text


def test_drawn_box_video_is_written_and_decodes(tmp_path: Path, det_model: str) -> None:
    out = tmp_path / "boxes.mkv"
    stats = avdnn.run(
        "testsrc=s=64x64:r=25:d=0.2",
        f"dnn_detect=model={det_model},drawbox=box_source=side_data_detection_bboxes:color=red:t=3",
        input_format="lavfi",
        output=str(out),
        codec="ffv1",
    )
    assert stats.frames_written == 5
    with av.open(str(out)) as c:
        decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(decoded) == 5
    assert (decoded[0][16:19, 16:48, 0] > 200).all() and (decoded[0][16:19, 16:48, 1:] < 60).all()


def test_drawtext_labels(tmp_path: Path) -> None:
    frame = lavfi_frames("yuv420p", 96, 64)[0]
    frame.side_data.detections = Detections(
        xyxy=[[10, 30, 60, 60]], confidence=[0.9], class_id=[0], labels=("face",), frame_size=(96, 64)
    ).with_classification(0, "happy", 0.8)
    from avdnn.filters.overlay_bboxes import box_text

    assert box_text(frame.detections[0]) == "face, happy"
    if "drawtext" not in av.filter.filters_available:
        need_installed("PIL", "no libavfilter drawtext and no Pillow, drawtext cannot draw: pip install 'avdnn[text]'")
    f = make_filter(
        "drawtext", text_source="side_data_detection_bboxes", fontcolor="white", fontsize=12, box=1, boxcolor="black"
    )
    (out,) = run_filter(f, [frame])
    before = lavfi_frames("yuv420p", 96, 64)[0].planes[0]
    changed = np.argwhere(out.planes[0] != before)
    # drawn from y = box.y - fontsize = 18 (the glyphs' ascent and the box border add a few rows)
    assert changed.size and changed[:, 0].min() >= 16 and changed[:, 0].max() < 36
    assert changed[:, 1].min() >= 10 - 1


def test_plain_drawtext_is_libavfilters() -> None:
    if "drawtext" in av.filter.filters_available:
        assert isinstance(build_stages("drawtext=text=hi")[0], LavfiSegment)
    else:
        with pytest.raises(FilterNotFoundError):
            build_stages("drawtext=text=hi")


# -- JSON Lines ---------------------------------------------------------------------------------------------


def test_jsonl_from_the_api(tmp_path: Path, det_model: str) -> None:
    path = tmp_path / "det.jsonl"
    frames = list(
        avdnn.run(
            "testsrc=s=64x64:r=25:d=0.12",
            f"dnn_detect=model={det_model},metadata_jsonl=file={path}",
            input_format="lavfi",
        )
    )
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == len(frames) == 3
    assert [r["n"] for r in records] == [0, 1, 2] and [r["pts"] for r in records] == [0, 1, 2]
    r = records[1]
    assert r["version"] == 2 and r["type"] == "frame" and r["time_base"] == "1/25" and r["time"] == pytest.approx(0.04)
    assert (r["width"], r["height"], r["source"]) == (64, 64, det_model)
    (box,) = r["boxes"]
    assert (box["x"], box["y"], box["w"], box["h"], box["label"]) == (16, 16, 32, 32, "1")
    assert box["detect_confidence"] == [9000, 10000] and box["classify"] == []
    assert r["boxes"] == frames[1].detections.to_dict()["boxes"]


def test_jsonl_next_to_a_video_output_from_the_cli(tmp_path: Path, det_model: str, avdnn_cli) -> None:
    jsonl, video = tmp_path / "d.jsonl", tmp_path / "v.mkv"
    res = avdnn_cli(
        [
            "-hide_banner",
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=64x64:r=25:d=0.16",
            "-vf",
            f"dnn_detect=model={det_model}:confidence=0.5,metadata_jsonl=file={jsonl},"
            "drawbox=box_source=side_data_detection_bboxes",
            "-c:v",
            "ffv1",
            "-y",
            str(video),
        ]
    )
    assert res.rc == 0, res.err
    lines = jsonl.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["boxes"][0]["w"] == 32 for x in lines)
    with av.open(str(video)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 4


def test_jsonl_without_file_is_einval() -> None:
    with pytest.raises(InvalidArgumentError, match="no file"):
        make_filter("metadata_jsonl")


def test_jsonl_frame_without_detections(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    run_filter(
        make_filter("metadata_jsonl", file=path, direct=1), [Frame.from_ndarray(np.zeros((4, 4, 3), np.uint8), "rgb24")]
    )
    (rec,) = [json.loads(x) for x in path.read_text().splitlines()]
    assert rec["boxes"] == [] and rec["source"] is None and rec["pts"] is None and rec["time"] is None
