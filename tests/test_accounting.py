"""Accounting that can fail, and errors that keep bugs visible (issue 12, items 1 and 2).

A stage that loses or invents a frame without declaring why is caught (``check()`` is False and
the run warns naming the stage); a bug in a filter keeps its type and traceback; Ctrl-C ends the
run as ffmpeg does (output finished, accounting printed, exit 255); streams around the chain are
counted per stream.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from spine_util import lost_in, run_cli

import avdnn
from avdnn.filters.base import Filter
from avdnn.media.frame import Frame

SRC = ["-f", "lavfi", "-i", "testsrc=s=64x48:d=1"]  # 25 frames


class _Lossy(Filter):
    """Swallows every third frame and says nothing: the kind of bug the books must catch."""

    name = "avdnn_test_lossy"
    description = "Loses frames silently."

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.n = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        self.n += 1
        return () if self.n % 3 == 0 else (frame,)


class _Declared(_Lossy):
    """The same drops, declared by design: balanced."""

    name = "avdnn_test_declared"

    def filter(self, frame: Frame) -> Sequence[Frame]:
        out = super().filter(frame)
        if not out:
            self.dropped["every third frame"] = self.dropped.get("every third frame", 0) + 1
        return out

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.dropped: dict[str, int] = {}


class _Buggy(Filter):
    name = "avdnn_test_buggy"
    description = "Has an AttributeError on its fourth frame."

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.n = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        self.n += 1
        if self.n == 4:
            return (frame.no_such_attribute,)  # type: ignore[attr-defined]
        return (frame,)


@pytest.fixture
def filters(register) -> Iterator[None]:  # type: ignore[no-untyped-def]
    for cls in (_Lossy, _Declared, _Buggy):
        register(cls)
    yield


def test_a_lossy_stage_is_caught(filters: None, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        stats = avdnn.run(
            "testsrc=s=64x48:d=1", "avdnn_test_lossy", input_format="lavfi", output=str(tmp_path / "o.mkv")
        )
    assert stats.frames_read == 25 and stats.frames_written == 17
    assert not stats.check()
    problems = stats.violations()
    assert len(problems) == 1 and "avdnn_test_lossy" in problems[0] and "lost 8" in problems[0]
    assert any("avdnn_test_lossy" in r.getMessage() and "lost 8" in r.getMessage() for r in caplog.records)


def test_a_lossy_stage_is_caught_while_iterating(filters: None) -> None:
    stream = avdnn.run("testsrc=s=64x48:d=1", "avdnn_test_lossy,format=gray", input_format="lavfi")
    assert len(list(stream)) == 17
    assert not stream.stats.check()


def test_declared_drops_balance(filters: None) -> None:
    stream = avdnn.run("testsrc=s=64x48:d=1", "avdnn_test_declared", input_format="lavfi")
    assert len(list(stream)) == 17
    assert stream.stats.check(), stream.stats.summary()
    assert stream.stats.frames_dropped == {"every third frame": 8}


def test_a_lavfi_segment_without_count_changing_filters_must_balance() -> None:
    """fps declares its drops; scale cannot drop anything, so its books are strict."""
    stream = avdnn.run("testsrc=s=32x32:d=1", "fps=5,scale=16:16", input_format="lavfi")
    assert len(list(stream)) == 5
    assert stream.stats.check() and stream.stats.frames_dropped == {"fps,scale": 20}
    from avdnn.run.stats import StageStats

    strict = StageStats("scale", frames_in=10, frames_out=7)
    strict.settle(changes_count=False, ended_early=False)
    assert strict.imbalance == 3  # not balanced away as "dropped 3"


def test_in_flight_is_bounded_by_what_the_stage_could_hold() -> None:
    """An early stop no longer books any difference as in flight: only what the stage could hold."""
    from avdnn.run.stats import RunStats, StageStats

    held = StageStats("dnn_detect", frames_in=10, frames_out=6)
    held.settle(changes_count=False, ended_early=True, can_hold=4)  # its 4 tasks in flight
    assert held.imbalance == 0 and held.in_flight == 4
    lossy = StageStats("lossy", frames_in=10, frames_out=3)
    lossy.settle(changes_count=False, ended_early=True, can_hold=4)
    assert lossy.in_flight == 4 and lossy.imbalance == 3
    (problem,) = RunStats(frames_read=10, stages=[lossy]).violations()
    assert "stage 'lossy' lost 3 frame(s)" in problem and "in flight 4 (it could hold 4)" in problem
    nothing = StageStats("hflip", frames_in=10, frames_out=9)
    nothing.settle(changes_count=False, ended_early=True)  # a stage that keeps nothing: lost
    assert nothing.imbalance == 1 and nothing.in_flight == 0


def test_output_failures_are_counted_not_assigned() -> None:
    """Two frames the output refused for the same cause are two failures (it once said 1)."""
    from types import SimpleNamespace

    from avdnn.errors import IOFailureError
    from avdnn.run.pipeline import Pipeline
    from avdnn.run.stats import RunStats

    class _Full:
        def write(self, frame: object, rate: object) -> None:
            raise IOFailureError("No space left on device")

    runner = SimpleNamespace(stats=RunStats(), _reopen=None)  # no service policy: the failure ends the output
    for _ in range(2):
        with pytest.raises(IOFailureError):
            Pipeline._write(runner, _Full(), None, (object(), None))  # type: ignore[arg-type]
    assert runner.stats.output_failed == {"No space left on device": 2}
    assert runner.stats.failures == {"output: No space left on device": 2} and runner.stats.frames_failed == 2


def test_a_bug_in_a_filter_keeps_its_type(filters: None, tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    with pytest.raises(AttributeError, match="no_such_attribute") as info:
        avdnn.run("testsrc=s=64x48:d=1", "avdnn_test_buggy", input_format="lavfi", output=str(out))
    stats = info.value.stats  # type: ignore[attr-defined]
    assert stats.frames_written == 3 and stats.failures == {"avdnn_test_buggy: bug: AttributeError": 1}
    import av

    with av.open(str(out)) as c:  # the output was still finished with the frames before it
        assert sum(1 for _ in c.decode(video=0)) == 3


def test_a_bug_prints_its_traceback(filters: None) -> None:
    res = run_cli(["-hide_banner", *SRC, "-vf", "avdnn_test_buggy", "-f", "null", "-"])
    assert res.rc == 190  # AVERROR_BUG's low byte
    assert "Traceback (most recent call last)" in res.err and "AttributeError" in res.err
    assert "this is a bug" in res.err


def test_keyboard_interrupt_inside_a_filter_stays_an_interrupt(tmp_path: Path, register) -> None:  # type: ignore[no-untyped-def]
    class _Stop(Filter):
        name = "avdnn_test_ctrl_c"
        description = "Ctrl-C on frame 3."
        n = 0

        def filter(self, frame: Frame) -> Sequence[Frame]:
            type(self).n += 1
            if type(self).n == 3:
                raise KeyboardInterrupt
            return (frame,)

    register(_Stop)
    with pytest.raises(KeyboardInterrupt) as info:
        avdnn.run("testsrc=s=64x48:d=1", "avdnn_test_ctrl_c", input_format="lavfi", output=str(tmp_path / "o.mkv"))
    assert info.value.stats.frames_written == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize("lossy_first", [False, True])
def test_ctrl_c_books_balance_unless_a_stage_lost_frames(
    tmp_path: Path,
    register,  # type: ignore[no-untyped-def]
    lossy: str,
    lossy_first: bool,
) -> None:
    """Ctrl-C is an early stop too: the books balance, and a lossy stage (the twin) still shows."""

    class _Stop(Filter):
        name = "avdnn_test_ctrl_c_books"
        description = "Ctrl-C on its frame 6."

        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            self.n = 0

        def filter(self, frame: Frame) -> Sequence[Frame]:
            self.n += 1
            if self.n == 6:
                raise KeyboardInterrupt
            return (frame,)

    register(_Stop)
    chain = f"{lossy},avdnn_test_ctrl_c_books" if lossy_first else "avdnn_test_ctrl_c_books"
    with pytest.raises(KeyboardInterrupt) as info:
        avdnn.run("testsrc=s=64x48:d=1", chain, input_format="lavfi", output=str(tmp_path / "o.mkv"))
    stats = info.value.stats  # type: ignore[attr-defined]
    assert stats.frames_written == 5
    if lossy_first:
        assert not stats.check() and lost_in(stats.violations()), stats.summary()
    else:
        assert stats.check(), stats.summary()


def _signal_state(pid: int) -> str:
    """The child's signal masks as the kernel has them (pending, blocked, ignored, caught)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return " ".join(
                line.strip() for line in f if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))
            )
    except OSError:
        return "(no /proc status: the process had ended)"


def test_ctrl_c_finishes_the_output_and_exits_255(tmp_path: Path) -> None:
    """The signal is sent once the run's own status line shows frames written (the run loop is going,
    its handler installed), over a source with no end, so only the signal can end it."""
    out = tmp_path / "interrupted.mkv"
    cmd = [sys.executable, "-m", "avdnn", "-hide_banner", "-f", "lavfi", "-i", "testsrc2=s=640x360"]
    cmd += ["-vf", "gblur=sigma=8", "-c:v", "ffv1", str(out)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: proc.stderr.read1(4096), b"")), daemon=True)
    reader.start()
    signalled = "(not signalled)"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shown = re.findall(rb"frame=\s*(\d+)", b"".join(chunks))
            if shown and int(shown[-1]) >= 25:
                break
            assert proc.poll() is None, b"".join(chunks).decode(errors="replace")
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        signalled = _signal_state(proc.pid)
        proc.wait(timeout=60)
    finally:  # a run that did not end is ended, and its pipe closed: nothing leaks into the next test
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(10)
        proc.stderr.close()
    err = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 255, f"{signalled}\n{err[-3000:]}"
    assert "Exiting normally, received signal 2." in err
    assert "frames: read" in err and "Traceback" not in err
    import av

    with av.open(str(out)) as c:
        assert sum(1 for _ in c.decode(video=0)) > 0


def test_streams_are_counted_per_stream(clip: dict[str, str], tmp_path: Path) -> None:
    stats = avdnn.run(clip["bigbuckbunny"], output=str(tmp_path / "o.mkv"), audio_codec="copy", frames=10, codec="ffv1")
    assert stats.frames_written == 10 and stats.check(), stats.summary()
    (audio,) = stats.streams
    assert audio.media_type == "audio" and audio.codec == "copy"
    assert audio.packets_written == 18  # up to where the video ended (ffmpeg writes the same 18)
    assert audio.packets_read == audio.packets_written + sum(audio.dropped.values())
    assert "stream 0:1 audio" in stats.summary()


def test_streams_are_counted_and_a_lossy_stage_is_caught_after_frames_v(
    clip: dict[str, str], tmp_path: Path, lossy: str
) -> None:
    """The twin of the test above: -frames:v stops early, and the lost frames stay lost."""
    stats = avdnn.run(
        clip["bigbuckbunny"], lossy, output=str(tmp_path / "o.mkv"), audio_codec="copy", frames=10, codec="ffv1"
    )
    assert stats.frames_written == 10 and stats.stopped_early
    assert not stats.check() and lost_in(stats.violations()), stats.summary()


def test_option_errors_before_anything_is_opened(tmp_path: Path) -> None:
    missing = str(tmp_path / "does-not-exist.mp4")  # opening it would be a NotFoundError
    with pytest.raises(avdnn.InvalidArgumentError, match="framerate"):
        avdnn.run(missing, output=str(tmp_path / "o.mkv"), rate="abc")
    with pytest.raises(avdnn.InvalidArgumentError, match="fps_mode"):
        avdnn.run(missing, output=str(tmp_path / "o.mkv"), fps_mode="bogus")
    assert not (tmp_path / "o.mkv").exists()
    assert os.listdir(tmp_path) == []


def test_the_chain_stops_reading_when_the_output_trim_ends(clip: dict[str, str], tmp_path: Path) -> None:
    """Output -t 2 of a 25 fps clip: the trim ffmpeg appends closes the graph after 50 frames, and
    the input stops there (a few frames decoded ahead), instead of running the chain over the
    rest of the clip for nothing (it once read 132 of the 132 frames)."""
    out = tmp_path / "t.md5"
    stats = avdnn.run(clip["bigbuckbunny"], "hflip", output=str(out), format="framemd5", recording_time=2, an=True)
    assert stats.frames_written == 50 and stats.check(), stats.violations()
    assert stats.frames_read <= 50 + 8, stats.summary()


def test_a_lossy_stage_before_the_output_trim_is_caught(clip: dict[str, str], tmp_path: Path, lossy: str) -> None:
    """The twin: the trim cuts the run short (an early stop for the stages before it)."""
    out = tmp_path / "t.md5"
    stats = avdnn.run(
        clip["bigbuckbunny"], f"{lossy},hflip", output=str(out), format="framemd5", recording_time=2, an=True
    )
    assert stats.frames_written == 34 and stats.frames_read < 132  # 2 s of a third less frames; stopped there
    assert not stats.check() and lost_in(stats.violations()), stats.summary()


@pytest.mark.parametrize("source_options", [{}, {"live_queue": 4}])
def test_a_frame_lost_between_the_decoder_and_the_chain_is_caught(
    source_options: dict[str, int], clip: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The frames left queued are counted, not inferred: one lost in the hand-off is a violation."""
    from avdnn.run import livequeue, pipeline, threads

    seen = {"n": 0}

    class Leaky(threads.Channel):  # type: ignore[type-arg]
        def put(self, item: object) -> None:
            seen["n"] += 1
            if seen["n"] != 5:  # the 5th frame vanishes, uncounted
                super().put(item)

    if source_options:  # a file with -live_queue: the drop queue's lossless mode
        real = livequeue.DropQueue.put
        monkeypatch.setattr(livequeue.DropQueue, "put", lambda self, item: None if _fifth(seen) else real(self, item))
    else:  # the decoder thread's channel (the output's writer keeps its own)
        monkeypatch.setattr(pipeline, "Channel", Leaky)
    stats = avdnn.run(
        clip["carphone"], "", output=str(tmp_path / "o.md5"), format="framemd5", source_options=source_options
    )
    assert stats.frames_written == 119
    assert any("lost 1 frame(s) before the chain" in v for v in stats.violations()), stats.violations()


def _fifth(seen: dict[str, int]) -> bool:
    seen["n"] += 1
    return seen["n"] == 5
