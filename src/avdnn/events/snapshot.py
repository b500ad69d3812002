"""The best-scored view of an object, kept small and encoded as JPEG only when an event carries it.

The crop is copied out of the frame's planes (numpy slices of the box, widened by a margin and
aligned to the chroma subsampling) when the detector's score for the object improves; the JPEG
is made by libavcodec's ``mjpeg`` encoder (through PyAV) the first time an event needs it and
reused until a better view replaces it. A frame is never held: only the crop is.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from avdnn.errors import from_av_error
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import lookup

#: The crop is the box widened by this fraction of its size on each side (context around the object).
MARGIN = 0.1


@dataclass
class Snapshot:
    """A crop of one frame, with the score and time it was taken at."""

    frame: Frame
    score: float
    pts: int | None
    time: float
    _jpeg: bytes | None = None

    def jpeg(self) -> bytes:
        if self._jpeg is None:
            self._jpeg = encode_jpeg(self.frame)
        return self._jpeg

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "jpeg",
            "width": self.frame.width,
            "height": self.frame.height,
            "score": self.score,
            "pts": self.pts,
            "time": self.time,
            "data": base64.b64encode(self.jpeg()).decode("ascii"),
        }


def crop(frame: Frame, box: list[float] | np.ndarray, margin: float = MARGIN) -> Frame | None:
    """The box (x0, y0, x1, y1 in the frame's pixels), widened by ``margin``, as a new frame (a copy)."""
    spec = lookup(frame.format)
    x0, y0, x1, y1 = (float(v) for v in box)
    mx, my = (x1 - x0) * margin, (y1 - y0) * margin
    bw = 1 << max(p.log2_w for p in spec.planes)
    bh = 1 << max(p.log2_h for p in spec.planes)
    left = max(0, int(x0 - mx) // bw * bw)
    top = max(0, int(y0 - my) // bh * bh)
    right = min(frame.width // bw * bw, -(-int(np.ceil(x1 + mx)) // bw) * bw)
    bottom = min(frame.height // bh * bh, -(-int(np.ceil(y1 + my)) // bh) * bh)
    if right - left < bw or bottom - top < bh:
        return None
    planes = [
        np.ascontiguousarray(p[top >> ps.log2_h : bottom >> ps.log2_h, left >> ps.log2_w : right >> ps.log2_w])
        for p, ps in zip(frame.planes, spec.planes, strict=True)
    ]
    return Frame.from_planes(planes, frame.format)


def encode_jpeg(frame: Frame, quality: int = 4) -> bytes:
    """One JPEG picture of ``frame`` (libavcodec mjpeg, full-range 4:2:0; ``quality`` is its qscale)."""
    import av

    try:
        picture = frame.to_av().reformat(format="yuvj420p", width=frame.width // 2 * 2, height=frame.height // 2 * 2)
        codec: Any = av.CodecContext.create("mjpeg", "w")
        codec.width, codec.height = picture.width, picture.height
        codec.pix_fmt = "yuvj420p"
        codec.time_base = Fraction(1, 25)
        codec.options = {"qmin": str(quality), "qmax": str(quality)}
        picture.pts = 0
        packets = [*codec.encode(picture), *codec.encode(None)]
    except av.FFmpegError as exc:
        raise from_av_error(exc) from exc
    return b"".join(bytes(p) for p in packets)


__all__ = ["MARGIN", "Snapshot", "crop", "encode_jpeg"]
