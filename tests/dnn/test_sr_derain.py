"""sr (SRCNN and ESPCN styles) and derain on generated models."""

from __future__ import annotations

import numpy as np
import onnx_models as models
import pytest
from dnnutil import digest, lavfi_frames, make_filter, random_frames, run_filter

from avdnn.dnn import io_proc
from avdnn.errors import InvalidArgumentError, IOFailureError, OutOfRangeError


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv444p", "yuv410p", "gray"])
def test_sr_espcn_luma_from_model_chroma_bicubic(tmp_path, fmt: str) -> None:
    frames = lavfi_frames(fmt, 37, 23, 2)
    out = run_filter(make_filter("sr", model=models.depth_to_space_x2(tmp_path)), frames)
    for a, b in zip(frames, out, strict=True):
        assert (b.width, b.height) == (74, 46) and b.format == a.format
        assert np.array_equal(b.planes[0], a.planes[0].repeat(2, axis=0).repeat(2, axis=1))
        spec = b.pix_fmt.planes
        for pa, pb, ps in zip(a.planes[1:], b.planes[1:], spec[1:], strict=True):
            w, h = ps.size(74, 46)
            assert np.array_equal(pb, io_proc.resize_plane(pa, w, h))
        assert b.pts == a.pts


@pytest.mark.parametrize("factor", [2, 3, 4])
def test_sr_srcnn_runs_on_the_bicubic_upscaled_frame(tmp_path, factor: int) -> None:
    frames = lavfi_frames("yuv420p", 30, 20, 2)
    out = run_filter(make_filter("sr", model=models.invert(tmp_path, 1), scale_factor=factor), frames)
    for a, b in zip(frames, out, strict=True):
        up = io_proc.upscale_frame(a, 30 * factor, 20 * factor)
        assert (b.width, b.height) == (30 * factor, 20 * factor)
        assert np.array_equal(b.planes[0], 255 - up.planes[0])
        assert np.array_equal(b.planes[1], up.planes[1]) and np.array_equal(b.planes[2], up.planes[2])


def test_sr_chroma_matches_a_libswscale_frame_resize(tmp_path) -> None:
    """Independent of resize_plane: yuv444p chroma equals PyAV's whole-frame bicubic resize."""
    from avdnn.media.frame import Frame

    frames = lavfi_frames("yuv444p", 37, 23, 1)
    out = run_filter(make_filter("sr", model=models.depth_to_space_x2(tmp_path)), frames)
    whole = Frame.from_av(frames[0].to_av().reformat(width=74, height=46, interpolation="BICUBIC"))
    assert np.array_equal(out[0].planes[1], whole.planes[1]) and np.array_equal(out[0].planes[2], whole.planes[2])


def test_sr_identity_srcnn_equals_libswscale_bicubic(tmp_path) -> None:
    frames = lavfi_frames("gray", 21, 13, 2)
    out = run_filter(make_filter("sr", model=models.identity(tmp_path, 1)), frames)
    assert digest(out) == digest([io_proc.upscale_frame(f, 42, 26) for f in frames])


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
