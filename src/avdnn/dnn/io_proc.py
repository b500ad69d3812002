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

import numpy as np

from avdnn.dnn.interface import DNNDataType, DNNLayout, TensorInfo
from avdnn.errors import IOFailureError, NotSupportedError
from avdnn.media import swscale
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import DNN_PIX_FMTS, canonical, lookup

_INV255 = np.float32(1.0 / 255.0)
_F255 = np.float32(255.0)
_F0 = np.float32(0.0)
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
    """Write one frame's model plane into ``dst`` (one item of the batch buffer)."""
    if src.ndim == 3 and info.layout != DNNLayout.NHWC:
        src = src.transpose(2, 0, 1)  # packed -> planes, in the frame's own channel order
    view = dst.reshape(src.shape)
    if src.dtype == np.float32:  # grayf32: raw copy
        np.copyto(view, src, casting="unsafe")
    elif dst.dtype == np.float32:  # cast, then scale in place: faster than numpy's mixed-type loop
        np.copyto(view, src, casting="unsafe")
        np.multiply(view, _INV255, out=view)
    else:
        np.copyto(view, src, casting="unsafe")


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


def read_tensor(out: np.ndarray, info: TensorInfo, fmt: str) -> np.ndarray:
    """One output item as the frame's model plane: (H, W, 3) packed RGB or (H, W) luma."""
    fmt = canonical(fmt)
    channels, height, width = tensor_size(out, info)
    want = frame_channels(fmt)
    if channels != want:
        raise IOFailureError(f"model output {info.describe()} has {channels} channel(s); {fmt} needs {want}")
    item = out[0]
    if want == 3:
        planar = info.layout != DNNLayout.NHWC
        plane = item.transpose(1, 2, 0) if planar else item
    else:
        planar = False
        plane = item.reshape(height, width)
    if fmt == FLOAT_GRAY:
        if plane.dtype != np.float32:
            raise IOFailureError(f"grayf32 frames need a float32 model output, got {plane.dtype}")
        return np.array(plane, dtype=np.float32, order="C")
    if plane.dtype == np.uint8:
        return interleave(item) if planar else np.array(plane, order="C")
    if plane.dtype != np.float32:
        raise IOFailureError(f"model output {info.describe()} has unsupported type {plane.dtype}")
    if planar:  # round and clamp the planes (contiguous), then cast while interleaving, once
        return interleave(_rounded(item, in_place=True))
    return float_to_u8(plane)


def float_to_u8(plane: np.ndarray) -> np.ndarray:
    """libswscale's grayf32 -> gray8: clip(rint(255 * v)), computed in float32.

    One ``np.clip`` pass (numpy's fast path: a third of ``fmax`` + ``fmin``, which cost 2 of
    the 2.3 ms of a 1280x720 RGB frame). It keeps NaN, which ``nan_to_num`` then clears in
    the few frames that have one (+-inf are clamped to 255 / 0 already).
    """
    return _rounded(plane).astype(np.uint8, order="C")


def _rounded(plane: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """float32 ``clip(rint(255 * v), 0, 255)`` with NaN as 0: exact integers, ready to cast.

    ``in_place``: overwrite ``plane`` when numpy lets us (a model's output array is read once,
    by this conversion), which saves a frame-sized allocation and its page faults.
    """
    if in_place and plane.dtype == np.float32 and plane.flags.writeable and plane.flags.c_contiguous:
        v = np.multiply(plane, _F255, out=plane)
    else:
        v = np.multiply(plane, _F255, dtype=np.float32)  # same memory order as ``plane``
    np.rint(v, out=v)
    np.clip(v, _F0, _F255, out=v)
    if np.isnan(v.max()):  # max of a NaN-holding array is NaN: one cheap reduction finds them
        np.nan_to_num(v, copy=False, nan=0.0)
    rounded: np.ndarray = v
    return rounded


#: Below this many pixels numpy interleaves faster than a trip through libswscale.
_SWS_INTERLEAVE_MIN = 64 * 64


def interleave(chw: np.ndarray) -> np.ndarray:
    """(3, H, W) uint8 planes (or float32 holding exact byte values) -> (H, W, 3) uint8 packed.

    numpy's strided byte gather is slow for big frames (about 6 ms at 1280x720 here), so
    those go through libswscale as gbrp -> rgb24 (a SIMD byte shuffle, exact); float planes
    are cast to bytes as they are copied in (no separate pass).
    """
    _, height, width = chw.shape
    if height * width < _SWS_INTERLEAVE_MIN:
        return chw.transpose(1, 2, 0).astype(np.uint8, order="C")
    import av

    frame = av.VideoFrame(width, height, "gbrp")
    for plane, src in zip(frame.planes, (chw[1], chw[2], chw[0]), strict=True):  # gbrp is G, B, R
        np.copyto(
            np.frombuffer(memoryview(plane), dtype=np.uint8).reshape(height, plane.line_size)[:, :width],
            src,
            casting="unsafe",
        )
    out = swscale.reformat(frame, format="rgb24")
    line = out.planes[0].line_size
    packed = np.frombuffer(memoryview(out.planes[0]), dtype=np.uint8).reshape(height, line)[:, : width * 3]
    result: np.ndarray = packed.reshape(height, width, 3)
    return result


def resize_plane(plane: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bicubic libswscale resize of one 8-bit plane (FFmpeg's chroma path), via PyAV."""
    import av

    if plane.shape[:2] == (height, width):
        return np.array(plane, order="C")
    if plane.ndim == 3:  # nv12 UV: each channel on its own, as libswscale does for ya8
        return np.stack([resize_plane(plane[..., c], width, height) for c in range(plane.shape[2])], axis=-1)
    src = av.VideoFrame.from_ndarray(np.ascontiguousarray(plane), format="gray")
    out = swscale.reformat(src, width=width, height=height, interpolation="BICUBIC")
    return np.array(out.to_ndarray(), order="C")


def upscale_frame(frame: Frame, width: int, height: int) -> Frame:
    """The whole frame bicubic-resized by libswscale in its own format (sr's SRCNN pre-scale)."""
    av_frame = swscale.reformat(frame.to_av(), width=width, height=height, interpolation="BICUBIC")
    planes = Frame.from_av(av_frame).planes
    return frame.with_planes([np.array(p, order="C") for p in planes])


def output_frame(in_frame: Frame, main: np.ndarray, chroma_from: Frame | None = None) -> Frame:
    """The output frame: ``main`` (model plane) plus chroma taken from ``chroma_from``.

    Chroma planes are copied when their size fits the output and bicubic-resized otherwise.
    Timing and side data come from ``in_frame``.
    """
    fmt = canonical(in_frame.format)
    spec = lookup(fmt)
    height, width = main.shape[:2]
    planes = [main]
    source = chroma_from if chroma_from is not None else in_frame
    for pspec, plane in zip(spec.planes[1:], source.planes[1:], strict=True):
        w, h = pspec.size(width, height)
        planes.append(resize_plane(plane, w, h))
    return in_frame.with_planes(planes, format=fmt)
