"""The Python API: avdnn.run() frames as numpy planes, accounting, outputs, side data, Frame."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from spine_util import lost_in, run_ffmpeg

import avdnn
from avdnn.filters.base import Filter
from avdnn.media.frame import Frame, SideData

ODD = "testsrc=s=97x61:d=0.2"  # 5 frames, odd size: chroma rounding and line padding
PIX_FMTS = {
    # name: [(plane shape, dtype)] at 97x61
    "rgb24": [((61, 97, 3), np.uint8)],
    "bgr24": [((61, 97, 3), np.uint8)],
    "gray": [((61, 97), np.uint8)],
    "grayf32": [((61, 97), np.dtype("<f4"))],
    "yuv420p": [((61, 97), np.uint8), ((31, 49), np.uint8), ((31, 49), np.uint8)],
    "yuv422p": [((61, 97), np.uint8), ((61, 49), np.uint8), ((61, 49), np.uint8)],
    "yuv444p": [((61, 97), np.uint8)] * 3,
    "yuv410p": [((61, 97), np.uint8), ((16, 25), np.uint8), ((16, 25), np.uint8)],
    "yuv411p": [((61, 97), np.uint8), ((61, 25), np.uint8), ((61, 25), np.uint8)],
    "nv12": [((61, 97), np.uint8), ((31, 49, 2), np.uint8)],
}


def _lavfi(chain: str = "", graph: str = ODD, **kw: Any) -> Any:
    return avdnn.run(graph, chain, input_format="lavfi", **kw)


# --------------------------------------------------------------------------- frames and formats


@pytest.mark.parametrize("fmt", list(PIX_FMTS))
def test_planes_match_ffmpeg_rawvideo(ffmpeg: str, fmt: str) -> None:
    frames = list(_lavfi(f"format={fmt}"))
    assert len(frames) == 5
    raw = b""
    for frame in frames:
        assert (frame.width, frame.height) == (97, 61)
        assert frame.format == ("grayf32le" if fmt == "grayf32" else fmt)
        planes = frame.planes
        assert [(p.shape, p.dtype) for p in planes] == [(s, np.dtype(d)) for s, d in PIX_FMTS[fmt]]
        raw += b"".join(np.ascontiguousarray(p).tobytes() for p in planes)
    want = run_ffmpeg(ffmpeg, ["-f", "lavfi", "-i", ODD, "-vf", f"format={fmt}", "-f", "rawvideo", "-"])
    assert want.rc == 0, want.err
    assert len(raw) == len(want.out)
    assert raw == want.out


def test_to_ndarray_one_plane_only() -> None:
    frame = next(iter(_lavfi("format=rgb24")))
    assert frame.to_ndarray().shape == (61, 97, 3)
    yuv = next(iter(_lavfi("format=yuv420p")))
    with pytest.raises(avdnn.InvalidArgumentError):
        yuv.to_ndarray()


def test_pts_and_time_base() -> None:
    frames = list(_lavfi("scale=32:32", graph="testsrc=s=64x48:r=10:d=0.5"))
    assert [f.pts for f in frames] == [0, 1, 2, 3, 4]
    assert {f.time_base for f in frames} == {Fraction(1, 10)}
    assert [f.time for f in frames] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])


def _showinfo(ffmpeg: str, graph: str, chain: str) -> tuple[Fraction, list[int], list[float]]:
    """The oracle's time base, pts and pts_time of the frames leaving ``chain`` (its showinfo lines)."""
    args = ["-loglevel", "info", "-f", "lavfi", "-i", graph, "-vf", f"{chain},showinfo", "-f", "null", "-"]
    res = run_ffmpeg(ffmpeg, args)
    assert res.rc == 0, res.err
    (tb,) = re.findall(r"Parsed_showinfo.*config in time_base: (\d+/\d+)", res.err)
    frames = re.findall(r"Parsed_showinfo.* n: *\d+ pts: *(-?\d+) pts_time:(\S+)", res.err)
    return Fraction(tb), [int(p) for p, _ in frames], [float(t) for _, t in frames]


@pytest.mark.parametrize("chain", ["setpts=2*PTS+1", "setpts=2*PTS+1,fps=5"])
def test_pts_after_setpts_and_fps(ffmpeg: str, chain: str) -> None:
    """The frames' pts, time base and time are the oracle's (showinfo after the same chain)."""
    graph = "testsrc=s=32x32:r=10:d=1"
    tb, pts, times = _showinfo(ffmpeg, graph, chain)
    frames = list(_lavfi(chain, graph=graph))
    assert len(pts) >= 10 and pts[0] == 1  # setpts moved the frames (fps=5 then keeps 10 of them)
    assert [f.pts for f in frames] == pts
    assert {f.time_base for f in frames} == {tb}
    assert [f.time for f in frames] == pytest.approx(times)


def test_frames_limit_closes_cleanly() -> None:
    limited = _lavfi("format=gray", graph="testsrc=s=32x32:d=10", frames=3)
    got = list(limited)
    assert len(got) == 3
    assert limited.stats.frames_written == 3
    assert limited.stats.stopped_early
    assert limited.stats.check(), limited.stats.summary()
    from avdnn.run.pipeline import QUEUE_DEPTH

    # stopped reading, not decoded to the end (the decoder thread runs at most a queue ahead)
    assert limited.stats.frames_read <= 3 + QUEUE_DEPTH + 2


def test_frames_limit_with_a_lossy_stage_fails_the_check(lossy: str) -> None:
    limited = _lavfi(f"{lossy},format=gray", graph="testsrc=s=32x32:d=10", frames=3)
    assert len(list(limited)) == 3 and limited.stats.stopped_early
    assert not limited.stats.check() and lost_in(limited.stats.violations()), limited.stats.summary()


def test_stream_close_early() -> None:
    with _lavfi("format=gray", graph="testsrc=s=32x32:d=10") as stream:
        for i, _ in enumerate(stream):
            if i == 4:
                break
    stats = stream.stats
    assert stats.frames_written == 5 and stats.stopped_early
    assert stats.check(), stats.summary()


def test_stream_close_early_with_a_lossy_stage(lossy: str) -> None:
    with _lavfi(f"{lossy},format=gray", graph="testsrc=s=32x32:d=10") as stream:
        for i, _ in enumerate(stream):
            if i == 4:
                break
    assert stream.stats.frames_written == 5 and stream.stats.stopped_early
    assert not stream.stats.check() and lost_in(stream.stats.violations()), stream.stats.summary()


def test_stats_balance() -> None:
    stream = _lavfi("scale=16:16,format=gray", graph="testsrc=s=32x32:d=0.4")
    assert len(list(stream)) == 10
    stats = stream.stats
    assert stats.frames_read == stats.frames_written == 10
    assert stats.frames_failed == 0 and stats.failures == {} and stats.frames_dropped == {}
    assert stats.check()
    shown = json.loads(json.dumps(stats.as_dict()))  # plain JSON, and what it says
    assert (shown["frames_read"], shown["frames_written"], shown["frames_failed"]) == (10, 10, 0)
    assert shown["failures"] == {} and shown["frames_dropped"] == {} and shown["frames_unfinished"] == {}
    assert shown["violations"] == [] and shown["error"] is None and shown["input"]["frames_decoded"] == 10


def test_fps_drops_are_accounted() -> None:
    stream = _lavfi("fps=5", graph="testsrc=s=32x32:d=1")
    assert len(list(stream)) == 5
    stats = stream.stats
    assert stats.frames_read == 25 and stats.frames_written == 5
    assert stats.frames_dropped == {"fps": 20}
    assert stats.check(), stats.summary()


def test_fps_drops_with_output(tmp_path: Path) -> None:
    stats = _lavfi("fps=5", graph="testsrc=s=32x32:d=1", output=str(tmp_path / "o.mkv"))
    assert stats.frames_read == 25 and stats.frames_written == 5
    assert sum(stats.frames_dropped.values()) == 20
    assert stats.check(), stats.summary()


# --------------------------------------------------------------------------- outputs


@pytest.mark.parametrize(("name", "codec"), [("out.mp4", None), ("out.mkv", None), ("out.mp4", "libx264")])
def test_output_file_decodes(tmp_path: Path, name: str, codec: str | None) -> None:
    import av

    out = tmp_path / name
    stats = _lavfi("scale=64:48", graph="testsrc=s=32x32:d=0.5", output=str(out), codec=codec)
    assert isinstance(stats, avdnn.RunStats)
    assert stats.frames_read == stats.frames_written == 13  # d=0.5 at 25 fps: 13 frames, as ffmpeg
    assert stats.check()
    with av.open(str(out)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == 13
    assert (frames[0].width, frames[0].height) == (64, 48)


def test_output_to_file_object() -> None:
    import io

    buf = io.BytesIO()
    stats = _lavfi("format=gray", graph="testsrc=s=32x32:d=0.2", output=buf, format="rawvideo")
    assert stats.frames_written == 5
    assert len(buf.getvalue()) == 5 * 32 * 32


def test_output_frames_limit(tmp_path: Path) -> None:
    import av

    out = tmp_path / "limited.mkv"
    stats = _lavfi("", graph="testsrc=s=32x32:d=10", output=str(out), frames=4)
    assert stats.frames_written == 4 and stats.check(), stats.summary()
    with av.open(str(out)) as container:
        assert sum(1 for _ in container.decode(video=0)) == 4


def test_output_frames_limit_with_a_lossy_stage(tmp_path: Path, lossy: str) -> None:
    stats = _lavfi(lossy, graph="testsrc=s=32x32:d=10", output=str(tmp_path / "limited.mkv"), frames=4)
    assert stats.frames_written == 4 and stats.stopped_early
    assert not stats.check() and lost_in(stats.violations()), stats.summary()


def test_missing_input_raises_not_found() -> None:
    with pytest.raises(avdnn.NotFoundError) as info:
        avdnn.run("/nonexistent/in.mp4")
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.code == -2 and info.value.file == "/nonexistent/in.mp4"


def test_unknown_filter_raises_before_reading() -> None:
    with pytest.raises(avdnn.FilterNotFoundError, match="did you mean 'scale'"):
        _lavfi("scal=1:1")


# --------------------------------------------------------------------------- side data


class _Tagger(Filter):
    name = "avdnn_test_tag"
    description = "Tags frames with metadata and detections."

    def filter(self, frame: Frame) -> Sequence[Frame]:
        frame.side_data.metadata["avdnn.test.pts"] = str(frame.pts)
        frame.side_data.detections = ("box", frame.pts)
        return (frame,)


class _Reader(Filter):
    name = "avdnn_test_read"
    description = "Records the side data it sees."
    seen: ClassVar[list[tuple[Any, dict[str, str], int, int]]] = []

    def filter(self, frame: Frame) -> Sequence[Frame]:
        type(self).seen.append((frame.detections, dict(frame.side_data.metadata), frame.width, frame.pts))
        return (frame,)


def test_side_data_survives_a_lavfi_segment(register) -> None:  # type: ignore[no-untyped-def]
    register(_Tagger)
    register(_Reader)
    _Reader.seen = []
    frames = list(_lavfi("avdnn_test_tag,scale=32:32,format=gray,avdnn_test_read", graph="testsrc=s=64x48:d=0.2"))
    assert len(frames) == 5
    assert [s[0] for s in _Reader.seen] == [("box", i) for i in range(5)]
    assert [s[1]["avdnn.test.pts"] for s in _Reader.seen] == [str(i) for i in range(5)]
    assert {s[2] for s in _Reader.seen} == {32}
    assert [f.detections for f in frames] == [("box", i) for i in range(5)]


# --------------------------------------------------------------------------- Frame


def test_from_ndarray_to_av_round_trip() -> None:
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, size=(61, 97, 3), dtype=np.uint8)
    frame = Frame.from_ndarray(arr, "rgb24", pts=7, time_base=Fraction(1, 30))
    assert frame.planes[0] is arr  # used as is
    av_frame = frame.to_av()
    assert (av_frame.width, av_frame.height, av_frame.format.name) == (97, 61, "rgb24")
    assert av_frame.pts == 7 and av_frame.time_base == Fraction(1, 30)
    back = Frame.from_av(av_frame)
    assert np.array_equal(back.to_ndarray(), arr)
    assert back.pts == 7 and back.time_base == Fraction(1, 30)
    assert np.array_equal(av_frame.to_ndarray(), arr)


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv410p", "nv12", "grayf32"])
def test_from_planes_to_av_round_trip(fmt: str) -> None:
    rng = np.random.default_rng(1)
    planes = []
    for shape, dtype in PIX_FMTS[fmt]:
        if np.dtype(dtype).kind == "f":
            planes.append(rng.random(shape, dtype=np.float32))
        else:
            planes.append(rng.integers(0, 256, size=shape, dtype=np.uint8))
    frame = Frame.from_planes(planes, fmt, pts=0, time_base=Fraction(1, 25))
    back = Frame.from_av(frame.to_av())
    for a, b in zip(back.planes, planes, strict=True):
        assert np.array_equal(a, b)


def test_from_planes_checks_shapes_and_dtypes() -> None:
    y = np.zeros((61, 97), np.uint8)
    with pytest.raises(avdnn.InvalidArgumentError, match="shape"):
        Frame.from_planes([y, np.zeros((30, 48), np.uint8), np.zeros((30, 48), np.uint8)], "yuv420p")
    with pytest.raises(avdnn.InvalidArgumentError, match="float32"):
        Frame.from_planes([y], "grayf32")
    with pytest.raises(avdnn.InvalidArgumentError, match="planes"):
        Frame.from_planes([y], "yuv420p")
    with pytest.raises(avdnn.InvalidArgumentError):
        Frame.from_ndarray(y, "yuv420p")


def test_planes_are_zero_copy_views_of_pyav() -> None:
    frame = next(iter(_lavfi("format=yuv420p")))
    av_frame = frame.to_av()
    for plane, av_plane in zip(frame.planes, av_frame.planes, strict=True):
        assert np.shares_memory(plane, np.frombuffer(av_plane, np.uint8))
    frame.planes[0][0, 0] = 255 - frame.planes[0][0, 0]
    assert np.frombuffer(av_frame.planes[0], np.uint8)[0] == frame.planes[0][0, 0]


def test_with_planes_keeps_timing_and_side_data() -> None:
    frame = next(iter(_lavfi("format=gray")))
    frame.side_data.metadata["k"] = "v"
    out = frame.with_planes([np.zeros((10, 20), np.uint8)])
    assert (out.width, out.height, out.pts, out.time_base) == (20, 10, frame.pts, frame.time_base)
    assert out.side_data.metadata == {"k": "v"} and out.side_data is not frame.side_data
    assert isinstance(out.side_data, SideData)


# --------------------------------------------------------------------------- the package


def test_import_is_light() -> None:
    code = (
        "import sys, avdnn; heavy = ['onnxruntime', 'torch', 'tensorflow', 'openvino', 'ray'];"
        "print([m for m in heavy if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_all_is_sorted_and_complete() -> None:
    assert avdnn.__all__ == sorted(avdnn.__all__)
    assert len(set(avdnn.__all__)) == len(avdnn.__all__)
    for name in avdnn.__all__:
        assert hasattr(avdnn, name), name
    public = {n for n in vars(avdnn) if not n.startswith("_")} - {
        "annotations",
        "api",
        "multi",
        "errors",
        "graph",
        "media",
        "filters",
        "dnn",
        "cli",
        "cliargs",
        "cliopts",
        "help",
        "zoo",
        "tracking",
        "events",
        "serve",  # a subpackage: set as an attribute once the service has been imported
    }
    assert public <= set(avdnn.__all__), public - set(avdnn.__all__)
    assert isinstance(avdnn.__version__, str)


def test_output_options_without_an_output_are_refused(clip: dict[str, str]) -> None:
    """Iterating frames consumes input 0 and the chain; an output's keyword is an error, never ignored."""
    with pytest.raises(avdnn.InvalidArgumentError, match="map, more_inputs: output options") as info:
        avdnn.run(clip["carphone"], "", more_inputs=[(clip["bigbuckbunny"], None, {})], map=["1:v"], frames=3)
    assert info.value.option == "map"
    with pytest.raises(avdnn.InvalidArgumentError, match="an, codec: output options"):
        avdnn.open(clip["carphone"], an=True, codec="libx264")
    frames = list(avdnn.run(clip["carphone"], "hflip", frames=2, map=[], fps_mode="auto"))  # defaults are fine
    assert len(frames) == 2
