"""Frame -> tensor for detection and classification models (FFmpeg's dnn_io_proc, s.5.3-5.4, s.9).

* Detect input: the whole frame goes through **one** libswscale call (SWS_FAST_BILINEAR,
  default BT.601, through PyAV's reformatter) that converts it from any format and stretches
  it to the model's W x H, into packed rgb24 or bgr24 following the backend's colour order.
  Pixel values stay 0..255: uint8 tensors get bytes, float tensors get the same values as
  floats (FFmpeg 1ae40482: "no /255"). NHWC or NCHW. With ``letterbox`` the frame is scaled
  with its aspect ratio kept and pasted into a canvas of :data:`LETTERBOX_FILL` grey.
* Classify input: the box's region of the frame (FFmpeg's pointer offsets: ``x * step`` bytes
  for packed planes, ``AV_CEIL_RSHIFT(x, log2_chroma_w)`` for chroma planes) is scaled by one
  FAST_BILINEAR libswscale call to the model's W x H, same colour rules. avdnn clips the box to
  the frame first instead of skipping the whole frame (FFmpeg's s.7 #16).
* Text input (avdnn, a CTC recognizer): the box keeps its aspect ratio at the model's height and
  is padded on the right (:func:`text_spec`, :func:`text_fill`).

avdnn extensions: a 1-channel model input gets gray8 (libswscale's luma); a tensor whose
description carries a scale other than 0/1 or a mean other than 0 gets ``(v - mean) / scale``
(OpenVINO's pre-processing semantics), for backends that do not normalise inside the runtime.
All pixel work is libswscale or numpy; no per-pixel Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from avdnn.dnn.detect.letterbox import Letterbox, placement
from avdnn.dnn.interface import DYNAMIC, DNNColorOrder, DNNDataType, DNNLayout, TensorInfo
from avdnn.errors import IOFailureError, NotSupportedError
from avdnn.media import swscale
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import lookup

#: libswscale flag FFmpeg's detect/classify io_proc uses.
INTERPOLATION = "FAST_BILINEAR"
#: Padding value of the letterbox canvas (Ultralytics' and YOLOX's 114 grey).
LETTERBOX_FILL = 114


@dataclass(frozen=True)
class InputSpec:
    """What one analytics inference needs: tensor shape (no batch), dtype, size, channels, order."""

    shape: tuple[int, ...]
    dtype: np.dtype
    width: int
    height: int
    channels: int
    pix_fmt: str
    nhwc: bool
    scale: float
    mean: float


def input_spec(info: TensorInfo, frame_width: int, frame_height: int, multiple: int = 1) -> InputSpec:
    """The model input for frames of this size (a dynamic H/W takes the frame's, as FFmpeg;
    rounded to the nearest ``multiple``, at least one, for models whose sides must divide by it).

    Raises:
        IOFailureError: the tensor type cannot be fed, or its channel count is not 1 or 3.
    """
    if info.dtype is None:
        raise IOFailureError(
            f"model input {info.describe()} has data type {info.type_name or '?'}; "
            f"detect/classify inputs must be float32 or uint8"
        )
    if len(info.dims) != 4:
        raise IOFailureError(f"model input {info.describe()} is not 4-D ([N,C,H,W] or [N,H,W,C])")
    width = info.width if info.width != DYNAMIC else _round(frame_width, multiple)
    height = info.height if info.height != DYNAMIC else _round(frame_height, multiple)
    channels = info.channels if info.channels != DYNAMIC else 3
    if channels not in (1, 3):
        raise IOFailureError(
            f"model input {info.describe()} has {channels} channels; detect/classify feed 3 (rgb/bgr) or 1 (gray)"
        )
    fmt = "gray" if channels == 1 else "bgr24" if info.order == DNNColorOrder.BGR else "rgb24"
    nhwc = info.layout == DNNLayout.NHWC
    shape = (height, width, channels) if nhwc else (channels, height, width)
    scale, mean = float(info.scale), float(info.mean)
    if info.dtype == DNNDataType.UINT8 and not (scale in (0.0, 1.0) and mean == 0.0):
        raise NotSupportedError(
            f"model input {info.describe()}: a uint8 tensor takes bytes as they are "
            f"(scale {scale:g} / mean {mean:g} is not supported)"
        )
    return InputSpec(shape, info.dtype.numpy, width, height, channels, fmt, nhwc, scale, mean)


def _round(size: int, multiple: int) -> int:
    return size if multiple <= 1 else max(multiple, int(size / multiple + 0.5) * multiple)


def geometry(spec: InputSpec, frame_width: int, frame_height: int, use_letterbox: bool) -> Letterbox:
    """Where the frame lands in this model input (:func:`~avdnn.dnn.detect.letterbox.placement`)."""
    return placement(frame_width, frame_height, spec.width, spec.height, use_letterbox=use_letterbox)


def _swscale(frame: Frame, width: int, height: int, fmt: str) -> np.ndarray:
    """One libswscale call: any format, any size -> packed ``fmt`` at width x height.

    BT.601 both ways, as FFmpeg's io_proc (it never calls sws_setColorspaceDetails); PyAV
    would otherwise take the frame's own colorspace.
    """
    out = swscale.reformat(
        frame.to_av(),
        width=width,
        height=height,
        format=fmt,
        interpolation=INTERPOLATION,
        src_colorspace="ITU601",
        dst_colorspace="ITU601",
    )
    arr = out.to_ndarray()
    return arr if arr.ndim == 3 else arr[..., None]


def _store(img: np.ndarray, dst: np.ndarray, spec: InputSpec) -> None:
    """Write an (H, W, C) uint8 picture into one item of the batch buffer."""
    src = img if spec.nhwc else img.transpose(2, 0, 1)
    view = dst.reshape(src.shape)
    if dst.dtype == np.uint8:
        np.copyto(view, src)
        return
    np.copyto(view, src, casting="unsafe")
    if spec.mean != 0.0:
        view -= np.float32(spec.mean)
    if spec.scale not in (0.0, 1.0):
        view /= np.float32(spec.scale)


def detect_image(frame: Frame, spec: InputSpec, geom: Letterbox) -> np.ndarray:
    """The model's picture of the whole frame as (H, W, C) uint8 (stretched or letterboxed)."""
    if geom.is_stretch:
        return _swscale(frame, spec.width, spec.height, spec.pix_fmt)
    inner = _swscale(frame, geom.resized_width, geom.resized_height, spec.pix_fmt)
    canvas = np.full((spec.height, spec.width, spec.channels), LETTERBOX_FILL, dtype=np.uint8)
    canvas[geom.pad_top : geom.pad_top + geom.resized_height, geom.pad_left : geom.pad_left + geom.resized_width] = (
        inner
    )
    return canvas


def detect_fill(frame: Frame, spec: InputSpec, geom: Letterbox) -> Callable[[np.ndarray], None]:
    """The engine's ``fill`` for one detect inference over ``frame``."""

    def fill(dst: np.ndarray) -> None:
        _store(detect_image(frame, spec, geom), dst, spec)

    return fill


def clip_box(x: int, y: int, w: int, h: int, width: int, height: int) -> tuple[int, int, int, int]:
    """The part of a box inside a width x height frame (w or h 0 when nothing is left)."""
    x0, y0 = min(max(x, 0), width), min(max(y, 0), height)
    x1, y1 = min(max(x + w, 0), width), min(max(y + h, 0), height)
    return x0, y0, x1 - x0, y1 - y0


def crop(frame: Frame, x: int, y: int, w: int, h: int) -> Frame:
    """The w x h region at (x, y) as a frame of the same format, with FFmpeg's plane offsets.

    Chroma planes start at ``AV_CEIL_RSHIFT(x, log2_chroma_w)`` (and likewise for y) and have
    the chroma size of a w x h picture; a chroma window that runs past its plane (odd offsets at
    the right/bottom edge, where FFmpeg reads into the line padding) repeats the edge sample.
    """
    spec = lookup(frame.format)
    planes = []
    for pspec, plane in zip(spec.planes, frame.planes, strict=True):
        cx, cy = -((-x) >> pspec.log2_w), -((-y) >> pspec.log2_h)
        cw, ch = pspec.size(w, h)
        part = plane[cy : cy + ch, cx : cx + cw]
        if part.shape[:2] != (ch, cw):
            pad = [(0, ch - part.shape[0]), (0, cw - part.shape[1])] + [(0, 0)] * (part.ndim - 2)
            if part.size == 0:
                part = plane[min(cy, plane.shape[0] - 1) :, min(cx, plane.shape[1] - 1) :][:1, :1]
                pad = [(0, ch - 1), (0, cw - 1)] + [(0, 0)] * (part.ndim - 2)
            part = np.pad(part, pad, mode="edge")
        planes.append(np.ascontiguousarray(part))
    out = Frame.from_planes(planes, spec.name)
    out._color = frame._color_props()
    return out


def classify_fill(frame: Frame, box: tuple[int, int, int, int], spec: InputSpec) -> Callable[[np.ndarray], None]:
    """The engine's ``fill`` for one classify inference: the (clipped) box scaled to the model input."""
    x, y, w, h = box

    def fill(dst: np.ndarray) -> None:
        region = crop(frame, x, y, w, h)
        _store(_swscale(region, spec.width, spec.height, spec.pix_fmt), dst, spec)

    return fill


#: the narrowest canvas a text line is padded to for a recognizer with a dynamic width (PP-OCR's 320)
TEXT_MIN_WIDTH = 320
#: text canvases widen in steps of this, so that crops of similar lengths batch together
TEXT_WIDTH_STEP = 32


def text_spec(spec: InputSpec, dynamic_width: bool, w: int, h: int) -> tuple[InputSpec, int]:
    """A text recognizer's input for a w x h crop: (the canvas spec, the width the crop is scaled to).

    The crop keeps its aspect ratio at the model's height (PP-OCR's resize_norm_img); a dynamic
    width is the crop's, at least :data:`TEXT_MIN_WIDTH`, rounded up to :data:`TEXT_WIDTH_STEP`.
    """
    scaled = max(1, math.ceil(spec.height * w / max(h, 1)))
    width = spec.width
    if dynamic_width:
        width = max(TEXT_MIN_WIDTH, -(-scaled // TEXT_WIDTH_STEP) * TEXT_WIDTH_STEP)
    shape = (spec.height, width, spec.channels) if spec.nhwc else (spec.channels, spec.height, width)
    return replace(spec, width=width, shape=shape), min(scaled, width)


def text_fill(
    frame: Frame, box: tuple[int, int, int, int], spec: InputSpec, scaled: int
) -> Callable[[np.ndarray], None]:
    """The engine's ``fill`` for a text line: the box scaled to ``scaled`` x model height, left
    aligned, the rest of the canvas 0 in the model's own values (PP-OCR pads after normalising)."""
    x, y, w, h = box

    def fill(dst: np.ndarray) -> None:
        region = crop(frame, x, y, w, h)
        img = _swscale(region, scaled, spec.height, spec.pix_fmt)
        canvas = np.zeros((spec.height, spec.width, spec.channels), np.uint8)
        canvas[:, :scaled] = img
        _store(canvas, dst, spec)
        view = dst.reshape(spec.shape)
        if spec.nhwc:
            view[:, scaled:] = 0
        else:
            view[:, :, scaled:] = 0

    return fill


__all__ = [
    "INTERPOLATION",
    "LETTERBOX_FILL",
    "TEXT_MIN_WIDTH",
    "TEXT_WIDTH_STEP",
    "InputSpec",
    "classify_fill",
    "clip_box",
    "crop",
    "detect_fill",
    "detect_image",
    "geometry",
    "input_spec",
    "text_fill",
    "text_spec",
]
