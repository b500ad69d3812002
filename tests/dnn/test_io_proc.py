"""io_proc through dnn_processing: identity is bit-exact, invert/conv match numpy exactly."""

from __future__ import annotations

import numpy as np
import onnx_models as models
import pytest
from dnnutil import digest, lavfi_frames, make_filter, random_frames, run_filter

from avdnn.dnn import io_proc
from avdnn.dnn.interface import DNNDataType, DNNLayout, TensorInfo
from avdnn.errors import IOFailureError, NotSupportedError

SIZES = [(97, 61), (96, 64)]
FORMATS = ["rgb24", "bgr24", "grayf32", "yuv420p", "yuv444p", "gray", "nv12", "yuv422p", "yuv410p", "yuv411p"]


def channels(fmt: str) -> int:
    return 3 if fmt in ("rgb24", "bgr24") else 1


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("fmt", FORMATS)
def test_identity_is_md5_identical(tmp_path, fmt: str, size: tuple[int, int]) -> None:
    frames = lavfi_frames(fmt, *size, count=3)
    f = make_filter("dnn_processing", model=models.identity(tmp_path, channels(fmt)))
    out = run_filter(f, frames)
    assert len(out) == 3
    assert digest(out) == digest(frames)
    assert [o.format for o in out] == [frames[0].format] * 3
    assert [o.pts for o in out] == [fr.pts for fr in frames]


@pytest.mark.parametrize("fmt", ["rgb24", "gray", "yuv420p"])
def test_identity_nhwc_and_uint8_models(tmp_path, fmt: str) -> None:
    frames = random_frames(fmt, 33, 17, 2)
    c = channels(fmt)
    for path in (
        models.identity(tmp_path, c, nhwc=True, name=f"nhwc{c}"),
        models.identity(tmp_path, c, elem=models.U8, name=f"u8_{c}"),
    ):
        assert digest(run_filter(make_filter("dnn_processing", model=path), frames)) == digest(frames)


def test_every_byte_value_round_trips_exactly() -> None:
    """u8 -> float (v * 1/255) -> u8 (clip(rint(255 v))) is the identity on all 256 values."""
    info = TensorInfo("x", (1, 1, -1, -1), DNNDataType.FLOAT)
    src = np.arange(256, dtype=np.uint8).reshape(16, 16)
    dst = np.empty((1, 16, 16), dtype=np.float32)
    io_proc.fill_tensor(src, dst, info)
    assert np.array_equal(dst[0], src.astype(np.float32) * np.float32(1 / 255))
    assert np.array_equal(io_proc.read_tensor(dst[None], info, "gray"), src)


def test_float_to_u8_rounds_half_to_even_and_clips() -> None:
    v = np.array([-1.0, 0.5 / 255, 1.5 / 255, 2.5 / 255, 254.5 / 255, 2.0, np.nan, np.inf, -np.inf], dtype=np.float32)
    assert io_proc.float_to_u8(v).tolist() == [0, 0, 2, 2, 254, 255, 0, 255, 0]


@pytest.mark.parametrize("fmt", ["rgb24", "bgr24", "gray", "yuv420p", "nv12"])
def test_invert_matches_numpy(tmp_path, fmt: str) -> None:
    frames = random_frames(fmt, 31, 21, 2)
    out = run_filter(make_filter("dnn_processing", model=models.invert(tmp_path, channels(fmt))), frames)
    for a, b in zip(frames, out, strict=True):
        x = a.planes[0].astype(np.float32) * np.float32(1 / 255)
        want = np.clip(np.rint((np.float32(1) - x) * np.float32(255)), 0, 255).astype(np.uint8)
        assert np.array_equal(b.planes[0], want)
        assert np.array_equal(b.planes[0], 255 - a.planes[0])
        for pa, pb in zip(a.planes[1:], b.planes[1:], strict=True):
            assert np.array_equal(pa, pb)  # chroma copied


def test_uint8_output_to_yuv_is_bytes_not_float(tmp_path) -> None:
    """FFmpeg quirk s.7 #20: a uint8 tensor for a yuv/gray frame used to be read as float."""
    frames = random_frames("yuv420p", 32, 20, 2)
    out = run_filter(make_filter("dnn_processing", model=models.invert_u8(tmp_path, 1)), frames)
    for a, b in zip(frames, out, strict=True):
        assert np.array_equal(b.planes[0], 255 - a.planes[0])


@pytest.mark.parametrize("fmt", ["rgb24", "bgr24", "gray"])
def test_conv3x3_matches_numpy(tmp_path, fmt: str) -> None:
    frames = random_frames(fmt, 29, 19, 2, seed=3)
    out = run_filter(make_filter("dnn_processing", model=models.conv3x3(tmp_path, channels(fmt))), frames)
    for a, b in zip(frames, out, strict=True):
        assert np.array_equal(b.planes[0], models.conv3x3_reference(a.planes[0]))


def test_bgr24_feeds_planes_in_frame_order(tmp_path) -> None:
    """NCHW channel 0 is B for bgr24: the channel-mixing conv sees the frame's own order."""
    rgb = random_frames("rgb24", 16, 8, 1)[0]
    bgr = rgb.with_planes([np.ascontiguousarray(rgb.planes[0][..., ::-1])], format="bgr24")
    path = models.conv3x3(tmp_path, 3)
    out = run_filter(make_filter("dnn_processing", model=path), [bgr])[0]
    assert np.array_equal(out.planes[0], models.conv3x3_reference(bgr.planes[0]))


def test_grayf32_with_uint8_model_is_eio(tmp_path) -> None:
    f = make_filter("dnn_processing", model=models.identity(tmp_path, 1, elem=models.U8))
    with pytest.raises(IOFailureError) as info:
        run_filter(f, random_frames("grayf32", 8, 8, 1))
    assert "float32" in info.value.message and info.value.filter == "dnn_processing"


def test_unsupported_normalisation_is_enosys() -> None:
    info = TensorInfo("x", (1, 3, 4, 4), DNNDataType.FLOAT, scale=2.0)
    with pytest.raises(NotSupportedError):
        io_proc.check_dtype(info, "rgb24")
    with pytest.raises(NotSupportedError):
        io_proc.check_dtype(TensorInfo("x", (1, 3, 4, 4), DNNDataType.UINT8, scale=1.0, mean=3.0), "rgb24")
    io_proc.check_dtype(TensorInfo("x", (1, 3, 4, 4), DNNDataType.FLOAT, scale=255.0), "rgb24")


def test_nhwc_fill_and_read_shapes() -> None:
    info = TensorInfo("x", (1, -1, -1, 3), DNNDataType.FLOAT, layout=DNNLayout.NHWC)
    src = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    dst = np.empty(info.item_shape(3, 2, 3), dtype=np.float32)
    io_proc.fill_tensor(src, dst, info)
    assert np.array_equal(io_proc.read_tensor(dst[None], info, "rgb24"), src)


def _formula(v: np.ndarray) -> np.ndarray:
    """libswscale's grayf32 -> gray8 written out: clip(rint(255 * v)) in float32, NaN as 0."""
    with np.errstate(all="ignore"):
        r = np.clip(np.rint(np.multiply(v, np.float32(255), dtype=np.float32)), 0, 255)
    return np.nan_to_num(r, nan=0.0).astype(np.uint8)


def _every_kind_of_float32() -> np.ndarray:
    """A sample of every float32 bit pattern (NaNs with payloads, signalling NaNs, infinities,
    subnormals, huge values) and the floats at and each side of every k + 1/2 after the * 255."""
    bits = np.arange(0, 2**32, 9973, dtype=np.uint64).astype(np.uint32).view(np.float32)
    halves = np.float32((np.arange(-2, 258, dtype=np.float64) + 0.5) / 255)
    sides = [np.nextafter(halves, np.float32(-1)), np.nextafter(halves, np.float32(2))]
    return np.concatenate([bits, halves, *sides])


def test_float_to_u8_is_the_formula_on_every_kind_of_float32() -> None:
    """Exact on every class of float a model can give, and quiet: 255 * 1e38 overflowing or a
    signalling NaN is no RuntimeWarning (pytest makes warnings errors)."""
    v = _every_kind_of_float32()
    before = v.copy()
    assert np.array_equal(io_proc.float_to_u8(v), _formula(v))
    assert np.array_equal(v.view(np.uint32), before.view(np.uint32)), "float_to_u8 changed its input"


@pytest.mark.parametrize("layout", [DNNLayout.NCHW, DNNLayout.NHWC])
@pytest.mark.parametrize("fmt", ["rgb24", "bgr24", "gray"])
def test_every_row_band_is_rounded_as_the_formula(monkeypatch, fmt: str, layout: DNNLayout) -> None:
    """The conversions work in row bands (cache-sized); with bands of a few rows each band
    boundary, the last short band and every kind of float give the formula's bytes."""
    monkeypatch.setattr(io_proc, "_BAND_BYTES", 1000)
    c = channels(fmt)
    height, width = 70, 80  # > 64 x 64: rgb24/bgr24 interleave through libswscale
    kinds = _every_kind_of_float32()
    v = np.random.default_rng(7).choice(kinds, size=(c, height, width)).astype(np.float32)
    want = _formula(v).transpose(1, 2, 0)
    out = (v if layout == DNNLayout.NCHW else v.transpose(1, 2, 0))[None].copy()
    info = TensorInfo("y", (1, -1, -1, -1), DNNDataType.FLOAT, layout=layout)
    got = io_proc.read_tensor(out, info, fmt)  # rounds ``out`` in place, as a model's output
    assert np.array_equal(got, want if c == 3 else want[..., 0])


@pytest.mark.parametrize("layout", [DNNLayout.NCHW, DNNLayout.NHWC])
def test_fill_in_row_bands_is_pixels_times_1_over_255(monkeypatch, layout: DNNLayout) -> None:
    monkeypatch.setattr(io_proc, "_BAND_BYTES", 1000)
    info = TensorInfo("x", (1, -1, -1, -1), DNNDataType.FLOAT, layout=layout)
    src = np.random.default_rng(3).integers(0, 256, (37, 45, 3), dtype=np.uint8)
    dst = np.empty(info.item_shape(3, 37, 45), dtype=np.float32)
    io_proc.fill_tensor(src, dst, info)
    want = src.astype(np.float32) * np.float32(1 / 255)
    assert np.array_equal(dst, want.transpose(2, 0, 1) if layout == DNNLayout.NCHW else want)


@pytest.mark.parametrize("fmt", ["rgb24", "bgr24", "gray", "yuv420p", "nv12", "grayf32"])
def test_the_output_frame_leaves_in_the_buffer_it_was_written_to(tmp_path, fmt: str) -> None:
    """No copy after the conversion: the frame dnn_processing gives is a PyAV frame whose
    buffers hold the pixels (an encoder or a libavfilter segment takes it as it is)."""
    frames = random_frames(fmt, 97, 61, 1)
    out = run_filter(make_filter("dnn_processing", model=models.identity(tmp_path, channels(fmt))), frames)[0]
    assert digest([out]) == digest(frames)
    av_frame = out.to_av()
    for plane, buffer in zip(out.planes, av_frame.planes, strict=True):
        assert np.shares_memory(plane, np.frombuffer(memoryview(buffer), dtype=np.uint8))
