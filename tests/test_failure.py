"""A run that fails mid-stream leaves a playable output with the frames before the failure.

The failing filter is a test-only avdnn filter raising :class:`avdnn.errors.ExternalError`
(what a DNN runtime's failure becomes) on its frame ``K``; the CLI must exit non-zero with
one line naming the filter and the cause, finish the output (encoder flushed, trailer
written) with exactly ``K`` frames, and say so. Also: an early stop with a filter that holds
frames closes every stage exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from spine_util import lost_in, run_cli

import avdnn
from avdnn.errors import ExternalError
from avdnn.filters.base import Filter
from avdnn.media.frame import Frame

K = 5
SRC = ["-f", "lavfi", "-i", "testsrc=s=64x48:d=1"]  # 25 frames


class _Boom(Filter):
    name = "avdnn_test_boom"
    description = "Fails on its frame K."

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.n = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        if self.n == K:
            raise ExternalError("model runtime exploded")
        self.n += 1
        return (frame,)


class _Pairs(Filter):
    """Returns frames two at a time; flushes the odd one at EOF."""

    name = "avdnn_test_pairs"
    description = "Holds every other frame."
    closed = 0
    flushed = 0

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.held: list[Frame] = []

    def filter(self, frame: Frame) -> Sequence[Frame]:
        self.held.append(frame)
        if len(self.held) == 2:
            out, self.held = self.held, []
            return out
        return ()

    @property
    def holding(self) -> int:
        return len(self.held)  # what an early stop leaves in flight here, and no more

    def flush(self) -> Sequence[Frame]:
        type(self).flushed += 1
        out, self.held = self.held, []
        return out

    def close(self) -> None:
        type(self).closed += 1
        self.held = []


@pytest.fixture
def boom(register) -> type[Filter]:  # type: ignore[no-untyped-def]
    return register(_Boom)


@pytest.fixture
def pairs(register) -> type[_Pairs]:  # type: ignore[no-untyped-def]
    _Pairs.closed = _Pairs.flushed = 0
    return register(_Pairs)


def _decoded(path: Path) -> int:
    import av

    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


@pytest.mark.parametrize(("name", "extra"), [("out.mp4", ["-c:v", "libx264"]), ("out.mkv", [])])
def test_cli_failure_finishes_the_output(tmp_path: Path, boom: type[Filter], name: str, extra: list[str]) -> None:
    out = tmp_path / name
    res = run_cli(["-hide_banner", "-y", *SRC, "-vf", "scale=32:32,avdnn_test_boom,format=yuv420p", *extra, str(out)])
    assert res.rc != 0
    assert res.rc == 0xFF & -542398533  # AVERROR_EXTERNAL's low byte, as ffmpeg would exit
    assert "Traceback" not in res.err
    errors = [line for line in res.err.splitlines() if line.startswith("avdnn: ")]
    assert errors[0] == "avdnn: avdnn_test_boom: model runtime exploded (frame pts 5)"
    # the decoder thread may have read ahead; those frames are accounted as unfinished
    read = int(re.search(r"frames: read (\d+), written (\d+), failed 1", res.err).group(1))
    assert f"written {K}, failed 1" in res.err
    assert read == K + 1 or f"unfinished in input (decoded ahead): {read - K - 1}" in res.err
    assert "failed in avdnn_test_boom: model runtime exploded: 1" in res.err
    assert f"was finished cleanly with the {K} frames before the error" in res.err
    assert _decoded(out) == K


def test_cli_failure_with_hash_output(boom: type[Filter]) -> None:
    res = run_cli(["-hide_banner", *SRC, "-vf", "avdnn_test_boom", "-bitexact", "-f", "framecrc", "-"])
    assert res.rc != 0
    lines = [line for line in res.out.decode().splitlines() if not line.startswith("#")]
    assert len(lines) == K


def test_api_failure_raises_with_stats(tmp_path: Path, boom: type[Filter]) -> None:
    out = tmp_path / "api.mkv"
    with pytest.raises(ExternalError) as info:
        avdnn.run("testsrc=s=64x48:d=1", "avdnn_test_boom,scale=32:32", input_format="lavfi", output=str(out))
    exc = info.value
    assert isinstance(exc, RuntimeError) and exc.code == -542398533
    assert exc.filter == "avdnn_test_boom" and exc.pts == K
    assert exc.stats is not None
    assert exc.stats.frames_written == K
    assert exc.stats.frames_read - exc.stats.read_ahead == K + 1  # the decoder thread may read ahead
    assert exc.stats.failures == {"avdnn_test_boom: model runtime exploded": 1} and exc.stats.frames_failed == 1
    assert exc.stats.check(), exc.stats.summary()
    assert _decoded(out) == K


def test_api_failure_with_a_lossy_stage_fails_the_check(tmp_path: Path, boom: type[Filter], lossy: str) -> None:
    """The twin: the same error stop, a stage that loses frames before it; not balanced away."""
    with pytest.raises(ExternalError) as info:
        avdnn.run(
            "testsrc=s=64x48:d=1",
            f"{lossy},avdnn_test_boom,scale=32:32",
            input_format="lavfi",
            output=str(tmp_path / "o.mkv"),
        )
    stats = info.value.stats
    assert stats.stopped_early or stats.error is not None
    assert not stats.check() and lost_in(stats.violations()), stats.summary()


def test_api_failure_while_iterating(boom: type[Filter]) -> None:
    stream = avdnn.run("testsrc=s=64x48:d=1", "avdnn_test_boom", input_format="lavfi")
    got = []
    with pytest.raises(ExternalError, match="model runtime exploded"):
        for frame in stream:
            got.append(frame.pts)
    assert got == list(range(K))
    assert stream.stats.error is not None
    assert stream.stats.frames_written == K
    assert stream.stats.check(), stream.stats.summary()


def test_api_failure_while_iterating_with_a_lossy_stage(boom: type[Filter], lossy: str) -> None:
    stream = avdnn.run("testsrc=s=64x48:d=1", f"{lossy},avdnn_test_boom", input_format="lavfi")
    with pytest.raises(ExternalError, match="model runtime exploded"):
        for _ in stream:
            pass
    assert stream.stats.error is not None
    assert not stream.stats.check() and lost_in(stream.stats.violations()), stream.stats.summary()


def test_early_stop_closes_a_holding_filter_once(pairs: type[_Pairs]) -> None:
    res = run_cli(
        [
            "-hide_banner",
            *SRC,
            "-vf",
            "avdnn_test_pairs,format=gray",
            "-frames:v",
            "3",
            "-bitexact",
            "-f",
            "framecrc",
            "-",
        ]
    )
    assert res.rc == 0, res.err
    assert len([line for line in res.out.decode().splitlines() if not line.startswith("#")]) == 3
    assert pairs.closed == 1
    assert "frames: read" in res.err and "written 3" in res.err


def test_eof_flushes_a_holding_filter(pairs: type[_Pairs]) -> None:
    stream = avdnn.run("testsrc=s=32x32:d=0.2", "avdnn_test_pairs", input_format="lavfi")  # 5 frames
    assert [f.pts for f in stream] == [0, 1, 2, 3, 4]
    assert pairs.flushed >= 1 and pairs.closed == 1  # flushed until it returns nothing
    assert stream.stats.check()


def test_early_stop_in_the_api(pairs: type[_Pairs]) -> None:
    stream = avdnn.run("testsrc=s=32x32:d=10", "avdnn_test_pairs", input_format="lavfi", frames=3)
    assert len(list(stream)) == 3
    assert pairs.closed == 1
    assert stream.stats.check(), stream.stats.summary()


def test_early_stop_in_the_api_with_a_lossy_stage(pairs: type[_Pairs], lossy: str) -> None:
    stream = avdnn.run("testsrc=s=32x32:d=10", f"{lossy},avdnn_test_pairs", input_format="lavfi", frames=3)
    assert len(list(stream)) == 3 and stream.stats.stopped_early
    assert not stream.stats.check() and lost_in(stream.stats.violations()), stream.stats.summary()


def test_a_holding_filter_that_holds_more_than_it_says_is_caught(pairs: type[_Pairs], boom: type[Filter]) -> None:
    """In flight is bounded by what the stage says it holds: one frame more is a violation.

    avdnn_test_boom passes frames 0..4 and fails on 5; the pairs filter after it has given (0, 1)
    and (2, 3) and holds frame 4 when the error stops the run."""

    class _Underclaims(_Pairs):
        name = "avdnn_test_underclaims"

        @property
        def holding(self) -> int:
            return 0

    from avdnn.filters.registry import filter_class, unregister_filter

    runs = {}
    filter_class(_Underclaims)
    try:
        for name in ("avdnn_test_pairs", "avdnn_test_underclaims"):
            stream = avdnn.run("testsrc=s=32x32:d=1", f"avdnn_test_boom,{name}", input_format="lavfi")
            with pytest.raises(ExternalError):
                assert len(list(stream)) == 4
            runs[name] = stream.stats
    finally:
        unregister_filter("avdnn_test_underclaims")
    fair = runs["avdnn_test_pairs"]
    assert fair.check() and fair.frames_unfinished["avdnn_test_pairs"] == 1, fair.summary()
    under = runs["avdnn_test_underclaims"]
    assert not under.check() and lost_in(under.violations(), "avdnn_test_underclaims"), under.summary()
