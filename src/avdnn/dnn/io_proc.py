"""Frame <-> tensor for process-frame models, as FFmpeg's dnn_io_proc does it (reference s.5).

* Float models get ``value * (1/255)`` in (libswscale's gray8->grayf32 path: one float32
  multiply) and give back ``clip(rint(255 * v))`` (grayf32->gray8: float32 multiply, round
  half to even, clip); uint8 models pass bytes both ways; grayf32 frames are copied raw.
* rgb24/bgr24 feed all three channels in the frame's own order (NHWC as is, NCHW as planes);
  gray, yuv4xxp and nv12 feed the luma plane only, one channel. Chroma is copied when the
  output keeps the size and bicubic-resized with libswscale (through PyAV) otherwise.
* Allowed (dtype, scale, mean): (UINT8, 0|1, 0) and (FLOAT, 0|255, 0); other combinations are
  AVERROR(ENOSYS), as in FFmpeg.

Fixed FFmpeg quirks (s.7 #20): a uint8 output tensor going to a gray/yuv frame is copied as
bytes (FFmpeg decodes it as float: garbage); a grayf32 frame with a uint8 model is refused
with AVERROR(EIO) instead of overflowing the tensor. Non-finite float outputs become 0/255
instead of undefined bytes. All pixel work is numpy or libswscale; no per-pixel Python.
"""

from __future__ import annotations

import threading

import av
import numpy as np

from avdnn.dnn.interface import DNNDataType, DNNLayout, TensorInfo
from avdnn.errors import IOFailureError, NotSupportedError
from avdnn.media import swscale
from avdnn.media.frame import Frame, av_planes
from avdnn.media.pixfmt import DNN_PIX_FMTS, canonical, lookup

_INV255 = np.float32(1.0 / 255.0)
_F255 = np.float32(255.0)
PACKED_RGB = ("rgb24", "bgr24")
FLOAT_GRAY = "grayf32le"


def frame_channels(fmt: str) -> int:
    """Channels the model sees for a frame format: 3 for packed RGB, 1 (luma) otherwise."""
    fmt = canonical(fmt)
    if fmt not in DNN_PIX_FMTS:
        raise NotSupportedError(
            f"pixel format {fmt} is not supported by DNN io_proc (supported: {', '.join(DNN_PIX_FMTS)})"
        )
    return 3 if fmt in PACKED_RGB else 1


def model_plane(frame: Frame) -> np.ndarray:
    """The part of the frame the model sees: the packed RGB picture, or the luma plane."""
    frame_channels(frame.format)
    return frame.planes[0]


def check_dtype(info: TensorInfo, fmt: str, what: str = "input") -> None:
    """Refuse a tensor type/normalisation io_proc cannot convert for this frame format.

    A tensor type avdnn cannot convert at all, or uint8 with a grayf32 frame, is FFmpeg's
    config-time AVERROR(EIO); a float/uint8 tensor whose scale/mean is not FFmpeg's is
    AVERROR(ENOSYS).
    """
    fmt = canonical(fmt)
    if info.dtype is None:
        raise IOFailureError(
            f"model {what} {info.describe()} has data type {info.type_name or '?'}; "
            f"only float32 and uint8 tensors are supported"
        )
    if fmt == FLOAT_GRAY:
        if info.dtype != DNNDataType.FLOAT:
            raise IOFailureError(f"grayf32 frames need a float32 model {what}, {info.describe()} is uint8")
        return
    if info.dtype == DNNDataType.UINT8:
        ok = info.scale in (0.0, 1.0) and info.mean == 0.0
    else:
        ok = info.scale in (0.0, 255.0) and info.mean == 0.0
    if not ok:
        raise NotSupportedError(
            f"model {what} {info.describe()}: scale {info.scale:g} / mean {info.mean:g} is not supported "
            f"(uint8 needs scale 1, float needs scale 255, mean 0)"
        )


def item_shape(info: TensorInfo, fmt: str, width: int, height: int) -> tuple[int, int, int]:
    """Per-frame input tensor shape (no batch axis) for a frame of this format and size."""
    return info.item_shape(frame_channels(fmt), height, width)


def fill_tensor(src: np.ndarray, dst: np.ndarray, info: TensorInfo) -> None:
    """Write one frame's model plane into ``dst`` (one item of the batch buffer).

    A float tensor is filled by row bands that fit in the core's cache: each band is cast
    and then scaled while it is still there, so the frame-sized float buffer goes out to
    memory once instead of being read back for the multiply.
    """
    planar = src.ndim == 3 and info.layout != DNNLayout.NHWC
    if planar:
        src = src.transpose(2, 0, 1)  # packed -> planes, in the frame's own channel order
    view = dst.reshape(src.shape)
    if src.dtype == np.float32 or dst.dtype != np.float32:  # grayf32 (raw) or a uint8 model (bytes)
        np.copyto(view, src, casting="unsafe")
        return
    for band in _bands(src.shape[1] if planar else src.shape[0], (view[:, 0] if planar else view[0]).nbytes):
        d = view[:, band] if planar else view[band]
        np.copyto(d, src[:, band] if planar else src[band], casting="unsafe")  # cast, then scale in place:
        np.multiply(d, _INV255, out=d)  # faster than numpy's mixed-type loop


#: Bytes of float32 converted per band: the band and its bytes stay in a core's L2 (1 MiB on
#: the machines measured) between the passes, so a frame-sized float buffer is read from
#: memory once per conversion instead of once per pass.
_BAND_BYTES = 512 * 1024


def _bands(height: int, row_bytes: int) -> list[slice]:
    """Row bands of about _BAND_BYTES (``row_bytes``: the bytes of one row, every plane)."""
    step = max(1, _BAND_BYTES // max(1, row_bytes))
    return [slice(r, r + step) for r in range(0, height, step)]


def tensor_size(out: np.ndarray, info: TensorInfo) -> tuple[int, int, int]:
    """(channels, height, width) of one output item (leading batch axis of 1)."""
    if out.ndim != 4:
        raise IOFailureError(
            f"model output {info.describe()} gave a {out.ndim}-D tensor {out.shape}; "
            f"a process-frame model must give 4-D"
        )
    if info.layout == DNNLayout.NHWC:
        return out.shape[3], out.shape[1], out.shape[2]
    return out.shape[1], out.shape[2], out.shape[3]


def check_output(out: np.ndarray, info: TensorInfo, fmt: str) -> tuple[int, int]:
    """(height, width) of one output item, after checking its channels fit ``fmt`` frames."""
    channels, height, width = tensor_size(out, info)
    want = frame_channels(fmt)
    if channels != want:
        raise IOFailureError(f"model output {info.describe()} has {channels} channel(s); {canonical(fmt)} needs {want}")
    return height, width


def picture(out: np.ndarray, info: TensorInfo, fmt: str) -> av.VideoFrame:
    """One output item (leading batch axis of 1) as a new PyAV frame of ``fmt``: the packed
    RGB picture, or the luma plane with the other planes left for :func:`output_frame`.

    The pixels are written once, into the frame that leaves the filter: float planes are
    rounded in place (a model's output is read once) and cast as they are copied in.
    """
    fmt = canonical(fmt)
    height, width = check_output(out, info, fmt)
    item = out[0]
    if item.dtype not in (np.float32, np.uint8):
        raise IOFailureError(f"model output {info.describe()} has unsupported type {item.dtype}")
    if fmt == FLOAT_GRAY and item.dtype != np.float32:
        raise IOFailureError(f"grayf32 frames need a float32 model output, got {item.dtype}")
    if frame_channels(fmt) == 3 and info.layout != DNNLayout.NHWC:
        return interleave(item, fmt)
    frame = av.VideoFrame(width, height, fmt)
    dst = av_planes(frame)[0]
    plane = item.reshape(dst.shape)
    if plane.dtype == np.float32 and fmt != FLOAT_GRAY:
        _write_rounded(plane, dst)
    else:
        np.copyto(dst, plane)
    return frame


def read_tensor(out: np.ndarray, info: TensorInfo, fmt: str) -> np.ndarray:
    """One output item as the frame's model plane: (H, W, 3) packed RGB or (H, W) luma."""
    return av_planes(picture(out, info, fmt))[0]


def float_to_u8(plane: np.ndarray) -> np.ndarray:
    """libswscale's grayf32 -> gray8: clip(rint(255 * v)), computed in float32, NaN as 0."""
    out = np.empty(plane.shape, dtype=np.uint8)
    _write_rounded(np.array(plane, dtype=np.float32, order="C"), out)  # a copy: the input is kept
    return out


#: 1.5 * 2**23: x + _MAGIC rounds x (|x| < 2**22) to an integer, ties to even, into the low mantissa bits
_MAGIC = np.float32(12582912.0)
#: the float32 bits of _MAGIC + 0 and _MAGIC + 255: the clip, on the bits
_LOW, _HIGH = np.int32(0x4B400000), np.int32(0x4B4000FF)


def _write_rounded(src: np.ndarray, dst: np.ndarray | tuple[np.ndarray, ...]) -> None:
    """``dst`` (uint8) = ``clip(rint(255 * src), 0, 255)``, NaN as 0; a tuple ``dst`` holds
    one array per plane of a (C, H, W) ``src``.

    ``src`` (float32) is overwritten: a model's output is read once. By row bands (of every
    plane at once: fewer numpy calls, each a GIL hand-off while another thread fills the next
    frame) that stay in the core's cache, four passes and the cast: the float32 multiply; a
    max that finds NaN (rare, cleared then); adding 1.5 * 2**23, which rounds half to even as
    ``rint`` does and leaves the integer in the low mantissa bits; the clip, on those bits
    (positive floats order as their bits; -inf and big negatives have the sign bit, +inf and
    big values more than _HIGH); the cast to uint8 keeps the low byte.
    """
    planes = isinstance(dst, tuple)
    if not (src.flags.writeable and src.flags.c_contiguous):
        src = np.array(src, dtype=np.float32, order="C")
    rows, row = (src.shape[1], src[:, 0]) if planes else (src.shape[0], src[0])
    with np.errstate(over="ignore", invalid="ignore"):  # 255 * 1e38 is +inf (255), a signalling NaN 0
        for band in _bands(rows, row.nbytes):
            v = src[:, band] if planes else src[band]
            np.multiply(v, _F255, out=v)
            top = v.max()
            if top != top:  # the max of a NaN-holding array is NaN: one cheap reduction finds them
                np.nan_to_num(v, copy=False, nan=0.0)
            np.add(v, _MAGIC, out=v)
            bits = v.view(np.int32)
            np.clip(bits, _LOW, _HIGH, out=bits)
            if isinstance(dst, tuple):
                for d, b in zip(dst, bits, strict=True):
                    np.copyto(d[band], b, casting="unsafe")
            else:
                np.copyto(dst[band], bits, casting="unsafe")


#: Below this many pixels numpy interleaves faster than a trip through libswscale.
_SWS_INTERLEAVE_MIN = 64 * 64
#: the gbrp planes (G, B, R) that make each packed format's bytes the model's planes in order
_GBRP_FROM = {"rgb24": (1, 2, 0), "bgr24": (1, 0, 2)}


def interleave(chw: np.ndarray, fmt: str = "rgb24") -> av.VideoFrame:
    """(3, H, W) uint8 planes, or float32 ones to round -> a packed ``fmt`` frame whose bytes
    are the planes in order (the frame's own channel order, as the model saw it).

    numpy's strided byte gather is slow for big frames (about 6 ms at 1280x720 here), so
    those go through libswscale as gbrp -> rgb24/bgr24 (a SIMD byte shuffle, exact), whose
    output frame is the one that leaves; float planes are rounded into the gbrp planes.
    """
    _, height, width = chw.shape
    if height * width < _SWS_INTERLEAVE_MIN:
        frame = av.VideoFrame(width, height, fmt)
        u8 = chw if chw.dtype == np.uint8 else np.empty(chw.shape, dtype=np.uint8)
        if u8 is not chw:
            _write_rounded(chw, u8)
        np.copyto(av_planes(frame)[0], u8.transpose(1, 2, 0))
        return frame
    gbrp = _gbrp_frame(width, height)
    planes = av_planes(gbrp)
    dsts = tuple(planes[_GBRP_FROM[fmt].index(c)] for c in range(3))  # the gbrp plane of each model plane
    if chw.dtype == np.uint8:
        for dst, plane in zip(dsts, chw, strict=True):
            np.copyto(dst, plane)
    else:
        _write_rounded(chw, dsts)
    return swscale.reformat(gbrp, format=fmt)


_local = threading.local()


def _gbrp_frame(width: int, height: int) -> av.VideoFrame:
    """This thread's gbrp frame of this size: interleave's staging frame, reused from frame to
    frame (libswscale only reads it), so no frame-sized buffer is allocated and faulted in
    per frame for it."""
    frame: av.VideoFrame | None = getattr(_local, "gbrp", None)
    if frame is None or (frame.width, frame.height) != (width, height):
        frame = _local.gbrp = av.VideoFrame(width, height, "gbrp")
    return frame


def resize_plane(plane: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bicubic libswscale resize of one 8-bit plane (FFmpeg's chroma path), via PyAV."""
    if plane.shape[:2] == (height, width):
        return np.array(plane, order="C")
    if plane.ndim == 3:  # nv12 UV: each channel on its own, as libswscale does for ya8
        return np.stack([resize_plane(plane[..., c], width, height) for c in range(plane.shape[2])], axis=-1)
    src = av.VideoFrame.from_ndarray(np.ascontiguousarray(plane), format="gray")
    out = swscale.reformat(src, width=width, height=height, interpolation="BICUBIC")
    return np.array(out.to_ndarray(), order="C")


def upscale_frame(frame: Frame, width: int, height: int) -> Frame:
    """The whole frame bicubic-resized by libswscale in its own format (sr's SRCNN pre-scale)."""
    return frame.with_av(swscale.reformat(frame.to_av(), width=width, height=height, interpolation="BICUBIC"))


def output_frame(in_frame: Frame, main: av.VideoFrame, chroma_from: Frame | None = None) -> Frame:
    """The output frame: ``main`` (from :func:`picture`) with chroma from ``chroma_from``.

    Chroma planes are copied into ``main`` when their size fits and bicubic-resized otherwise;
    timing, side data and colour properties come from ``in_frame``.
    """
    spec = lookup(canonical(in_frame.format))
    source = chroma_from if chroma_from is not None else in_frame
    planes = av_planes(main)
    for pspec, dst, plane in zip(spec.planes[1:], planes[1:], source.planes[1:], strict=True):
        if plane.shape != dst.shape:
            w, h = pspec.size(main.width, main.height)
            plane = resize_plane(plane, w, h)
        np.copyto(dst, plane)
    return in_frame.with_av(main)
