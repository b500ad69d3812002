"""Input trims, seeks, offsets, loops and pacing against ffmpeg 9.0.2's framemd5 (video only)."""

from __future__ import annotations

import pytest
from media_util import both, frame_lines

from avdnn.cli.command import parse_args
from avdnn.errors import InvalidArgumentError
from avdnn.media.input.source import Source
from avdnn.media.timing import Pacer, parse_time, rescale

CASES = {
    "ss": ["-ss", "1"],
    "ss_t": ["-ss", "1", "-t", "1"],
    "to": ["-to", "2"],
    "itsoffset": ["-itsoffset", "0.5"],
    "stream_loop": ["-stream_loop", "1"],
    "noaccurate_seek": ["-ss", "1", "-noaccurate_seek"],
    "ss_to": ["-ss", "0.5", "-to", "1.5"],
    "t_over_to": ["-t", "0.4", "-to", "3"],
    "discard": ["-discard", "nokey"],
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", ["carphone", "bigbuckbunny"])
def test_input_timing_equals_ffmpeg(ffmpeg: str, clip: dict[str, str], name: str, case: str) -> None:
    ref, ours = both(ffmpeg, CASES[case], clip[name], ["-an"])
    assert ref.rc == 0, ref.err
    assert ours.rc == 0, ours.err
    assert ours.out == ref.out
    assert frame_lines(ours.out)


COMBINED = {
    "ss_loop": ["-ss", "3", "-stream_loop", "1"],
    "ss_itsoffset": ["-ss", "1", "-itsoffset", "0.5"],
    "t_loop": ["-t", "1", "-stream_loop", "2"],
    "negative_itsoffset": ["-itsoffset", "-0.5"],
    "sexagesimal": ["-ss", "00:00:01.200", "-to", "00:00:02"],
    "ss_rotation": ["-ss", "1.5", "-display_rotation", "90", "-t", "0.5"],
}


@pytest.mark.parametrize("case", COMBINED)
def test_combined_input_options_equal_ffmpeg(ffmpeg: str, clip: dict[str, str], case: str) -> None:
    ref, ours = both(ffmpeg, COMBINED[case], clip["carphone"])
    assert ref.rc == ours.rc == 0, ours.err
    assert ours.out == ref.out


def test_infinite_loop_and_re_equal_ffmpeg(ffmpeg: str, clip: dict[str, str]) -> None:
    ref, ours = both(ffmpeg, ["-stream_loop", "-1"], clip["carphone"], ["-frames:v", "250"])
    assert ours.out == ref.out and len(frame_lines(ours.out)) == 250
    # paced at the native rate: 0.8 s of input, 0.3 s of it waited for after the 0.5 s burst
    ref, ours = both(ffmpeg, ["-re", "-f", "lavfi"], "testsrc=s=64x48:d=0.8:r=10")
    assert (ours.rc, ours.out) == (ref.rc, ref.out) and len(frame_lines(ours.out)) == 8


def test_lavfi_input_seek_and_loop_like_ffmpeg(ffmpeg: str) -> None:
    """lavfi cannot seek: -ss warns and trims, a -stream_loop rewind fails the input (EINVAL)."""
    for opts in (["-ss", "0.5"], ["-stream_loop", "1"]):
        ref, ours = both(ffmpeg, [*opts, "-f", "lavfi"], "testsrc=s=64x48:d=1:r=10")
        assert (ours.rc, ours.out) == (ref.rc, ref.out)
    assert ref.rc == 234 and len(frame_lines(ours.out)) == 10


def test_to_before_ss_is_refused_like_ffmpeg(ffmpeg: str, clip: dict[str, str]) -> None:
    ref, ours = both(ffmpeg, ["-ss", "2", "-to", "1"], clip["carphone"])
    assert ours.rc == ref.rc != 0
    assert "-to value smaller than -ss" in ours.err


def test_source_counts_trimmed_frames(clip: dict[str, str]) -> None:
    with Source(clip["carphone"], seek=1, duration="500ms") as src:
        frames = list(src)
        assert len(frames) == 15 and 0 <= frames[0].pts < 1001  # 1 s falls just before frame 30 (1.001 s)
        assert src.frames_trimmed == src.frames_decoded - 15 > 0


def test_parse_time_follows_av_parse_time() -> None:
    assert parse_time("1.5", "ss") == 1_500_000
    assert parse_time("00:01:02.25", "ss") == 62_250_000
    assert parse_time("01:02", "ss") == 62_000_000
    assert parse_time("250ms", "t") == 250_000 and parse_time("7us", "t") == 7
    assert parse_time("-0.5", "itsoffset") == -500_000 and parse_time(2, "t") == 2_000_000
    assert parse_time(None, "t") is None
    with pytest.raises(InvalidArgumentError, match="Invalid duration specification for ss"):
        parse_time("1,5", "ss")


def test_rescale_rounds_half_away_from_zero() -> None:
    from fractions import Fraction

    us, tb = Fraction(1, 1_000_000), Fraction(1, 30000)
    assert rescale(-1_000_000, us, tb) == -30000
    assert rescale(50, us, Fraction(1, 10000)) == 1 and rescale(-50, us, Fraction(1, 10000)) == -1


def test_pacer_holds_packets_to_the_clock() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    pacer = Pacer(1.0, 0.5, clock=lambda: now[0], sleep=sleep)
    for ts in (10.0, 10.2, 10.5):  # the first packet starts the clock; the burst covers 0.5 s
        pacer.wait(ts)
    assert slept == []
    pacer.wait(11.5)
    assert slept == [pytest.approx(1.0)]
    fast = Pacer(2.0, 0.0, clock=lambda: now[0], sleep=sleep)
    fast.wait(0.0)
    now[0] += 1.0
    fast.wait(2.0)  # two seconds of media per second of wall clock: no wait
    assert len(slept) == 1
    with pytest.raises(InvalidArgumentError, match=r"Option -readrate is -1\.000; it must be non-negative\."):
        Pacer(-1)
    with pytest.raises(InvalidArgumentError, match="readrate_initial_burst"):
        Source("x.mp4", readrate_initial_burst=-1)


def test_cli_carries_input_options_to_the_source() -> None:
    a = parse_args(
        [
            "-xerror",
            "-ss",
            "1.5",
            "-t",
            "2",
            "-re",
            "-noautorotate",
            "-display_rotation",
            "90",
            "-display_hflip",
            "-stream_loop",
            "-1",
            "-threads",
            "1",
            "-err_detect",
            "aggressive",
            "-noaccurate_seek",
            "-itsoffset",
            "0.2",
            "-discard",
            "nokey",
            "-i",
            "in.mp4",
            "-max_error_rate",
            "0.1",
            "out.mkv",
        ]
    )
    assert a.source_options == {
        "xerror": True,
        "seek": "1.5",
        "duration": "2",
        "realtime": True,
        "autorotate": False,
        "display_rotation": 90.0,
        "display_hflip": True,
        "stream_loop": -1,
        "threads": "1",
        "decoder_options": {"err_detect": "aggressive"},
        "accurate_seek": False,
        "itsoffset": "0.2",
        "discard": "nokey",
        "max_error_rate": 0.1,
    }
    assert a.input_options == {"err_detect": "aggressive"}  # the demuxer has err_detect too
    with pytest.raises(InvalidArgumentError, match="stream_loop"):
        parse_args(["-stream_loop", "x", "-i", "in.mp4", "out.mkv"])


def test_api_run_takes_source_options(clip: dict[str, str]) -> None:
    import avdnn

    frames = list(avdnn.run(clip["carphone"], "format=gray", source_options={"seek": 1, "duration": 0.5}))
    assert len(frames) == 15 and frames[0].format == "gray"
    from avdnn.api.single import open_source

    with open_source(clip["carphone"], source_options={"display_rotation": 90, "to": "200ms"}) as src:
        assert (src.info.width, src.info.height) == (144, 176)
        assert sum(1 for _ in src) == 6
