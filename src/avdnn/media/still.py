"""Still pictures of frames: one JPEG per frame, for a live preview or a snapshot.

libavcodec's mjpeg encoder does the work (no Pillow, no per-pixel Python): the frame is
converted to full-range 4:2:0 (``yuvj420p``, what a baseline JPEG holds) through the kept
libswscale contexts, optionally scaled down to a maximum width, and encoded at a fixed
quality (ffmpeg's ``-q:v`` scale: 2 best, 31 worst). An encoder is made per size and reused
while the size stays; it is not thread-safe: one per thread (a preview viewer) or per call.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from avdnn.errors import InvalidArgumentError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.swscale import reformat

__all__ = ["JpegEncoder"]

#: ffmpeg's -q:v range for mjpeg
QUALITY_RANGE = (2, 31)
_TIME_BASE = Fraction(1, 25)


class JpegEncoder:
    """``JpegEncoder(quality=5, max_width=640).encode(frame) -> bytes`` (a complete JPEG file)."""

    def __init__(self, *, quality: int = 5, max_width: int | None = None) -> None:
        low, high = QUALITY_RANGE
        if not low <= quality <= high:
            raise InvalidArgumentError(f"JPEG quality {quality}: {low} (best) to {high}", option="q")
        if max_width is not None and max_width < 16:
            raise InvalidArgumentError(f"max width {max_width}: at least 16", option="width")
        self.quality = quality
        self.max_width = max_width
        self._codec: Any = None
        self._size: tuple[int, int] | None = None
        self._count = 0

    def _size_for(self, frame: Frame) -> tuple[int, int]:
        width, height = frame.width, frame.height
        if self.max_width is not None and width > self.max_width:
            height = max(2, round(height * self.max_width / width / 2) * 2)
            width = self.max_width - self.max_width % 2
        return width, height

    def _open(self, size: tuple[int, int]) -> Any:
        import av

        codec = av.CodecContext.create("mjpeg", "w")
        codec.width, codec.height = size
        codec.pix_fmt = "yuvj420p"
        codec.time_base = _TIME_BASE
        q = str(self.quality)
        codec.options = {"qmin": q, "qmax": q}
        codec.open()
        self._codec, self._size = codec, size
        return codec

    def encode(self, frame: Frame) -> bytes:
        """The frame as one JPEG picture."""
        import av

        size = self._size_for(frame)
        codec = self._codec if self._size == size else self._open(size)
        try:
            picture = reformat(frame.to_av(), width=size[0], height=size[1], format="yuvj420p")
            picture.pts, picture.time_base = self._count, _TIME_BASE  # its own clock: never rescaled to a repeat
            self._count += 1
            packets = codec.encode(picture)
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        return b"".join(bytes(p) for p in packets)
