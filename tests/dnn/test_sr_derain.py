"""sr (SRCNN and ESPCN styles) and derain on generated models.

The expected frames of sr's bicubic scaling come from the oracle, ffmpeg 9.0.2's ``scale`` filter
(``flags=bicubic``) on the same raw pixels, never from the functions sr itself calls: FFmpeg's sr
upscales the whole frame before an SRCNN-style model and each chroma plane as gray8 after an
ESPCN-style one (docs: FFmpeg's vf_sr.c). Debian's ffmpeg 5.1 runs the native-format ESPCN case end
to end (tests/native); its SRCNN path corrupts its heap, so the scale filter is the oracle here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx_models as models
import pytest
from dnnutil import digest, lavfi_frames, make_filter, random_frames, run_filter
from spine_util import run_ffmpeg

from avdnn.errors import InvalidArgumentError, IOFailureError, OutOfRangeError
from avdnn.media.pixfmt import lookup


def bicubic(ffmpeg: str, tmp: Path, planes: list[np.ndarray], fmt: str, width: int, height: int) -> list[np.ndarray]:
    """The oracle: ``planes`` (one picture in ``fmt``) through ffmpeg's ``scale=W:H:flags=bicubic``."""
    h, w = planes[0].shape[:2]
    src = tmp / "in.raw"
    src.write_bytes(b"".join(np.ascontiguousarray(p).tobytes() for p in planes))
    args = ["-f", "rawvideo", "-pix_fmt", fmt, "-s", f"{w}x{h}", "-i", str(src)]
    res = run_ffmpeg(ffmpeg, [*args, "-vf", f"scale={width}:{height}:flags=bicubic", "-f", "rawvideo", "-"])
    assert res.rc == 0, res.err
    out, at = [], 0
    for spec in lookup(fmt).planes:
        pw, ph = spec.size(width, height)
        out.append(np.frombuffer(res.out, np.uint8, pw * ph, at).reshape(ph, pw))
        at += pw * ph
    assert at == len(res.out), (at, len(res.out))
    return out


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv444p", "yuv410p", "gray"])
def test_sr_espcn_luma_from_model_chroma_bicubic(tmp_path: Path, ffmpeg: str, fmt: str) -> None:
    frames = lavfi_frames(fmt, 37, 23, 2)
    out = run_filter(make_filter("sr", model=models.depth_to_space_x2(tmp_path)), frames)
    for a, b in zip(frames, out, strict=True):
        assert (b.width, b.height) == (74, 46) and b.format == a.format
        assert np.array_equal(b.planes[0], a.planes[0].repeat(2, axis=0).repeat(2, axis=1))
        spec = b.pix_fmt.planes
        for pa, pb, ps in zip(a.planes[1:], b.planes[1:], spec[1:], strict=True):
            w, h = ps.size(74, 46)
            (want,) = bicubic(ffmpeg, tmp_path, [pa], "gray", w, h)  # each chroma plane as gray8
            assert np.array_equal(pb, want)
        assert b.pts == a.pts


@pytest.mark.parametrize("factor", [2, 3, 4])
def test_sr_srcnn_runs_on_the_bicubic_upscaled_frame(tmp_path: Path, ffmpeg: str, factor: int) -> None:
    frames = lavfi_frames("yuv420p", 30, 20, 2)
    out = run_filter(make_filter("sr", model=models.invert(tmp_path, 1), scale_factor=factor), frames)
    for a, b in zip(frames, out, strict=True):
        up = bicubic(ffmpeg, tmp_path, a.planes, "yuv420p", 30 * factor, 20 * factor)  # the whole frame
        assert (b.width, b.height) == (30 * factor, 20 * factor)
        assert np.array_equal(b.planes[0], 255 - up[0])
        assert np.array_equal(b.planes[1], up[1]) and np.array_equal(b.planes[2], up[2])


def test_sr_chroma_matches_a_libswscale_frame_resize(tmp_path: Path, ffmpeg: str) -> None:
    """yuv444p: the chroma sr scales plane by plane equals ffmpeg's whole-frame bicubic scale."""
    frames = lavfi_frames("yuv444p", 37, 23, 1)
    out = run_filter(make_filter("sr", model=models.depth_to_space_x2(tmp_path)), frames)
    whole = bicubic(ffmpeg, tmp_path, frames[0].planes, "yuv444p", 74, 46)
    assert np.array_equal(out[0].planes[1], whole[1]) and np.array_equal(out[0].planes[2], whole[2])


def test_sr_identity_srcnn_equals_libswscale_bicubic(tmp_path: Path, ffmpeg: str) -> None:
    frames = lavfi_frames("gray", 21, 13, 2)
    out = run_filter(make_filter("sr", model=models.identity(tmp_path, 1)), frames)
    assert len(out) == len(frames)
    for a, b in zip(frames, out, strict=True):
        assert [p.shape for p in b.planes] == [(26, 42)]
        assert np.array_equal(b.planes[0], bicubic(ffmpeg, tmp_path, a.planes, "gray", 42, 26)[0])


def test_sr_options_and_formats(tmp_path) -> None:
    path = models.identity(tmp_path, 1)
    with pytest.raises(OutOfRangeError):
        make_filter("sr", model=path, scale_factor=5)
    with pytest.raises(InvalidArgumentError):
        run_filter(make_filter("sr", model=path), random_frames("rgb24", 8, 8, 1))


def test_derain_identity_and_filter_type(tmp_path) -> None:
    frames = lavfi_frames("rgb24", 33, 21, 3)
    for ftype in ("derain", "dehaze", "1"):
        f = make_filter("derain", model=models.identity(tmp_path, 3), filter_type=ftype)
        assert digest(run_filter(f, frames)) == digest(frames)


def test_derain_needs_same_size_and_rgb24(tmp_path) -> None:
    with pytest.raises(IOFailureError) as info:
        run_filter(make_filter("derain", model=models.pool2(tmp_path, 3)), random_frames("rgb24", 8, 8, 1))
    assert "keeps the frame size" in info.value.message
    with pytest.raises(InvalidArgumentError):
        run_filter(make_filter("derain", model=models.identity(tmp_path, 3)), random_frames("bgr24", 8, 8, 1))
