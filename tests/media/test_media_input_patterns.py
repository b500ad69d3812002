"""Image2 patterns and demuxer options reach the demuxer before anything checks a path.

``-pattern_type glob -i 'frames/f*.png'`` is no file: avdnn said "No such file or directory"
before libavformat saw it, while PyAV (and ffmpeg) read it. ffmpeg 9.0.2 is the oracle.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from spine_util import run_cli, run_ffmpeg


@pytest.fixture
def frames(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> Path:
    folder = tmp_path / "frames"
    folder.mkdir()
    res = run_ffmpeg(ffmpeg, ["-i", clip["carphone"], "-frames:v", "5", str(folder / "f%02d.png")])
    assert res.rc == 0, res.err
    return folder


@pytest.mark.parametrize(
    "args",
    [
        ["-pattern_type", "glob", "-i", "{dir}/f*.png"],
        ["-pattern_type", "glob", "-i", "{dir}/f0?.png"],
        ["-i", "{dir}/f%02d.png"],
    ],
)
def test_an_image_pattern_is_read_as_ffmpeg_reads_it(args: list[str], ffmpeg: str, frames: Path) -> None:
    given = [a.replace("{dir}", str(frames)) for a in args]
    want = run_ffmpeg(ffmpeg, [*given, "-f", "framemd5", "-"])
    got = run_cli(["-hide_banner", "-loglevel", "error", *given, "-fflags", "+bitexact", "-f", "framemd5", "-"])
    assert want.rc == got.rc == 0, (got.err, want.err)
    strip = [line for line in want.out.decode().splitlines() if not line.startswith("#software")]
    assert got.out.decode().splitlines() == strip


def test_a_missing_file_is_still_enoent(ffmpeg: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "nosuch.mp4")
    want = run_ffmpeg(ffmpeg, ["-i", missing, "-f", "null", "-"])
    got = run_cli(["-hide_banner", "-loglevel", "error", "-i", missing, "-f", "null", "-"])
    assert want.rc == got.rc == 254 and "No such file or directory" in got.err, got.err
