"""The avdnn command line: one-line errors with ffmpeg's exit statuses, help, listing, stats.

ffmpeg exits with the low byte of the AVERROR it failed with: 254 for ENOENT (-2), 234 for
EINVAL (-22), 222 for ERANGE (-34), 8 for AVERROR_OPTION_NOT_FOUND / FILTER_NOT_FOUND
(whose low byte is 0xF8 negated). avdnn does the same; each case below was checked against
the oracle's status where ffmpeg can run the same command.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from spine_util import Result, avdnn_script, run_cli, run_cli_subprocess, run_ffmpeg

import avdnn
from avdnn.errors import InvalidArgumentError
from avdnn.filters.base import Filter
from avdnn.filters.options import Option

SRC = ["-f", "lavfi", "-i", "testsrc=s=32x32:d=0.2"]
NULL = ["-f", "null", "-"]


class RangeFilter(Filter):
    """A test-only avdnn filter with a bounded int option."""

    name = "avdnn_test_range"
    description = "Test filter with a bounded option."
    options = (
        Option("x", "int", default=1, min=0, max=100, help="a bounded integer"),
        Option("mode", "int", default=0, min=0, max=1, help="a named value", consts={"off": 0, "on": 1}),
        Option("ratio", "float", default=0.5, min=0.0, max=1.0, help="a fraction"),
    )


@pytest.fixture
def range_filter(register) -> Iterator[type[Filter]]:  # type: ignore[no-untyped-def]
    yield register(RangeFilter)


def _error_line(res: Result) -> str:
    """The one avdnn error line; libav's own log lines may precede it, as ffmpeg's do."""
    assert "Traceback" not in res.err, res.err
    lines = [line for line in res.err.splitlines() if line.startswith("avdnn: ")]
    assert len(lines) == 1, res.err
    assert res.err.rstrip("\n").splitlines()[-1] == lines[0] or "frames:" in res.err, res.err
    return lines[0]


def _fails(argv: list[str], status: int, *needles: str) -> str:
    res = run_cli(["-hide_banner", *argv])
    line = _error_line(res)
    assert res.rc == status, (res.rc, res.err)
    for needle in needles:
        assert needle in line, line
    return line


# --------------------------------------------------------------------------- errors


def test_missing_input() -> None:
    line = _fails(["-i", "/nonexistent/in.mp4", *NULL], 254, "/nonexistent/in.mp4", "No such file or directory")
    assert line.startswith("avdnn: ")


def test_missing_input_matches_ffmpeg_status(ffmpeg: str, tmp_path: Path) -> None:
    """The same command line to both, each a process of its own: the same status and cause."""
    args = ["-hide_banner", "-loglevel", "error", "-i", str(tmp_path / "in.mp4"), *NULL]
    want, got = run_ffmpeg(ffmpeg, args), run_cli_subprocess(args)
    assert got.rc == want.rc == 254, (got.rc, got.err, want.rc, want.err)
    assert "No such file or directory" in want.err
    assert _error_line(got) == f"avdnn: '{tmp_path / 'in.mp4'}': No such file or directory"


def test_unknown_filter_suggests_close_names() -> None:
    line = _fails([*SRC, "-vf", "scal=1:1", *NULL], 8, "scal", "did you mean", "'scale'")
    assert "No such filter" in line


def test_unknown_filter_after_a_good_one() -> None:
    _fails([*SRC, "-vf", "format=gray,hfilp", *NULL], 8, "hfilp", "'hflip'")


def test_unknown_option_of_lavfi_filter() -> None:
    _fails([*SRC, "-vf", "scale=foo=2", *NULL], 8, "scale", "'foo'", "not found")


def test_unknown_option_after_a_valid_key(ffmpeg: str) -> None:
    """ffmpeg applies all keys before init: the unknown key wins over other complaints."""
    args = [*SRC, "-vf", "scale=w=32:foo=2", *NULL]
    assert run_ffmpeg(ffmpeg, args).rc == 8
    _fails(args, 8, "'foo'")


def test_unknown_option_suggests_close_names() -> None:
    _fails([*SRC, "-vf", "scale=widht=32:h=16", *NULL], 8, "'widht'", "did you mean", "'width'")


def test_lavfi_value_out_of_range(ffmpeg: str) -> None:
    args = [*SRC, "-vf", "transpose=dir=9", *NULL]
    assert run_ffmpeg(ffmpeg, args).rc == 222
    _fails(args, 222, "transpose", "out of range")


def test_avdnn_option_out_of_range(range_filter: type[Filter]) -> None:
    line = _fails(
        [*SRC, "-vf", "avdnn_test_range=x=200", *NULL],
        222,
        "avdnn_test_range",
        "Value 200.000000 for parameter 'x' out of range [0 - 100]",
    )
    assert line == "avdnn: avdnn_test_range: Value 200.000000 for parameter 'x' out of range [0 - 100]"


def test_avdnn_option_positional_out_of_range(range_filter: type[Filter]) -> None:
    _fails([*SRC, "-vf", "avdnn_test_range=5:on:1.5", *NULL], 222, "'ratio'", "out of range [0 - 1]")


def test_avdnn_option_unparsable(range_filter: type[Filter]) -> None:
    _fails(
        [*SRC, "-vf", "avdnn_test_range=mode=maybe", *NULL],
        234,
        "avdnn_test_range",
        "'mode'",
        'Unable to parse option value "maybe"',
        "off, on",
    )


def test_avdnn_unknown_option(range_filter: type[Filter]) -> None:
    _fails([*SRC, "-vf", "avdnn_test_range=ratoi=0.1", *NULL], 8, "avdnn_test_range", "'ratoi'", "'ratio'")


def test_avdnn_filter_runs_in_a_chain(range_filter: type[Filter]) -> None:
    res = run_cli(["-hide_banner", *SRC, "-vf", "scale=16:16,avdnn_test_range=7:mode=on,format=gray", *NULL])
    assert res.rc == 0, res.err
    assert "frames: read 5, written 5, failed 0" in res.err


def test_bad_pixel_format_option(ffmpeg: str) -> None:
    args = [*SRC, "-pix_fmt", "nosuch", *NULL]
    assert run_ffmpeg(ffmpeg, args).rc == 234
    _fails(args, 234, "nosuch", "pix_fmt")


def test_bad_pixel_format_in_chain(ffmpeg: str) -> None:
    args = [*SRC, "-vf", "format=nosuch", *NULL]
    assert run_ffmpeg(ffmpeg, args).rc == 234
    _fails(args, 234, "format")


def test_unwritable_output(ffmpeg: str) -> None:
    args = [*SRC, "-y", "/nonexistent_dir/x.mp4"]
    assert run_ffmpeg(ffmpeg, args).rc == 254
    _fails(args, 254, "/nonexistent_dir/x.mp4", "No such file or directory")


def test_existing_output_without_y_is_kept(tmp_path: Path) -> None:
    """ffmpeg would prompt (and exit 0 when it cannot); avdnn refuses with an error, see README."""
    out = tmp_path / "exists.mp4"
    out.write_bytes(b"keep me")
    res = run_cli(["-hide_banner", *SRC, str(out)])
    line = _error_line(res)
    assert res.rc != 0
    assert "already exists" in line and str(out) in line and "-y" in line
    assert out.read_bytes() == b"keep me"


def test_an_output_that_is_an_input_is_refused_as_ffmpeg_refuses_it(
    ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    """ffmpeg's assert_file_overwrite: never in place, even with ``-y``; the input's bytes unchanged
    (without ``-y`` the file exists, which is said first)."""
    path = tmp_path / "in.mp4"
    path.write_bytes(Path(clip["carphone"]).read_bytes())
    before = path.read_bytes()
    args = ["-i", str(path), "-y", "-vf", "scale=32:32", str(path)]
    assert run_ffmpeg(ffmpeg, [*args]).rc == 234
    assert path.read_bytes() == before
    res = run_cli(["-hide_banner", *args])
    assert res.rc == 234, res.err
    assert f"Output {path} same as Input #0 - exiting" in _error_line(res)
    assert path.read_bytes() == before
    # the API refuses it too
    with pytest.raises(InvalidArgumentError, match="same as Input #0"):
        avdnn.run(str(path), "scale=32:32", output=str(path), overwrite=True)
    assert path.read_bytes() == before


def test_only_an_input_read_from_that_file_is_the_output() -> None:
    """An input whose demuxer opens no file of its name (image2, lavfi, a device) is no file."""
    from avdnn.media.output.target import check_not_an_input

    check_not_an_input("x.png", [("a.mp4", None), ("x.png", "image2")])
    check_not_an_input("tcp://127.0.0.1:9/x", [("tcp://127.0.0.1:9/x", None)])  # no file
    with pytest.raises(InvalidArgumentError, match="same as Input #1"):
        check_not_an_input("x.png", [("a.mp4", None), ("x.png", None)])


def test_existing_output_with_n_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "exists.mkv"
    out.write_bytes(b"keep me")
    res = run_cli(["-hide_banner", "-n", *SRC, str(out)])
    assert res.rc != 0
    assert "already exists. Exiting." in _error_line(res)
    assert out.read_bytes() == b"keep me"


def test_existing_output_with_y_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "exists.mkv"
    out.write_bytes(b"replace me")
    res = run_cli(["-hide_banner", "-y", *SRC, str(out)])
    assert res.rc == 0, res.err
    assert out.stat().st_size > 100 and not out.read_bytes().startswith(b"replace me")


def test_unknown_cli_option(ffmpeg: str) -> None:
    args = [*SRC, "-bogus", "1", *NULL]
    assert run_ffmpeg(ffmpeg, args).rc == 8
    _fails(args, 8, "Unrecognized option 'bogus'")


def test_unknown_encoder() -> None:
    """ffmpeg: "Unknown encoder", AVERROR_ENCODER_NOT_FOUND (exit 8), not ENOENT's 254."""
    _fails([*SRC, "-c:v", "nosuchenc", *NULL], 8, "Unknown encoder 'nosuchenc'")


def test_no_output() -> None:
    """As ``ffmpeg -i FILE``: the input block, then ffmpeg's line, exit status 1 (tools probe this way)."""
    res = run_cli(["-hide_banner", *SRC])
    assert res.rc == 1, res.err
    assert res.err.startswith("Input #0, lavfi, from 'testsrc=s=32x32:d=0.2':\n"), res.err
    assert res.err.endswith("\nAt least one output file must be specified\n"), res.err


def test_error_line_is_silenced_by_quiet() -> None:
    res = run_cli(["-loglevel", "quiet", "-i", "/nonexistent/in.mp4", *NULL])
    assert res.rc == 254 and res.err == ""


def test_no_traceback_in_a_subprocess() -> None:
    res = run_cli_subprocess(["-hide_banner", *SRC, "-vf", "scal=1:1", *NULL])
    assert res.rc == 8
    assert "Traceback" not in res.err
    assert res.err.strip().splitlines()[-1].startswith("avdnn: scal: ")


# --------------------------------------------------------------------------- help and listing


def test_help_lavfi_filter() -> None:
    res = run_cli(["-hide_banner", "-h", "filter=scale"])
    assert res.rc == 0, res.err
    text = res.out.decode()
    assert text.startswith("Filter scale")
    for name in ("w", "h", "flags", "force_original_aspect_ratio"):
        assert f"\n  {name} " in text


def test_help_avdnn_filter(range_filter: type[Filter]) -> None:
    res = run_cli(["-hide_banner", "-h", "filter=avdnn_test_range"])
    assert res.rc == 0, res.err
    text = res.out.decode()
    assert "Filter avdnn_test_range (avdnn)" in text
    assert "Test filter with a bounded option." in text
    assert "a bounded integer (from 0 to 100 default 1)" in text
    assert "default off" in text and "\n     on " in text


def test_help_unknown_filter() -> None:
    _fails(["-h", "filter=scal"], 8, "scal", "'scale'")


def test_usage() -> None:
    res = run_cli(["-hide_banner", "-h"])
    assert res.rc == 0 and res.out.decode().startswith("usage: avdnn")


def test_filters_lists_both_kinds(range_filter: type[Filter]) -> None:
    res = run_cli(["-hide_banner", "-filters"])
    assert res.rc == 0, res.err
    lines = res.out.decode().splitlines()
    assert any(line.split()[:2] == ["A", "avdnn_test_range"] for line in lines)
    for name in ("scale", "format", "testsrc", "hflip"):
        assert f" L {name}" in lines


# --------------------------------------------------------------------------- entry points


def test_python_m_and_console_script_are_one_entry_point() -> None:
    res = run_cli_subprocess(["-version"])
    assert res.rc == 0, res.err
    assert res.out.decode().startswith("avdnn version ")
    assert res.err == ""  # -version prints once, to stdout
    eps = importlib.metadata.entry_points(group="console_scripts", name="avdnn")
    assert [ep.value for ep in eps] == ["avdnn.cli:main"]
    main_src = Path(importlib.util.find_spec("avdnn.__main__").origin).read_text()  # type: ignore[union-attr]
    assert "from .cli import main" in main_src
    import subprocess

    proc = subprocess.run([avdnn_script(), "-version"], capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout == res.out


# --------------------------------------------------------------------------- progress and summary


def test_stats_line() -> None:
    res = run_cli(["-hide_banner", "-stats", *SRC, *NULL])
    assert res.rc == 0, res.err
    progress = [line for line in res.err.replace("\r", "\n").splitlines() if line.startswith("frame=")]
    assert progress, res.err
    assert "fps=" in progress[-1] and "time=" in progress[-1] and "speed=" in progress[-1]
    assert progress[-1].startswith("frame=    5 ")


def test_nostats_shows_no_progress_and_the_default_does_as_ffmpeg() -> None:
    res = run_cli(["-hide_banner", "-nostats", *SRC, *NULL])
    assert res.rc == 0 and "frame=" not in res.err
    res = run_cli(["-hide_banner", *SRC, *NULL])  # ffmpeg prints stats also when stderr is no terminal
    assert res.rc == 0 and "frame=    5 " in res.err


def test_summary_says_read_and_written() -> None:
    res = run_cli(["-hide_banner", *SRC, "-vf", "fps=10", *NULL])
    assert res.rc == 0, res.err
    assert "frames: read 5, written 2, failed 0" in res.err  # as ffmpeg: 2 frames
    assert "dropped by fps" in res.err


def test_summary_quiet_at_error_level() -> None:
    res = run_cli(["-hide_banner", "-loglevel", "error", *SRC, *NULL])
    assert res.rc == 0 and res.err == ""


# --------------------------------------------------------------------------- no deadlock at early stop

_EARLY_STOPS = """
import sys
sys.path.insert(0, {tests!r})
from spine_util import run_cli
for _ in range(12):
    for extra in (["-vf", "scale=88:72,format=gray"], ["-r", "10"], ["-vf", "fps=5"]):
        r = run_cli(["-hide_banner", "-loglevel", "error", "-i", {clip!r}, "-frames:v", "3", *extra,
                     "-f", "framemd5", "-"])
        assert r.rc == 0, r.err
print("ok")
"""


def test_early_stops_on_a_threaded_decoder_do_not_hang(clip: dict[str, str]) -> None:
    """Regression: closing an h264 decoder stopped by -frames:v, with FFmpeg's log lines
    forwarded to Python, deadlocked (a frame thread logging while the GIL-holding dealloc
    joined it). Run in a child with a timeout so a regression fails instead of hanging."""
    import subprocess

    code = _EARLY_STOPS.format(tests=os.path.dirname(__file__), clip=clip["carphone"])
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("early stops on an h264 input hung (decoder frame threads vs the GIL)")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
