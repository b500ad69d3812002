"""Several video streams in one output, each with its own chain and options: ffmpeg's framemd5.

``-map 0:v -map 0:v``, two pads of a ``-filter_complex`` split, and per-stream options
(``-c:v:1``, ``-s:v:1``, ``-b:v:1``, ``-filter:v:1``, ``-pix_fmt:v:1``, encoder AVOptions with a
specifier) are how an HLS ladder or an original-plus-upscaled file is made; each case's framemd5
(every stream's packets, interleaved) equals ffmpeg 9.0.2's, bit-exact headers on both sides.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from spine_util import run_cli, run_cli_subprocess, run_ffmpeg

FMD5 = ["-fflags", "+bitexact", "-flags", "+bitexact", "-f", "framemd5", "-"]

LADDER = ["-s:v:1", "88x72", "-b:v:1", "100k", "-crf:v:0", "30"]

CASES = {
    "map_twice": ["-map", "0:v", "-map", "0:v"],
    "split_pads": ["-filter_complex", "[0:v]split[a][b];[a]hflip[x];[b]vflip[y]", "-map", "[x]", "-map", "[y]"],
    "split_plain_pads": ["-filter_complex", "[0:v]split[a][b]", "-map", "[a]", "-map", "[b]"],
    "core_pad": ["-filter_complex", "[0:v]split=3[a][b][c];[a]null[x];[b][c]hstack[y]", "-map", "[x]", "-map", "[y]"],
    "per_stream": ["-map", "0:v", "-map", "0:v", "-s:v:1", "88x72", "-filter:v:1", "hflip", "-pix_fmt:v:1", "gray"],
    "vf_for_all": ["-map", "0:v", "-map", "0:v", "-vf", "vflip", "-filter:v:1", "hflip"],
    "ladder": ["-map", "0:v", "-map", "0:v", "-c:v", "libx264", *LADDER],
    "codec_per_stream": ["-map", "0:v", "-map", "0:v", "-c:v:0", "libx264", "-c:v:1", "mpeg4", "-g", "12"],
    "with_audio": ["-map", "0:v", "-map", "0:a", "-map", "0:v", "-filter:v:1", "negate", "-t", "1"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_video_stream_as_ffmpeg(case: str, ffmpeg: str, clip: dict[str, str]) -> None:
    source = clip["bigbuckbunny"] if case == "with_audio" else clip["carphone"]
    args = ["-i", source, *CASES[case], *FMD5]
    # x264's packets depend on heap bytes it never wrote: two fresh, zeroed processes (spine_util)
    x264 = "libx264" in args
    want = run_ffmpeg(ffmpeg, args, timeout=120, zeroed=x264)
    argv = ["-hide_banner", "-loglevel", "error", *args]
    got = run_cli_subprocess(argv, timeout=120, zeroed=True) if x264 else run_cli(argv)
    assert got.rc == want.rc == 0, (got.err, want.err)
    assert got.out.decode() == want.out.decode()


def test_two_video_streams_in_a_matroska_file(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """The issue's ``-map 0:v -map 0:v -c:v libx264 two.mkv`` (an IndexError before): both streams whole."""
    out = tmp_path / "two.mkv"
    args = ["-i", clip["carphone"], "-map", "0:v", "-map", "0:v", "-c:v", "libx264", str(out)]
    got = run_cli(["-hide_banner", "-loglevel", "error", *args])
    assert got.rc == 0, got.err
    for k in (0, 1):
        res = run_ffmpeg(ffmpeg, ["-i", str(out), "-map", f"0:v:{k}", "-f", "framemd5", "-"])
        assert res.rc == 0 and res.out.decode().count("\n0,") == 120, res.err


def test_a_failing_stream_fails_the_output(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """The second stream's encoder refuses its size: the output ends with that error (ffmpeg's
    status, AVERROR_EXTERNAL), the first stream's pipeline stopped, nothing hangs."""
    args = ["-i", clip["carphone"], "-map", "0:v", "-map", "0:v", "-c:v:1", "libx264", "-s:v:1", "87x71"]
    want = run_ffmpeg(ffmpeg, [*args, str(tmp_path / "f.mkv")])
    got = run_cli(["-hide_banner", "-loglevel", "error", *args, str(tmp_path / "a.mkv")])
    assert got.rc == want.rc == 187, (got.err, want.err)
    assert "video stream #1: could not open encoder 'libx264' for 87x71" in got.err, got.err


def test_the_stream_mapping_block_names_each_stream(clip: dict[str, str]) -> None:
    args = ["-hide_banner", "-i", clip["carphone"], "-filter_complex", "[0:v]split[a][b];[a]hflip[x];[b]vflip[y]"]
    got = run_cli([*args, "-map", "[x]", "-map", "[y]", "-f", "null", "-"])
    assert got.rc == 0, got.err
    assert (
        "Stream mapping:\n  Stream #0:0 (h264) -> split:default\n"
        "  hflip:default -> Stream #0:0 (wrapped_avframe)\n  vflip:default -> Stream #0:1 (wrapped_avframe)\n"
    ) in got.err, got.err


def test_a_pipe_feeds_one_chained_video_stream(tmp_path: Path) -> None:
    """A second video stream would read the pipe again: refused by name, before anything is written."""
    out = tmp_path / "two.mkv"
    raw = ["-f", "rawvideo", "-s", "8x8", "-pix_fmt", "gray", "-i", "-"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "avdnn",
            "-hide_banner",
            "-loglevel",
            "error",
            *raw,
            "-map",
            "0:v",
            "-map",
            "0:v",
            str(out),
        ],
        input=bytes(64 * 10),
        capture_output=True,
        timeout=60,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 218 and "video stream #1 of the output needs a reader of its own" in err, err
    assert not out.exists()
