"""Autorotation: the display matrix applied before the chain as ffmpeg applies it, or not with -noautorotate."""

from __future__ import annotations

from pathlib import Path

import pytest
from media_util import both, ffmpeg_make, frame_lines

from avdnn.media.input.framedata import display_matrix
from avdnn.media.input.rotate import autorotate_filters, get_rotation, matrix_from_options
from avdnn.media.input.source import Source

ROTATIONS = [
    ("90", []),
    ("180", []),
    ("270", []),
    ("90", ["-display_hflip"]),
    ("270", ["-display_vflip"]),
    ("180", ["-display_hflip"]),
    ("180", ["-display_hflip", "-display_vflip"]),
    ("0", ["-display_vflip"]),
    ("45", []),
]


@pytest.fixture(scope="module")
def rotated(ffmpeg: str, clip: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """carphone's first 8 frames stream-copied with a display matrix, by rotation and flips."""
    d = tmp_path_factory.mktemp("rot")
    out = {}
    for deg, flips in ROTATIONS:
        name = deg + "".join(f.replace("-display_", "_") for f in flips)
        out[name] = ffmpeg_make(
            ffmpeg,
            ["-display_rotation", deg, *flips, "-i", clip["carphone"], "-c", "copy", "-frames:v", "8"],
            d / f"rot{name}.mp4",
        )
    return out


@pytest.mark.parametrize("autorotate", [[], ["-noautorotate"]], ids=["autorotate", "noautorotate"])
@pytest.mark.parametrize(
    "name", ["90", "180", "270", "90_hflip", "270_vflip", "180_hflip", "180_hflip_vflip", "0_vflip", "45"]
)
def test_rotated_clip_equals_ffmpeg(ffmpeg: str, rotated: dict[str, Path], name: str, autorotate: list[str]) -> None:
    ref, ours = both(ffmpeg, autorotate, rotated[name])
    assert ours.rc == ref.rc == 0, ours.err
    assert ours.out == ref.out
    assert len(frame_lines(ours.out)) == 8


@pytest.mark.parametrize(
    "opts",
    [
        ["-display_rotation", "90"],
        ["-display_rotation", "-90", "-display_hflip"],
        ["-display_vflip"],
        ["-display_rotation", "90", "-noautorotate"],
    ],
)
def test_display_options_override_equal_ffmpeg(ffmpeg: str, clip: dict[str, str], opts: list[str]) -> None:
    ref, ours = both(ffmpeg, opts, clip["carphone"], ["-frames:v", "6"])
    assert ours.rc == ref.rc == 0, ours.err
    assert ours.out == ref.out


def test_frames_leave_upright_and_without_a_matrix(rotated: dict[str, Path]) -> None:
    with Source(str(rotated["90"])) as src:
        info = src.info
        assert (info.width, info.height) == (144, 176)
        assert info.sample_aspect_ratio == 1 / (src._stream.sample_aspect_ratio)
        frames = list(src)
    assert len(frames) == 8
    assert all((f.width, f.height) == (144, 176) for f in frames)
    assert all(display_matrix(f.to_av()) is None for f in frames)  # removed, as ffmpeg does
    # -display_rotation 90 turns the picture counter-clockwise: undoing it is 270 clockwise
    assert src.display_matrix is not None and get_rotation(src.display_matrix) == 270
    with Source(str(rotated["90"]), autorotate=False) as src:
        assert (src.info.width, src.info.height) == (176, 144)
        plain = list(src)
        assert display_matrix(plain[0].to_av()) is not None  # -noautorotate: the frames keep it
    assert all((f.width, f.height) == (176, 144) for f in plain)
    assert [f.pts for f in frames] == [f.pts for f in plain]  # timestamps untouched by the rotation


def test_matrix_arithmetic_matches_libavutil() -> None:
    m = matrix_from_options(90, False, False)
    assert m == (0, -65536, 0, 65536, 0, 0, 0, 0, 1 << 30)  # av_display_rotation_set(-90)
    assert get_rotation(m) == 270 and autorotate_filters(m) == [("transpose", "cclock")]
    assert autorotate_filters(matrix_from_options(90, True, False)) == [("transpose", "clock_flip")]
    assert autorotate_filters(matrix_from_options(270, False, False)) == [("transpose", "clock")]
    assert autorotate_filters(matrix_from_options(270, True, False)) == [("transpose", "cclock_flip")]
    assert autorotate_filters(matrix_from_options(180, False, False)) == [("hflip", None), ("vflip", None)]
    assert autorotate_filters(matrix_from_options(0, False, True)) == [("vflip", None)]
    assert autorotate_filters(matrix_from_options(0.4, False, False)) == []  # rounded, as get_rotation does
    assert get_rotation(matrix_from_options(-90, False, False)) == 90
    assert autorotate_filters(None) == []
