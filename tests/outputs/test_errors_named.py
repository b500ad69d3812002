"""Errors ffmpeg names at an output, said and exited as ffmpeg does (ffmpeg 9.0.2 the oracle)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spine_util import run_cli, run_ffmpeg


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-c:v", "nosuchenc"], "Unknown encoder 'nosuchenc'"),
        (["-map", "0:v", "-map", "0:v", "-c:v:1", "nosuchenc"], "Unknown encoder 'nosuchenc'"),
    ],
)
def test_an_unknown_video_encoder_is_encoder_not_found(
    args: list[str], line: str, ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    """AVERROR_ENCODER_NOT_FOUND (exit 8), where avdnn said ENOENT (254); nothing is written."""
    want = run_ffmpeg(ffmpeg, ["-i", clip["carphone"], *args, str(tmp_path / "f.mkv")])
    got = run_cli(["-hide_banner", "-loglevel", "error", "-i", clip["carphone"], *args, str(tmp_path / "a.mkv")])
    assert want.rc == 8 and got.rc == want.rc, (got.err, want.err)
    assert line in got.err and not (tmp_path / "a.mkv").exists(), got.err


def test_an_unknown_audio_encoder_is_encoder_not_found(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    args = ["-i", clip["bigbuckbunny"], "-t", "0.5", "-c:a", "nosuch"]
    want = run_ffmpeg(ffmpeg, [*args, str(tmp_path / "f.mkv")])
    got = run_cli(["-hide_banner", "-loglevel", "error", *args, str(tmp_path / "a.mkv")])
    assert want.rc == 8 and got.rc == want.rc, (got.err, want.err)
    assert "Unknown encoder 'nosuch'" in got.err, got.err


@pytest.mark.parametrize("name", ["", "x", "out.unknownext"])
def test_an_output_with_no_muxer_to_choose_is_refused_in_ffmpegs_words(name: str, ffmpeg: str, tmp_path: Path) -> None:
    """No -f and a name libavformat guesses no muxer for: libavformat's line, exit 234 (EINVAL)."""
    src = ["-f", "lavfi", "-i", "testsrc2=size=64x48:d=0.2"]
    want = run_ffmpeg(ffmpeg, [*src, name])
    got = run_cli(["-hide_banner", "-loglevel", "error", *src, name])
    line = (
        f"Unable to choose an output format for '{name}'; use a standard extension for the filename "
        "or specify the format manually."
    )
    assert want.rc == 234 and got.rc == want.rc, (got.err, want.err)
    assert line in want.err and got.err.strip().splitlines()[-1] == f"avdnn: {line}", got.err
