"""The argv grammar (cli/parser.py) under hostile command lines: ffmpeg's order, values as given.

Any argv ends as a parsed command line or one avdnn error, never another exception; option values
reach the run exactly as typed, whatever characters they hold (a value that looks like an option
is still the value); each output's options are its own; and numbers are read as fftools'
parse_number reads them (av_strtod: ``1k``, ``0x10``, ``5e1``), checked against the oracle ffmpeg.
"""

from __future__ import annotations

import subprocess

import pytest
from hostile_util import FEW, HOSTILE, SPECIALS
from hypothesis import assume, example, given
from hypothesis import strategies as st

from avdnn.cli.parser import parse_args
from avdnn.errors import AvdnnError

_value = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=20)
_hostile = st.text(st.sampled_from("ab01" + SPECIALS), max_size=8)
_OPTIONS = [
    "-i", "-vf", "-f", "-frames:v", "-c:v", "-map", "-y", "-n", "-an", "-ss", "-t", "-to", "-s", "-r",
    "-loglevel", "-h", "-filter_complex", "-metadata", "-metadata:s:a:0", "-headers", "-rw_timeout",
    "-stream_loop", "-re", "-pix_fmt", "-b:v", "-nosuchoption", "-hide_banner", "-stats_period", "-progress",
    "-live_queue", "-noautorotate", "-ac", "-fps_mode", "-",
]  # fmt: skip


@HOSTILE
@given(st.lists(st.one_of(st.sampled_from(_OPTIONS), _hostile), max_size=10))
def test_any_argv_is_a_command_line_or_one_error(argv: list[str]) -> None:
    try:
        args = parse_args(argv)
    except AvdnnError as exc:
        assert exc.oneline() and exc.code < 0
        return
    assert all(out.output is not None for out in args.outputs)


@HOSTILE
@given(_value, _value, st.text(st.sampled_from("abc./_:?=&%"), min_size=1, max_size=12))
@example("-i", "-vf", "out.mkv")  # values that look like options are still values
@example("-y", "x", "o")
def test_values_reach_the_run_as_typed(url: str, chain: str, path: str) -> None:
    assume(not path.startswith("-"))
    args = parse_args(["-i", url, "-vf", chain, "-metadata", f"title={chain}", "-map", url, path])
    assert args.input == url and args.filters == chain and args.output == path
    assert args.metadata == {"title": chain} and args.streams.maps == [url]


@HOSTILE
@given(st.lists(_value, min_size=1, max_size=4))
def test_each_output_has_its_own_options(chains: list[str]) -> None:
    argv = ["-i", "in.mp4"]
    for k, chain in enumerate(chains):
        argv += ["-vf", chain, f"out{k}.mkv"]
    argv.append("last.mkv")  # no options of its own: the defaults
    args = parse_args(argv)
    assert [o.filters for o in args.outputs] == [*chains, ""]
    assert [o.output for o in args.outputs] == [*(f"out{k}.mkv" for k in range(len(chains))), "last.mkv"]


_NUMBERS = st.one_of(
    st.integers(0, 80).map(str),
    st.sampled_from(["5.0", "5e1", "1k", "1Ki", "2B", "0x10", " 5", "5 ", "5_0", "+5", "", "1.5", "nan", "-0", "-1"]),
    st.text(st.sampled_from("0123456789.eEx+-kKiBp _"), min_size=1, max_size=5),
)


def _ffmpeg_frames(ffmpeg: str, value: str) -> int | None:
    """How many of 50 frames the oracle writes with ``-frames:v value`` (None: it refuses the value)."""
    source = ["-f", "lavfi", "-i", "nullsrc=s=16x16:r=100:d=0.5"]
    proc = subprocess.run(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", *source, "-frames:v", value, "-f", "framecrc", "-"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        assert b"Expected" in proc.stderr or b"not within" in proc.stderr, proc.stderr
        return None
    return sum(1 for line in proc.stdout.splitlines() if line.startswith(b"0,"))


@FEW
@given(_NUMBERS)
@example("1k")
@example("0x10")
@example("5 ")
def test_frame_counts_are_read_as_ffmpeg_reads_them(ffmpeg: str, value: str) -> None:
    theirs = _ffmpeg_frames(ffmpeg, value)
    try:
        frames = parse_args(["-i", "in.mp4", "-frames:v", value, "o.mkv"]).frames
    except AvdnnError as exc:
        assert theirs is None, f"ffmpeg takes -frames:v {value!r} ({theirs} frames); avdnn: {exc}"
        return
    assert theirs is not None, f"ffmpeg refuses -frames:v {value!r}; avdnn reads {frames}"
    assert theirs == (50 if frames is None else min(frames, 50))


@pytest.mark.parametrize(("flag", "value", "key", "want"), [("-stream_loop", "0x2", "stream_loop", 2)])
def test_input_numbers_use_the_same_grammar(flag: str, value: str, key: str, want: object) -> None:
    assert parse_args([flag, value, "-i", "in.mp4", "o.mkv"]).source_options[key] == want
    with pytest.raises(AvdnnError, match="Expected number"):
        parse_args([flag, "2 ", "-i", "in.mp4", "o.mkv"])
