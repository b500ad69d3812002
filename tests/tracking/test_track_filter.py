"""The track filter in chains: ids in the record, showinfo, JSONL, overlays, intervals, the stream's rate."""

from __future__ import annotations

import json
import logging
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from analytics_models import constant, lavfi_frames, make_filter, mean_classifier, run_filter, ssd_output
from spine_util import need_module

import avdnn
from avdnn.errors import InvalidArgumentError
from avdnn.filters.overlay_bboxes import TRACK_PALETTE, run_lavfi
from avdnn.filters.track import TrackFilter
from avdnn.media.detections import SKIPPED_KEY, Detections
from avdnn.media.frame import Frame

need_module("trackers", "pip install 'avdnn[track]'")


@pytest.fixture
def det_model(tmp_path: Path) -> str:
    """A detector that finds the (16, 16) -> (48, 48) box at 0.9 on every frame."""
    return constant(tmp_path, "det", [ssd_output()])


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_ids_reach_jsonl_and_the_summary(tmp_path: Path, det_model: str) -> None:
    out = tmp_path / "t.jsonl"
    stats = avdnn.run(
        "testsrc=s=64x64:r=25:d=0.4",
        f"dnn_detect=model={det_model},track,metadata_jsonl=file={out}",
        input_format="lavfi",
        output=str(tmp_path / "o.mkv"),
        codec="ffv1",
    )
    assert stats.frames_written == 10
    lines = jsonl(out)
    frames = [r for r in lines if r["type"] == "frame"]
    tracks = [r for r in lines if r["type"] == "track"]
    assert len(frames) == 10 and all(r["version"] == 2 for r in lines)
    ids = [b["track_id"] for r in frames for b in r["boxes"]]
    assert ids == [-1] + [0] * 9  # bytetrack confirms on the 2nd sighting (minimum_consecutive_frames=2)
    assert all(b["predicted"] is False for r in frames for b in r["boxes"])
    (summary,) = tracks
    assert summary["track_id"] == 0 and summary["frames"] == 9 and summary["detected_frames"] == 9
    assert (summary["first_pts"], summary["last_pts"]) == (1, 9) and summary["label"] == "1"
    assert summary["mean_confidence"] == pytest.approx(0.9, abs=1e-6)
    assert Detections.from_dict(frames[3]).track_ids.tolist() == [0]


def test_summary_can_be_turned_off(tmp_path: Path, det_model: str) -> None:
    out = tmp_path / "t.jsonl"
    list(
        avdnn.run(
            "testsrc=s=64x64:r=25:d=0.2",
            f"dnn_detect=model={det_model},track,metadata_jsonl=file={out}:summary=0",
            input_format="lavfi",
        )
    )
    assert [r["type"] for r in jsonl(out)] == ["frame"] * 5


def test_interval_skips_inference_and_track_predicts(tmp_path: Path, det_model: str) -> None:
    out = tmp_path / "t.jsonl"
    frames = list(
        avdnn.run(
            "testsrc=s=64x64:r=25:d=0.48",
            f"dnn_detect=model={det_model}:interval=3,track,metadata_jsonl=file={out}",
            input_format="lavfi",
        )
    )
    skipped = [f.side_data.metadata.get(SKIPPED_KEY) == "1" for f in frames]
    assert skipped == [i % 3 != 0 for i in range(12)]
    recs = [r for r in jsonl(out) if r["type"] == "frame"]
    state = [[(b["track_id"], b["predicted"]) for b in r["boxes"]] for r in recs]
    # frame 0: seen once, not confirmed, so nothing to predict on 1, 2; frame 3 confirms id 0
    assert state[:6] == [[(-1, False)], [], [], [(0, False)], [(0, True)], [(0, True)]]
    assert all(s == [(0, i % 3 != 0)] for i, s in enumerate(state[3:], start=3))
    predicted = [b for r in recs[4:] for b in r["boxes"] if b["predicted"]]
    assert all(abs(b["xyxy"][0] - 16) < 1 and abs(b["xyxy"][3] - 48) < 1 and b["label"] == "1" for b in predicted)


def test_dnn_detect_without_track_leaves_skipped_frames_bare(det_model: str) -> None:
    frames = list(
        avdnn.run("testsrc=s=64x64:r=25:d=0.16", f"dnn_detect=model={det_model}:interval=2", input_format="lavfi")
    )
    assert [f.detections is not None for f in frames] == [True, False, True, False]


def test_showinfo_prints_the_track_line(det_model: str, avdnn_cli: Any) -> None:
    res = avdnn_cli(
        [
            "-loglevel",
            "verbose",
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=64x64:r=25:d=0.2",
            "-vf",
            f"dnn_detect=model={det_model}:interval=2,track,showinfo",
            "-f",
            "null",
            "-",
        ]
    )
    assert res.rc == 0, res.err
    # 5 frames, inference on 0, 2, 4: frame 0's box is not confirmed yet, so frame 1 has nothing to predict
    assert res.err.count("\t\ttrack:  id: 0, detected.") == 2  # frames 2 and 4
    assert res.err.count("\t\ttrack:  id: 0, predicted.") == 1  # frame 3
    assert "track: 1 tracks (ids 0..0)" in res.err  # the end-of-stream summary (INFO)
    assert "track 0: 1, frames 3 (detected 2), pts 2..4" in res.err  # and per track (verbose)


def test_unknown_option_for_the_tracker_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="tracker 'sort' has no option high_conf_det_threshold"):
        make_filter("track", tracker="sort", high_conf_det_threshold=0.5)
    with pytest.raises(InvalidArgumentError, match="unknown tracker 'kcf'"):
        make_filter("track", tracker="kcf")
    with pytest.raises(InvalidArgumentError, match="not found"):
        make_filter("track", bogus=1)


def test_frame_rate_comes_from_the_stream(register: Any) -> None:
    seen: list[tuple[float, int]] = []

    @register
    class Probe(TrackFilter):
        name: ClassVar[str] = "track_probe"

        def configure(self, frame: Frame) -> None:
            super().configure(frame)
            lib = self.tracker.tracker  # type: ignore[union-attr]
            seen.append((self.frame_rate, lib.maximum_frames_without_update))

    list(avdnn.run("testsrc=s=32x32:r=10:d=0.3", "track_probe", input_format="lavfi"))
    list(avdnn.run("testsrc=s=32x32:r=10:d=0.3", "track_probe=frame_rate=60", input_format="lavfi"))
    list(avdnn.run("testsrc=s=32x32:r=10:d=0.3", "track_probe=frame_rate=30000/1001", input_format="lavfi"))
    assert seen == [(10.0, 10), (60.0, 60), (30000 / 1001, 30)]  # lost_track_buffer 30 (at 30 fps), scaled
    with pytest.raises(InvalidArgumentError, match="Invalid frame rate 'fast'"):
        make_filter("track", frame_rate="fast")


def tracked_frame(fmt: str = "rgb24") -> Frame:
    frame: Frame = lavfi_frames(fmt, 96, 64)[0]
    frame.side_data.detections = Detections(
        xyxy=[[8, 20, 40, 50], [50, 20, 90, 60], [30, 2, 34, 6]],
        confidence=[0.9, 0.8, 0.7],
        class_id=[0, 1, 1],
        labels=("face", "cat", "cat"),
        frame_size=(96, 64),
        track_id=[3, 25, -1],
    )
    return frame


@pytest.mark.parametrize("fmt", ["yuv420p", "rgb24"])
def test_drawbox_colours_by_track_id(fmt: str) -> None:
    (out,) = run_filter(
        make_filter("drawbox", box_source="side_data_detection_bboxes", color="white@0.5", track_color=1),
        [tracked_frame(fmt)],
    )
    want = run_lavfi(
        tracked_frame(fmt),
        [
            ("drawbox", {"x": "8", "y": "20", "w": "32", "h": "30", "color": TRACK_PALETTE[3] + "@0.5"}),
            ("drawbox", {"x": "50", "y": "20", "w": "40", "h": "40", "color": TRACK_PALETTE[25 % 20] + "@0.5"}),
            ("drawbox", {"x": "30", "y": "2", "w": "4", "h": "4", "color": "white@0.5"}),
        ],
    )
    for a, b in zip(out.planes, want.planes, strict=True):
        np.testing.assert_array_equal(a, b)


def test_drawtext_puts_the_id_first(caplog: pytest.LogCaptureFixture) -> None:
    from avdnn.filters.overlay_bboxes import box_text

    det = tracked_frame().detections
    assert [box_text(b) for b in det] == ["#3 face", "#25 cat", "cat"]
    det = det.with_classification(0, "happy", 0.8)
    assert box_text(det[0]) == "#3 face, happy"


def test_reclassify_interval_reuses_a_tracks_labels(tmp_path: Path) -> None:
    """Box A (track 7) is painted 10 + k on frame k, box B (untracked) 100 + k; the classifier reads the mean."""
    model = mean_classifier(tmp_path)

    def frames() -> list[Frame]:
        out = []
        for k in range(7):
            img = np.zeros((64, 96, 3), np.uint8)
            img[8:40, 8:40] = 10 + k
            img[8:40, 50:82] = 100 + k
            f = Frame.from_ndarray(img, "rgb24", pts=k)
            f.side_data.detections = Detections(
                xyxy=[[8, 8, 40, 40], [50, 8, 82, 40]],
                confidence=[0.9, 0.9],
                class_id=[0, 0],
                frame_size=(96, 64),
                track_id=[7, -1],
            )
            out.append(f)
        return out

    def labels(interval: int) -> list[tuple[str, str]]:
        f = make_filter("dnn_classify", model=model, confidence=0, reclassify_interval=interval)
        out = run_filter(f, frames())
        return [(o.detections[0].classify[0][0], o.detections[1].classify[0][0]) for o in out]

    b = [str(100 + k) for k in range(7)]
    assert labels(1) == list(zip([str(10 + k) for k in range(7)], b, strict=True))
    assert labels(3) == list(zip(["10", "10", "10", "13", "13", "13", "16"], b, strict=True))
    assert labels(0) == list(zip(["10"] * 7, b, strict=True))

    # decided when a frame is submitted, so any async/nireq/batch_size gives the same labels
    def labels_with(**engine: Any) -> list[tuple[str, str]]:
        f = make_filter("dnn_classify", model=model, confidence=0, reclassify_interval=3, **engine)
        return [(o.detections[0].classify[0][0], o.detections[1].classify[0][0]) for o in run_filter(f, frames())]

    assert labels_with(**{"async": 0}) == labels_with(nireq=3, batch_size=2) == labels(3)


def test_python_api_sees_ids(det_model: str) -> None:
    out = [
        f.detections
        for f in avdnn.run("testsrc=s=64x64:r=25:d=0.12", f"dnn_detect=model={det_model},track", input_format="lavfi")
    ]
    assert [d[0].track_id for d in out] == [-1, 0, 0] and not any(d[0].predicted for d in out)
    assert isinstance(out[1].track_ids, np.ndarray)


def test_a_frame_without_detections_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    f = make_filter("track")
    f.output_rate(Fraction(25))
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        out = run_filter(f, lavfi_frames("rgb24", 32, 32, count=2))
    assert len(out) == 2 and all(o.detections is None for o in out)
    assert caplog.text.count("put dnn_detect before track") == 1


def test_help_lists_the_trackers_and_their_defaults(avdnn_cli: Any) -> None:
    res = avdnn_cli(["-hide_banner", "-h", "filter=track"])
    text = res.out.decode() + res.err
    assert res.rc == 0 and "Filter track (avdnn)" in text and "lost_track_buffer" in text
    sort_line = next(line for line in text.splitlines() if line.strip().startswith("sort "))
    following = text.splitlines()[text.splitlines().index(sort_line) + 1]
    assert "track_activation_threshold=0.25" in following and "minimum_consecutive_frames=3" in following


def test_a_run_stopped_by_frames_still_writes_the_track_summary(tmp_path: Path, det_model: str, avdnn_cli: Any) -> None:
    out = tmp_path / "t.jsonl"
    res = avdnn_cli(
        [
            "-hide_banner",
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=64x64:r=25:d=2",
            "-frames:v",
            "6",
            "-vf",
            f"dnn_detect=model={det_model},track,metadata_jsonl=file={out}",
            "-f",
            "null",
            "-",
        ]
    )
    assert res.rc == 0, res.err
    lines = jsonl(out)
    tracks = [r for r in lines if r["type"] == "track"]
    assert len(tracks) == 1 and tracks[0]["frames"] == sum(1 for r in lines if r["type"] == "frame") - 1
    assert "track: 1 tracks (ids 0..0)" in res.err


def test_each_stream_has_its_own_tracker(det_model: str) -> None:
    """Two streams with the same model, consumed interleaved: each gets the ids it gets alone."""
    chain = f"dnn_detect=model={det_model},track"
    alone = [
        f.detections.track_ids.tolist() for f in avdnn.run("testsrc=s=64x64:r=25:d=0.2", chain, input_format="lavfi")
    ]
    a = avdnn.run("testsrc=s=64x64:r=25:d=0.2", chain, input_format="lavfi")
    b = avdnn.run("testsrc2=s=64x64:r=25:d=0.2", chain, input_format="lavfi")
    both = [(fa.detections.track_ids.tolist(), fb.detections.track_ids.tolist()) for fa, fb in zip(a, b, strict=True)]
    assert [x for x, _ in both] == [y for _, y in both] == alone == [[-1]] + [[0]] * 4


def test_track_keeps_the_objects_columns_and_votes_the_text() -> None:
    """Keypoints and masks stay with their box through the tracker; reads before track are voted."""
    from avdnn.media.detections import Mask

    frames = lavfi_frames("rgb24", 64, 64, 4)
    reads = ["AB12", "A812", "AB12", "AB12"]
    for f, text in zip(frames, reads, strict=True):
        f.side_data.detections = Detections(
            xyxy=[[16, 16, 48, 48], [2, 2, 10, 10]],
            confidence=[0.9, 0.8],
            class_id=[0, 1],
            frame_size=(64, 64),
            keypoints=np.array([[[20, 20, 0.9]], [[3, 3, 0.8]]], np.float32),
            masks=(Mask(16, 16, np.ones((32, 32), bool)), None),
            text=(text, ""),
            text_score=[0.9, np.nan],
        )
    out = run_filter(make_filter("track", text_votes=2, minimum_consecutive_frames=1), frames)
    dets = [f.detections for f in out]
    assert all(d.keypoints[:, 0, 0].tolist() == [20.0, 3.0] for d in dets)
    assert all(d.masks[0] is not None and d.masks[1] is None for d in dets)
    # frame 0: no id yet, the box keeps its own read; then the track's reads are counted from frame 1
    assert [d.track_ids[0] for d in dets][1:] == [dets[1].track_ids[0]] * 3 and dets[0].track_ids[0] == -1
    assert [d.text[0] for d in dets] == ["AB12", "", "", "AB12"]
