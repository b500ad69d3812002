"""The frame type every avdnn stage passes along.

A :class:`Frame` is a picture plus its timing and side data. It wraps a PyAV frame without
copying when it came from one: ``planes`` are strided numpy views of PyAV's buffers, so a
frame that only passes through costs nothing. A frame built from numpy arrays is turned into
a PyAV frame only when a libavfilter segment or an encoder needs one. Copies happen where a
buffer changes hands across threads (the DNN engine) and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from avdnn.errors import InvalidArgumentError
from avdnn.media.pixfmt import PixFmt, canonical, lookup
from avdnn.media.tags import frame_tags

if TYPE_CHECKING:
    import av


@dataclass
class SideData:
    """What travels with a frame besides pixels.

    ``detections`` holds the detection-bbox record (FFmpeg's AV_FRAME_DATA_DETECTION_BBOXES);
    ``metadata`` is FFmpeg's frame metadata dictionary. It rides through libavfilter segments
    on the AVFrame's opaque_ref, which libavfilter copies with the frame properties.
    """

    detections: Any = None
    metadata: dict[str, str] = field(default_factory=dict)
    #: time.monotonic() when the frame left the input (the run's end-to-end latency starts there).
    arrival: float | None = None
    #: Zone, line and event state (avdnn.events.FrameAnalytics); stages copy it before changing it.
    analytics: Any = None

    def copy(self) -> SideData:
        return SideData(self.detections, dict(self.metadata), self.arrival, self.analytics)


class Frame:
    """One video frame: numpy planes, pixel format, size, pts, time base and side data."""

    __slots__ = (
        "_av",
        "_color",
        "_planes",
        "duration",
        "format",
        "height",
        "pts",
        "sample_aspect_ratio",
        "side_data",
        "time_base",
        "width",
    )

    def __init__(
        self,
        planes: list[np.ndarray] | None,
        format: str,  # noqa: A002 - FFmpeg's noun
        width: int,
        height: int,
        *,
        pts: int | None = None,
        time_base: Fraction | None = None,
        duration: int | None = None,
        sample_aspect_ratio: Fraction | None = None,
        side_data: SideData | None = None,
        av_frame: av.VideoFrame | None = None,
    ) -> None:
        self._planes = planes
        self._av = av_frame
        self.format = canonical(format)
        self.width = width
        self.height = height
        self.pts = pts
        self.time_base = time_base
        self.duration = duration
        self.sample_aspect_ratio = sample_aspect_ratio
        self.side_data = side_data if side_data is not None else SideData()
        self._color: tuple[Any, Any, Any, Any] | None = None

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_av(cls, frame: av.VideoFrame) -> Frame:
        """Wrap a PyAV frame without copying; its side data comes back from opaque_ref."""
        side = frame.opaque if isinstance(frame.opaque, SideData) else None
        tb = frame.time_base
        out = cls(
            None,
            frame.format.name,
            frame.width,
            frame.height,
            pts=frame.pts,
            time_base=Fraction(tb) if tb is not None else None,
            duration=frame.duration or None,
            side_data=side.copy() if side is not None else None,
            av_frame=frame,
        )
        tags = frame_tags(frame)  # a decoder's (EXIF) tags may not be UTF-8
        if tags:
            out.side_data.metadata.update(tags)
        return out

    @classmethod
    def from_ndarray(cls, array: np.ndarray, format: str = "rgb24", **props: Any) -> Frame:  # noqa: A002
        """A frame from one array: HxWxC for packed formats, HxW for gray ones.

        Planar formats need :meth:`from_planes`. The array is used as is (no copy).
        """
        spec = lookup(format)
        if len(spec.planes) != 1:
            raise InvalidArgumentError(f"from_ndarray takes one-plane formats; use from_planes for {format}")
        return cls.from_planes([array], format, **props)

    @classmethod
    def from_planes(cls, planes: list[np.ndarray], format: str, **props: Any) -> Frame:  # noqa: A002
        """A frame from its planes; shapes and dtypes are checked against the format."""
        spec = lookup(format)
        if len(planes) != len(spec.planes):
            raise InvalidArgumentError(f"{spec.name} has {len(spec.planes)} planes, got {len(planes)}")
        height, width = planes[0].shape[:2]
        _check_planes(spec, planes, width, height)
        return cls(list(planes), spec.name, width, height, **props)

    def with_planes(self, planes: list[np.ndarray], format: str | None = None) -> Frame:  # noqa: A002
        """A new frame with other pixels (size may change) and this frame's timing and side data."""
        out = Frame.from_planes(
            planes,
            format or self.format,
            pts=self.pts,
            time_base=self.time_base,
            duration=self.duration,
            sample_aspect_ratio=self.sample_aspect_ratio,
            side_data=self.side_data.copy(),
        )
        out._color = self._color_props()
        return out

    def with_av(self, frame: av.VideoFrame) -> Frame:
        """A new frame wrapping ``frame`` (other pixels, size or format) with this frame's
        timing, side data and colour properties: pixels written straight into a PyAV frame
        leave with no further copy (:meth:`to_av` hands ``frame`` itself on)."""
        color = self._color_props()
        if color is not None:
            frame.color_range, frame.colorspace, frame.color_primaries, frame.color_trc = color
        return Frame(
            None,
            frame.format.name,
            frame.width,
            frame.height,
            pts=self.pts,
            time_base=self.time_base,
            duration=self.duration,
            sample_aspect_ratio=self.sample_aspect_ratio,
            side_data=self.side_data.copy(),
            av_frame=frame,
        )

    # -- pixels ---------------------------------------------------------------------------

    @property
    def pix_fmt(self) -> PixFmt:
        return lookup(self.format)

    @property
    def planes(self) -> list[np.ndarray]:
        """Per-plane numpy arrays: (h, w) for one-channel planes, (h, w, c) for packed ones.

        Views into the PyAV buffers when the frame came from PyAV (no copy).
        """
        if self._planes is None:
            self._planes = _av_planes(self._av, lookup(self.format))  # type: ignore[arg-type]
        return self._planes

    def to_ndarray(self) -> np.ndarray:
        """The picture as one array for one-plane formats (a view, not a copy)."""
        planes = self.planes
        if len(planes) != 1:
            raise InvalidArgumentError(f"{self.format} is planar; use .planes")
        return planes[0]

    def to_av(self) -> av.VideoFrame:
        """A PyAV frame with these pixels, timing and side data (built once, then reused)."""
        import av

        if self._av is None:
            frame = av.VideoFrame(self.width, self.height, self.format)
            spec = lookup(self.format)
            for dst, src in zip(_av_planes(frame, spec), self.planes, strict=True):
                dst[...] = src
            if self._color is not None:
                frame.color_range, frame.colorspace, frame.color_primaries, frame.color_trc = self._color
            self._av = frame
        frame = self._av
        frame.pts = self.pts
        if self.time_base is not None:
            frame.time_base = self.time_base
        if self.duration is not None:
            frame.duration = self.duration
        frame.opaque = self.side_data
        return frame

    def _color_props(self) -> tuple[Any, Any, Any, Any] | None:
        if self._av is not None:
            f = self._av
            return (f.color_range, f.colorspace, f.color_primaries, f.color_trc)
        return self._color

    def buffer_args(self, frame_rate: Fraction | None = None) -> str:
        """Arguments of a libavfilter ``buffer`` source for frames like this one.

        Colour range and space go in too, as ffmpeg sets them, so the buffer does not see a
        property change (and warn) on the first frame.
        """
        tb = self.time_base or Fraction(1, 25)
        sar = self.sample_aspect_ratio or Fraction(0, 1)
        args = (
            f"video_size={self.width}x{self.height}:pix_fmt={self.format}"
            f":time_base={tb.numerator}/{tb.denominator}:pixel_aspect={sar.numerator}/{sar.denominator}"
        )
        if frame_rate:
            args += f":frame_rate={frame_rate.numerator}/{frame_rate.denominator}"
        color = self._color_props()
        if color is not None:
            args += f":range={int(color[0])}:colorspace={int(color[1])}"
        return args

    # -- timing ---------------------------------------------------------------------------

    @property
    def time(self) -> float | None:
        """Presentation time in seconds, or None without pts/time base."""
        if self.pts is None or self.time_base is None:
            return None
        return float(self.pts * self.time_base)

    @property
    def detections(self) -> Any:
        return self.side_data.detections

    def __repr__(self) -> str:
        return f"<avdnn.Frame {self.width}x{self.height} {self.format} pts={self.pts} time_base={self.time_base}>"


def _check_planes(spec: PixFmt, planes: list[np.ndarray], width: int, height: int) -> None:
    for i, (plane, pspec) in enumerate(zip(planes, spec.planes, strict=True)):
        w, h = pspec.size(width, height)
        want = (h, w) if pspec.channels == 1 else (h, w, pspec.channels)
        if plane.shape != want:
            raise InvalidArgumentError(
                f"{spec.name} plane {i} of a {width}x{height} frame must have shape {want}, got {plane.shape}"
            )
        if plane.dtype != spec.dtype:
            raise InvalidArgumentError(f"{spec.name} plane {i} must be {spec.dtype}, got {plane.dtype}")


def av_planes(frame: av.VideoFrame) -> list[np.ndarray]:
    """Writable numpy views of a PyAV frame's planes, shaped as :attr:`Frame.planes` (no copy)."""
    return _av_planes(frame, lookup(frame.format.name))


def _av_planes(frame: av.VideoFrame, spec: PixFmt) -> list[np.ndarray]:
    """Strided numpy views of a PyAV frame's planes (line padding excluded, no copy)."""
    out = []
    itemsize = spec.dtype.itemsize
    for plane, pspec in zip(frame.planes, spec.planes, strict=True):
        w, h = pspec.size(frame.width, frame.height)
        raw = np.frombuffer(cast(Any, plane), dtype=np.uint8)  # a plane is a buffer; PyAV's stubs do not say so
        rows = raw[: plane.line_size * h].reshape(h, plane.line_size)
        row_bytes = w * pspec.channels * itemsize
        arr = rows[:, :row_bytes].view(spec.dtype)
        out.append(arr.reshape(h, w) if pspec.channels == 1 else arr.reshape(h, w, pspec.channels))
    return out
