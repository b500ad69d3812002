"""Several inputs and outputs in one run (issue 13, item 1): ffmpeg's syntax, ffmpeg's output.

Each output's ``-f framemd5`` must equal ffmpeg 9.0.2 running the very same two-output command
line (ffmpeg runs several outputs natively) and avdnn's own one-output run of that output; the
options of one output never reach another; a bad input fails only the outputs that read it.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from spine_util import avdnn_script, lost_in, run_cli, run_ffmpeg

import avdnn
from avdnn.errors import ExternalError
from avdnn.filters.base import Filter
from avdnn.media.frame import Frame

FMD5 = ["-fflags", "+bitexact", "-f", "framemd5"]


def _both(ffmpeg: str, argv: Sequence[str], tmp_path: Path, outs: Sequence[str]) -> tuple[list[bytes], list[bytes]]:
    """Run ``argv`` (output paths named by ``outs`` placeholders) with ffmpeg and with avdnn."""
    got: dict[str, list[bytes]] = {}
    for tool in ("ffmpeg", "avdnn"):
        paths = {name: str(tmp_path / f"{tool}-{name}") for name in outs}
        args = ["-y", *(paths.get(a, a) for a in argv)]
        res = run_ffmpeg(ffmpeg, args) if tool == "ffmpeg" else run_cli(["-hide_banner", "-v", "error", *args])
        assert res.rc == 0, (tool, res.err)
        got[tool] = [Path(paths[name]).read_bytes() for name in outs]
    return got["ffmpeg"], got["avdnn"]


def _solo(argv: Sequence[str], tmp_path: Path) -> bytes:
    out = tmp_path / f"solo-{len(list(tmp_path.iterdir()))}"
    res = run_cli(["-hide_banner", "-v", "error", "-y", *argv, str(out)])
    assert res.rc == 0, res.err
    return out.read_bytes()


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.splitlines() if not line.startswith(b"#")]


def test_two_inputs_to_two_outputs_with_their_own_chains(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    car, bbb = clip["carphone"], clip["bigbuckbunny"]
    out0 = ["-map", "0:v", "-vf", "hflip,scale=88:72", *FMD5]
    out1 = ["-map", "1:v", "-map", "1:a", "-vf", "scale=160:-2", "-frames:v", "30", *FMD5]
    argv = ["-i", car, "-i", bbb, *out0, "OUT0", *out1, "OUT1"]
    ref, got = _both(ffmpeg, argv, tmp_path, ["OUT0", "OUT1"])
    assert got == ref
    assert len(_lines(got[0])) == 120 and len(_lines(got[1])) > 30  # every carphone frame; bbb's video + audio
    # each output equals its one-output run (input #1 alone is input #0 there)
    assert got[0] == _solo(["-i", car, *out0], tmp_path)
    assert got[1] == _solo(["-i", bbb, "-map", "0:v", "-map", "0:a", *out1[4:]], tmp_path)


def test_the_video_of_a_later_input_with_audio_from_the_first(
    ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    """Input #1 drives the output (its video goes through the chain), input #0's audio goes around it."""
    argv = ["-i", clip["bigbuckbunny"], "-i", clip["carphone"], "-map", "1:v", "-map", "0:a", "-vf", "hflip"]
    ref, got = _both(
        ffmpeg,
        [*argv, "-t", "1", *FMD5, "OUT0", "-t", "0.5", "-c:a", "copy", *FMD5, "OUT1"],
        tmp_path,
        ["OUT0", "OUT1"],
    )
    assert got == ref
    assert any(line.startswith(b"1,") for line in _lines(got[0]))  # the audio is there


def test_per_output_options_do_not_leak(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """-frames:v, -an and -vf of the first output apply to it alone (ffmpeg resets them after each output)."""
    bbb = clip["bigbuckbunny"]
    argv = ["-i", bbb, "-frames:v", "5", "-an", "-vf", "hflip", *FMD5, "OUT0", "-t", "0.4", *FMD5, "OUT1"]
    ref, got = _both(ffmpeg, argv, tmp_path, ["OUT0", "OUT1"])
    assert got == ref
    first, second = _lines(got[0]), _lines(got[1])
    assert len(first) == 5 and all(line.startswith(b"0,") for line in first)
    assert sum(line.startswith(b"0,") for line in second) == 10  # 0.4 s at 25 fps, and no hflip:
    assert any(line.startswith(b"1,") for line in second)  # the audio the first output left out
    assert got[1] == _solo(["-i", bbb, "-t", "0.4", *FMD5], tmp_path)


def test_input_options_of_a_later_input(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """-ss and -stream_loop before the second -i are that input's, for the output whose video it gives."""
    argv = ["-i", clip["carphone"], "-ss", "1", "-stream_loop", "1", "-i", clip["bigbuckbunny"]]
    argv += ["-map", "0:v", "-frames:v", "5", *FMD5, "OUT0", "-map", "1:v", "-map", "1:a", "-t", "0.5", *FMD5, "OUT1"]
    ref, got = _both(ffmpeg, argv, tmp_path, ["OUT0", "OUT1"])
    assert got == ref
    # its streams going around another input's chain would need the companion demuxer to trim: refused
    later = ["-i", clip["carphone"], "-ss", "1", "-i", clip["bigbuckbunny"]]
    res = run_cli([*later, "-map", "0:v", "-map", "1:a", "-f", "null", "-"])
    assert res.rc != 0 and "input options seek of input #1" in res.err


def test_automatic_selection_over_two_inputs(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """Without -map each output takes the best video of all inputs (bbb's 1280x720) and its audio."""
    argv = ["-i", clip["carphone"], "-i", clip["bigbuckbunny"], "-t", "0.2", *FMD5, "OUT0"]
    argv += ["-t", "0.3", "-vf", "scale=64:-2", *FMD5, "OUT1"]
    ref, got = _both(ffmpeg, argv, tmp_path, ["OUT0", "OUT1"])
    assert got == ref
    assert b"#dimensions 0: 1280x720" in got[0] and b"#media_type 1: audio" in got[0]


def test_a_bad_input_fails_only_its_output(clip: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "random.bin"
    bad.write_bytes(os.urandom(64 * 1024))
    good, other = tmp_path / "good.md5", tmp_path / "other.md5"
    argv = ["-y", "-hide_banner", "-i", clip["carphone"], "-i", str(bad), "-map", "0:v", "-vf", "hflip"]
    res = run_cli([*argv, *FMD5, str(good), "-map", "1:v", *FMD5, str(other)])
    assert res.rc != 0
    assert "Traceback" not in res.err
    naming = [line for line in res.err.splitlines() if str(bad) in line]
    assert len(naming) == 1, res.err
    assert naming[0].startswith("avdnn: output #1") and "Invalid data found when processing input" in naming[0]
    assert good.read_bytes() == _solo(["-i", clip["carphone"], "-map", "0:v", "-vf", "hflip", *FMD5], tmp_path)
    assert len(_lines(good.read_bytes())) == 120


K = 5


class _Boom(Filter):
    name = "avdnn_test_multi_boom"
    description = "Fails on its frame K."

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.n = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        if self.n == K:
            raise ExternalError("model runtime exploded")
        self.n += 1
        return (frame,)


def test_a_filter_error_fails_only_its_output(register, clip: dict[str, str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    register(_Boom)
    a, b = tmp_path / "a.md5", tmp_path / "b.md5"
    car = clip["carphone"]
    res = run_cli(["-y", "-hide_banner", "-i", car, "-vf", "avdnn_test_multi_boom", *FMD5, str(a), *FMD5, str(b)])
    assert res.rc == 0xFF & -542398533  # AVERROR_EXTERNAL, as in a one-output run
    assert "Traceback" not in res.err
    errors = [line for line in res.err.splitlines() if line.startswith("avdnn: output #0")]
    assert errors == [
        f"avdnn: output #0 '{a}' (input #0 '{car}'): avdnn_test_multi_boom: model runtime exploded (frame pts 5005)"
    ]
    assert f"avdnn: output '{a}' was finished cleanly with the {K} frames before the error" in res.err
    assert len(_lines(a.read_bytes())) == K
    assert b.read_bytes() == _solo(["-i", car, *FMD5], tmp_path)
    assert re.search(r"output #1 .*\n  frames: read 120, written 120, failed 0", res.err), res.err


def test_the_progress_line_has_one_part_per_output(clip: dict[str, str], tmp_path: Path) -> None:
    car = clip["carphone"]
    res = run_cli(
        ["-y", "-hide_banner", "-i", car, "-frames:v", "7", *FMD5, str(tmp_path / "a"), *FMD5, str(tmp_path / "b")]
    )
    assert res.rc == 0, res.err
    final = res.err.replace("\r", "\n").splitlines()
    line = next(ln for ln in final if ln.startswith("out#0 frame=    7 "))
    assert " | out#1 frame=  120 " in line and "elapsed=" in line
    assert "output #0 " in res.err and "output #1 " in res.err  # the summary, per output


def test_a_live_input_read_by_two_outputs_is_refused() -> None:
    """A network stream cannot be read twice: refused before anything opens (nothing listens here)."""
    url = "rtsp://user:secret@127.0.0.1:9/cam"
    res = run_cli(["-hide_banner", "-i", url, "-f", "null", "-", "-f", "null", "-"])
    assert res.rc != 0 and "Traceback" not in res.err
    assert "rtsp://user:***@127.0.0.1:9/cam" in res.err and "cannot be read twice" in res.err
    assert "secret" not in res.err


def test_two_outputs_to_one_file_are_refused(clip: dict[str, str], tmp_path: Path) -> None:
    res = run_cli(["-i", clip["carphone"], *FMD5, "-", *FMD5, "-"])
    assert res.rc != 0 and "outputs #0 and #1 both write 'pipe:'" in res.err and not res.out
    assert run_cli(["-hide_banner", "-i", clip["carphone"], "-f", "null", "-", "-f", "null", "-"]).rc == 0


def test_parse_refuses_an_input_after_an_output_and_trailing_options() -> None:
    res = run_cli(["-i", "a.mp4", "out.mkv", "-i", "b.mp4", "out2.mkv"])
    assert res.rc != 0 and "give every input before the first output" in res.err
    res = run_cli(["-i", "a.mp4", "out.mkv", "-vf", "hflip", "out2.mkv", "-frames:v", "3"])
    assert res.rc != 0 and "Trailing option(s) found in the command line: -frames:v" in res.err


# -- the API -------------------------------------------------------------------------------


def test_run_many_gives_each_output_its_stats(clip: dict[str, str], tmp_path: Path, lossy: str) -> None:
    car, bbb = clip["carphone"], clip["bigbuckbunny"]
    jobs = [
        avdnn.Job(car, "hflip", output=str(tmp_path / "a.md5"), format="framemd5"),
        avdnn.Job(bbb, "scale=64:-2", output=str(tmp_path / "b.md5"), format="framemd5", frames=12, an=True),
    ]
    report = avdnn.run_many(jobs)
    assert [o.stats.frames_written for o in report.outputs if o.stats] == [120, 12]
    assert report.check() and not report.failed
    twin = avdnn.run_many(
        [
            avdnn.Job(car, "hflip", output=str(tmp_path / "a2.md5"), format="framemd5"),
            avdnn.Job(
                bbb, f"{lossy},scale=64:-2", output=str(tmp_path / "l.md5"), format="framemd5", frames=12, an=True
            ),
        ]
    )
    assert not twin.check() and lost_in(twin.violations()), twin.violations()  # the early-stopped lossy output
    assert all(v.startswith("output #1") for v in twin.violations()), twin.violations()
    solo = avdnn.run(car, "hflip", output=str(tmp_path / "solo.md5"), format="framemd5")
    assert (tmp_path / "a.md5").read_bytes() == (tmp_path / "solo.md5").read_bytes()
    assert report[0] is not None and report[0].frames_read == solo.frames_read


def test_run_many_raises_after_the_others_finished(clip: dict[str, str], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.mp4")
    jobs = [
        avdnn.Job(missing, output=str(tmp_path / "x.md5"), format="framemd5"),
        avdnn.Job(clip["carphone"], output=str(tmp_path / "y.md5"), format="framemd5"),
    ]
    with pytest.raises(avdnn.OutputsFailedError) as info:
        avdnn.run_many(jobs)
    exc = info.value
    assert [o.index for o in exc.failed] == [0] and isinstance(exc.failed[0].error, avdnn.NotFoundError)
    assert missing in str(exc) and "output #0" in str(exc)
    assert exc.stats[1] is not None and exc.stats[1].frames_written == 120 and exc.stats[0] is None
    assert len(_lines((tmp_path / "y.md5").read_bytes())) == 120


@pytest.mark.parametrize("lossy_b", [False, True])
def test_run_many_stops_every_output_on_ctrl_c(clip: dict[str, str], tmp_path: Path, lossy: str, lossy_b: bool) -> None:
    """SIGINT (sent by the first output itself after 20 frames, once the second wrote 10) stops
    both endless outputs cleanly; the twin's second output has a lossy stage, which the books show."""
    car = clip["carphone"]
    sent: list[bool] = []
    second = {"written": 0}

    def interrupt(stats: avdnn.RunStats, frame: Frame) -> None:
        if stats.frames_written >= 20 and second["written"] >= 10 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    def count(stats: avdnn.RunStats, frame: Frame) -> None:
        second["written"] = stats.frames_written

    loop = {"stream_loop": -1}
    chain_b = f"{lossy},hflip" if lossy_b else "hflip"
    jobs = [
        avdnn.Job(car, output=str(tmp_path / "a.md5"), format="framemd5", source_options=loop, progress=interrupt),
        avdnn.Job(car, chain_b, output=str(tmp_path / "b.md5"), format="framemd5", source_options=loop, progress=count),
    ]
    with pytest.raises(KeyboardInterrupt) as info:
        avdnn.run_many(jobs)
    report: avdnn.MultiRunStats = info.value.stats  # type: ignore[attr-defined]
    first = report[0]
    assert first is not None and first.frames_written >= 20 and sent
    for k, name in enumerate(("a.md5", "b.md5")):
        stats = report[k]
        assert stats is not None and report.outputs[k].interrupted
        assert len(_lines((tmp_path / name).read_bytes())) == stats.frames_written  # each file finished
        if lossy_b and k == 1:
            assert not stats.check() and lost_in(stats.violations()), stats.summary()
        else:
            assert stats.check(), stats.violations()


def test_ctrl_c_does_not_wait_for_an_output_blocked_in_its_input(clip: dict[str, str], tmp_path: Path) -> None:
    """An output whose input listens for a sender that never comes cannot stop at a frame: after
    Ctrl-C the run waits at most STOP_GRACE for it, and the other output's file is finished."""
    import socket
    import time

    from avdnn.run import parallel as multi

    with socket.socket() as probe:  # a free port, nobody sending to it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sent: list[float] = []

    def interrupt(stats: avdnn.RunStats, frame: Frame) -> None:
        if stats.frames_written == 10 and not sent:
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    jobs = [
        avdnn.Job(
            clip["carphone"],
            output=str(tmp_path / "a.md5"),
            format="framemd5",
            source_options={"stream_loop": -1},
            progress=interrupt,
        ),
        avdnn.Job(f"tcp://127.0.0.1:{port}?listen=1", output=str(tmp_path / "b.md5"), format="framemd5"),
    ]
    with pytest.raises(KeyboardInterrupt) as info:
        avdnn.run_many(jobs)
    waited = time.monotonic() - sent[0]
    assert waited < multi.STOP_GRACE + 2, waited
    report: avdnn.MultiRunStats = info.value.stats  # type: ignore[attr-defined]
    first = report[0]
    assert first is not None and first.check(), first.violations()
    assert len(_lines((tmp_path / "a.md5").read_bytes())) == first.frames_written >= 10
    assert report.outputs[1].interrupted and not report.outputs[1].ended


def test_open_many_tags_frames_with_their_stream(clip: dict[str, str]) -> None:
    car, bbb = clip["carphone"], clip["bigbuckbunny"]
    sources = [(car, "scale=32:24"), (bbb, "scale=64:-2,trim=end_frame=40"), car]
    seen: dict[int, list[int | None]] = {0: [], 1: [], 2: []}
    with avdnn.open_many(sources, depth=3) as frames:
        for index, frame in frames:
            seen[index].append(frame.pts)
    for k, (url, chain) in enumerate([(car, "scale=32:24"), (bbb, "scale=64:-2,trim=end_frame=40"), (car, "")]):
        with avdnn.open(url, chain) as solo:
            assert seen[k] == [f.pts for f in solo], k  # each stream complete, in its own order
    assert [len(v) for v in seen.values()] == [120, 40, 120]
    assert [s.frames_written for s in (frames.stats[0], frames.stats[1], frames.stats[2]) if s] == [120, 40, 120]


def test_open_many_isolates_a_failed_source(clip: dict[str, str], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.mp4")
    got: list[int] = []
    with pytest.raises(avdnn.OutputsFailedError) as info:
        for index, _ in avdnn.open_many([missing, clip["carphone"]]):
            got.append(index)
    assert got == [1] * 120
    assert info.value.failed[0].name == "stream #0" and missing in str(info.value)


def test_open_many_stops_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sources give frames; closing early ends both runs, joins their threads, closes their inputs."""
    import threading

    from avdnn.media.input.source import Source

    opened: list[Source] = []
    closed: set[int] = set()
    real_init, real_close = Source.__init__, Source.close

    def init(self: Source, *args: object, **kwargs: object) -> None:
        opened.append(self)
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def close(self: Source) -> None:
        closed.add(id(self))
        real_close(self)

    monkeypatch.setattr(Source, "__init__", init)
    monkeypatch.setattr(Source, "close", close)
    frames = avdnn.open_many([("testsrc=d=100", ""), ("testsrc=d=100", "hflip")], input_format="lavfi", depth=2)
    seen: list[int] = []
    with frames:
        while set(seen) != {0, 1} and len(seen) < 500:  # each source has 2500 frames: both come long before
            seen.append(next(frames)[0])
    assert set(seen) == {0, 1}, seen
    assert all(s is not None and s.stopped_early for s in (frames.stats[0], frames.stats[1]))
    assert not [t.name for t in threading.enumerate() if t.name.startswith(("avdnn-stream-", "avdnn-decode"))]
    assert len(opened) == 2 and {id(s) for s in opened} <= closed  # every input closed


DOC = Path(__file__).resolve().parents[2] / "docs" / "multistream.md"


def test_multistream_doc_python_runs(clip: dict[str, str]) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "[120, 25, 30] True"  # carphone; 25 frames of bbb; 1 s of carphone's video (with bbb's audio)
    assert lines[1].startswith("[\"output #0 '") and lines[1].endswith("x.md5'\"] 120")
    assert lines[2] == "{0: 120, 1: 30} [120, 30]"


def test_multistream_doc_shell_example_runs(clip: dict[str, str], tmp_path: Path) -> None:
    (block,) = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)[:1]
    avdnn_script()  # the block runs it by name
    (tmp_path / "out").mkdir()
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    res = subprocess.run(
        ["bash", "-c", block.strip()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    assert len(_lines((tmp_path / "out" / "a.md5").read_bytes())) == 120
    with avdnn.open(str(tmp_path / "out" / "b.mkv")) as frames:
        assert sum(1 for _ in frames) == 50
    assert "out#0 frame=  120" in res.stderr and "| out#1 frame=   50" in res.stderr


class _Bug(Filter):
    name = "avdnn_test_multi_bug"
    description = "A bug on its third frame."

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.n = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        self.n += 1
        if self.n == 3:
            raise ZeroDivisionError("a bug")
        return (frame,)


def test_a_bug_in_one_output_keeps_its_traceback_after_the_others_finished(  # type: ignore[no-untyped-def]
    register, clip: dict[str, str], tmp_path: Path
) -> None:
    register(_Bug)
    a, b = tmp_path / "a.md5", tmp_path / "b.md5"
    car = clip["carphone"]
    res = run_cli(["-y", "-hide_banner", "-i", car, "-vf", "avdnn_test_multi_bug", *FMD5, str(a), *FMD5, str(b)])
    assert res.rc == 190 and "Traceback" in res.err and "ZeroDivisionError: a bug" in res.err
    assert "(this is a bug;" in res.err
    assert b.read_bytes() == _solo(["-i", car, *FMD5], tmp_path)


def test_open_many_refuses_a_live_source_twice() -> None:
    with pytest.raises(avdnn.InvalidArgumentError, match="cannot be read twice"):
        avdnn.open_many(["udp://127.0.0.1:9", "udp://127.0.0.1:9"])
