"""Pixel formats avdnn can see as numpy planes.

A frame of any format PyAV knows can travel through a chain; the formats listed here are
the ones whose planes avdnn exposes as numpy arrays (the ten FFmpeg's DNN filters accept,
plus common packed RGB/alpha and high-depth gray ones). The table says, per plane, how many
interleaved channels it has and how much it is subsampled, which is all numpy needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from avdnn.errors import InvalidArgumentError


@dataclass(frozen=True)
class PlaneSpec:
    """One plane: interleaved channels and log2 subsampling of width and height."""

    channels: int
    log2_w: int = 0
    log2_h: int = 0

    def size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) of this plane for a picture of width x height (FFmpeg's ceil shift)."""
        return (-((-width) >> self.log2_w), -((-height) >> self.log2_h))


@dataclass(frozen=True)
class PixFmt:
    """A pixel format by its FFmpeg name, with its sample type and planes."""

    name: str
    dtype: np.dtype
    planes: tuple[PlaneSpec, ...]


_U8 = np.dtype(np.uint8)
_FULL = PlaneSpec(1)


def _yuv(log2_w: int, log2_h: int) -> tuple[PlaneSpec, ...]:
    return (_FULL, PlaneSpec(1, log2_w, log2_h), PlaneSpec(1, log2_w, log2_h))


PIX_FMTS: dict[str, PixFmt] = {
    f.name: f
    for f in (
        PixFmt("rgb24", _U8, (PlaneSpec(3),)),
        PixFmt("bgr24", _U8, (PlaneSpec(3),)),
        *(PixFmt(n, _U8, (PlaneSpec(4),)) for n in ("rgba", "bgra", "argb", "abgr", "rgb0", "bgr0", "0rgb", "0bgr")),
        PixFmt("gray", _U8, (_FULL,)),
        PixFmt("gray16le", np.dtype("<u2"), (_FULL,)),
        PixFmt("grayf32le", np.dtype("<f4"), (_FULL,)),
        PixFmt("yuv420p", _U8, _yuv(1, 1)),
        PixFmt("yuvj420p", _U8, _yuv(1, 1)),
        PixFmt("yuv422p", _U8, _yuv(1, 0)),
        PixFmt("yuvj422p", _U8, _yuv(1, 0)),
        PixFmt("yuv444p", _U8, _yuv(0, 0)),
        PixFmt("yuvj444p", _U8, _yuv(0, 0)),
        PixFmt("yuv440p", _U8, _yuv(0, 1)),
        PixFmt("yuv410p", _U8, _yuv(2, 2)),
        PixFmt("yuv411p", _U8, _yuv(2, 0)),
        PixFmt("gbrp", _U8, _yuv(0, 0)),
        PixFmt("yuva420p", _U8, (*_yuv(1, 1), _FULL)),
        PixFmt("nv12", _U8, (_FULL, PlaneSpec(2, 1, 1))),
        PixFmt("nv21", _U8, (_FULL, PlaneSpec(2, 1, 1))),
    )
}

#: Names FFmpeg accepts for the same format (its NE aliases and short names).
ALIASES: dict[str, str] = {"gray8": "gray", "grayf32": "grayf32le", "gray16": "gray16le", "y8": "gray"}

#: The formats FFmpeg's DNN filters accept (dnn_processing without cuda).
DNN_PIX_FMTS: tuple[str, ...] = (
    "rgb24",
    "bgr24",
    "gray",
    "grayf32le",
    "yuv420p",
    "yuv422p",
    "yuv444p",
    "yuv410p",
    "yuv411p",
    "nv12",
)


def canonical(name: str) -> str:
    """The FFmpeg name PyAV reports for ``name`` (``grayf32`` -> ``grayf32le``)."""
    return ALIASES.get(name, name)


def lookup(name: str) -> PixFmt:
    """The spec of a format whose planes avdnn can expose, or InvalidArgumentError."""
    spec = PIX_FMTS.get(canonical(name))
    if spec is None:
        raise InvalidArgumentError(
            f"pixel format '{name}' has no numpy view in avdnn; convert with format= first "
            f"(supported: {', '.join(sorted(PIX_FMTS))})"
        )
    return spec


def is_known(name: str) -> bool:
    """Whether libavutil knows a pixel format of this name."""
    import av

    try:
        av.VideoFormat(canonical(name))
    except (ValueError, av.FFmpegError):
        return False
    return True
