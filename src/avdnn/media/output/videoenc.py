"""An output's video encoder, as the ffmpeg tool decides and feeds it.

What ffmpeg decides (the encoder itself is the muxer's choice, :mod:`.muxer`): the ``-fps_mode
auto`` of a muxer (ffmpeg_mux_init.c), the pixel format the encoder takes, the encoder time
base, and the encoder it opens (ffmpeg_enc.c's enc_open: threads, time base, rate, aspect ratio, colour,
field order, the display matrix). How it is fed (:class:`VideoEncoder`): through the frame-rate
sync (:mod:`.vsync`), stopping at ``-frames:v`` and the output's ``-t``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

from avdnn.errors import AVERROR_ENCODER_NOT_FOUND, AvdnnError, NotFoundError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.libav.codecs import best_pix_fmt, encoder_color_ranges
from avdnn.media.output.hashmux import HashStream
from avdnn.media.output.vsync import VideoSync

__all__ = [
    "AVFMT_NOTIMESTAMPS",
    "AVFMT_VARIABLE_FPS",
    "VideoEncoder",
    "auto_fps_mode",
    "open_video_encoder",
]

AVFMT_NOTIMESTAMPS = 0x80
AVFMT_VARIABLE_FPS = 0x400
AV_CODEC_FLAG_BITEXACT = 0x800000


def auto_fps_mode(format_name: str, flags: int, rate_given: bool) -> str:
    """ffmpeg's -fps_mode auto for a muxer (ffmpeg_mux_init.c); -r asks for a constant rate."""
    if format_name == "avi":
        mode = "vfr"
    elif flags & AVFMT_VARIABLE_FPS:
        mode = "passthrough" if flags & AVFMT_NOTIMESTAMPS else "vfr"
    else:
        mode = "vscfr"
    if rate_given and mode == "vfr":
        mode = "vscfr"
    return mode


def open_video_encoder(
    container: Any,
    codec_name: str,
    canonical_name: str,
    frame: Frame,
    rate: Fraction,
    tb: Fraction,
    *,
    options: dict[str, str],
    bitexact: bool,
    display_matrix: Callable[[], Sequence[int] | None] | None,
) -> tuple[Any, Any]:
    """The output's video encoder, opened for its first frame: (what encodes, the output stream).

    With a container both are its new stream; for a hash muxer (no container) a bare codec
    context and the :class:`HashStream` the hash header describes.
    """
    import av

    if container is not None:
        stream = container.add_stream(codec_name, rate=rate, options=options)
        enc = stream.codec_context
    else:
        stream = None
        enc = av.CodecContext.create(codec_name, "w")
        enc.options = dict(options)
    enc.width, enc.height, enc.pix_fmt = frame.width, frame.height, frame.format
    enc.thread_type, enc.thread_count = "AUTO", 0  # ffmpeg's defaults (PyAV's are slice threads)
    enc.time_base = tb
    enc.framerate = rate
    if frame.sample_aspect_ratio:
        enc.sample_aspect_ratio = frame.sample_aspect_ratio
    if bitexact:
        enc.flags |= AV_CODEC_FLAG_BITEXACT
    color = frame._color_props()
    if color is not None:
        enc.color_range, enc.colorspace, enc.color_primaries, enc.color_trc = color
    # ffmpeg's enc_open: the field order from the first frame (progressive unless interlaced)
    src = frame._av
    if src is not None and src.interlaced_frame:
        # AV_FIELD_TT / AV_FIELD_BB (PyAV 18 does not expose top_field_first: top first, the common case)
        enc.field_order = 2 if getattr(src, "top_field_first", True) else 3
    else:
        enc.field_order = 1  # AV_FIELD_PROGRESSIVE
    if stream is not None:
        matrix = display_matrix() if display_matrix is not None else None
        if matrix is not None:
            stream.set_display_matrix(list(matrix))
        enc.open(strict=False)
        return stream, stream
    enc.open()
    hashed = HashStream(
        "video",
        canonical_name,
        tb,
        width=frame.width,
        height=frame.height,
        sar=frame.sample_aspect_ratio,
        extradata=enc.extradata or None,
    )
    return enc, hashed


class VideoEncoder:
    """One output's video encoder: chosen at once, opened on the first frame, fed through the sync.

    ``codec_name`` is ``-c:v`` (or the muxer's default); an unknown one is ffmpeg's "Unknown
    encoder" (AVERROR_ENCODER_NOT_FOUND: exit 8). ``mux(packet, tb)`` takes each packet;
    ``progress(end, at_limit)`` hears where each encoded frame ends (s) and whether it was the
    last ``max_packets`` allows. ``fill_durations``:
    the muxer (a hash muxer) needs each packet's duration, as libavformat's muxing fills it.
    Counters: ``frames_received``, ``frames_past_time`` (past the output's -t), ``packets_encoded``
    (duplicates included: what -frames:v counts).
    """

    def __init__(
        self,
        codec_name: str,
        *,
        name: str,
        pix_fmt: str | None,
        rate: Fraction | None,
        fps_mode: str,
        options: dict[str, str],
        bitexact: bool,
        start_time: int | None,
        recording_time: int | None,
        fill_durations: bool,
        mux: Callable[[Any, Fraction], None],
        progress: Callable[[Fraction, bool], None],
    ) -> None:
        import av

        self.codec_name = codec_name
        self.name = name
        try:
            self.codec = av.Codec(codec_name, "w")
        except (av.FFmpegError, ValueError) as exc:
            raise NotFoundError(f"Unknown encoder '{codec_name}'", code=AVERROR_ENCODER_NOT_FOUND, file=name) from exc
        self.pix_fmt = self._closest_pix_fmt(pix_fmt)
        self.rate = rate
        self.fps_mode = fps_mode
        self.options = options
        self.bitexact = bitexact
        self._start_time = start_time
        self._recording_time = recording_time
        self._fill = fill_durations
        self._mux_packet = mux
        self._progress = progress
        self.frames_received = 0
        self.frames_past_time = 0
        self.packets_encoded = 0
        #: -frames:v: stop handing frames to the encoder after this many.
        self.max_packets: int | None = None
        self._enc: Any = None
        self.sync: VideoSync[Any] | None = None
        self._durations: dict[int, int] = {}
        self._rate_known = True  # the encoder time base is 1/rate (set when it opens)

    # -- choices --------------------------------------------------------------------------

    def _closest_pix_fmt(self, pix_fmt: str | None) -> str | None:
        """A -pix_fmt the encoder does not take becomes its closest one, with ffmpeg's warning
        (moviepy asks libx264 for yuva420p)."""
        names = [f.name for f in self.codec.video_formats or ()]
        if pix_fmt is None or not names or pix_fmt in names:
            return pix_fmt
        best = best_pix_fmt(names, pix_fmt)
        logging.getLogger("avdnn").warning(
            "Incompatible pixel format '%s' for codec '%s', auto-selecting format '%s'", pix_fmt, self.codec_name, best
        )
        return best

    def accepted_pix_fmts(self) -> list[str] | None:
        """Pixel formats the encoder takes (the ffmpeg CLI appends format= with these); None: any."""
        if self.pix_fmt:
            return [self.pix_fmt]
        formats = self.codec.video_formats
        return None if not formats else [f.name for f in formats]

    def accepted_color_ranges(self) -> list[str] | None:
        """Colour ranges the encoder takes ("tv", "pc"), as ffmpeg adds them to its format=."""
        try:
            return encoder_color_ranges(self.codec_name)
        except AvdnnError:
            return None

    def timing(self, frame: Frame, rate: Fraction | None) -> tuple[Fraction, Fraction]:
        """(frame rate, encoder time base) for the first frame, the chain's rate ``rate``."""
        known = self.rate or rate
        out_rate = Fraction(known or 25)
        tb = 1 / out_rate
        self._rate_known = bool(known)
        if not known and self.fps_mode in ("vfr", "passthrough") and frame.time_base:
            tb = Fraction(frame.time_base)  # ffmpeg's choose_out_timebase: no rate known, the filter's time base
        return out_rate, tb

    # -- the encoder ----------------------------------------------------------------------

    def open(
        self,
        container: Any,
        frame: Frame,
        rate: Fraction,
        tb: Fraction,
        display_matrix: Callable[[], Sequence[int] | None] | None,
    ) -> Any:
        """Open the encoder (its stream in ``container``; None: a hash muxer's): the output stream."""
        self._enc, out = open_video_encoder(
            container,
            self.codec_name,
            self.codec.canonical_name,
            frame,
            rate,
            tb,
            options=self.options,
            bitexact=self.bitexact,
            display_matrix=display_matrix,
        )
        return out

    def begin(self, tb: Fraction) -> None:
        """The output is open: frames may come (time base ``tb``)."""
        self.sync = VideoSync(self.fps_mode, tb, self._start_time or 0)

    @property
    def started(self) -> bool:
        return self.sync is not None

    def write(self, frame: Frame) -> None:
        assert self.sync is not None
        self.frames_received += 1
        self._encode(self.sync.push(frame, frame.pts, frame.time_base, frame.duration), frame.pts)

    def flush(self) -> None:
        """What the sync and the encoder still hold."""
        if self.sync is not None:
            self._encode(self.sync.flush(), None)
            self._mux(self._enc.encode(None))

    def _encode(self, items: Iterable[tuple[Frame, int | None, int]], pts: int | None) -> None:
        import av

        try:
            for src, out_pts, duration in items:
                if self.max_packets is not None and self.packets_encoded >= self.max_packets:
                    break
                if self._past_recording_time(out_pts):
                    self.frames_past_time += 1
                    continue
                av_frame = src.to_av()
                av_frame.pts = out_pts
                av_frame.time_base = self.sync.tb if self.sync else None
                av_frame.duration = duration
                av_frame.pict_type = 0  # the encoder decides (a decoded I frame must not force one)
                if self._fill:  # the hash muxers fill a packet's missing duration from it
                    self._durations[out_pts] = duration  # type: ignore[index]
                self._mux(self._enc.encode(av_frame))
                self.packets_encoded += 1
                if self.sync is not None and out_pts is not None:
                    at_limit = self.max_packets is not None and self.packets_encoded >= self.max_packets
                    self._progress((out_pts + (duration or 1)) * self.sync.tb, at_limit)
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name).with_context(pts=pts) from exc

    def _mux(self, packets: Any) -> None:
        assert self.sync is not None
        tb = self.sync.tb
        for packet in packets:
            if self._fill:
                # libavformat's muxing (ff_compute_frame_duration) fills a missing (zero) duration with
                # one frame of the stream's rate, 1 in the encoder time base 1/rate; with no rate known,
                # one tick of a time base coarser than 1/1000 (nothing for a finer one)
                tick = self._rate_known or tb.numerator * 1000 > tb.denominator
                packet.duration = packet.duration or self._durations.pop(packet.pts, 0) or int(tick)
                self._durations.pop(packet.pts, None)
            self._mux_packet(packet, tb)

    def _past_recording_time(self, out_pts: int | None) -> bool:
        """ffmpeg's check_recording_time at the encoder: the output's -t ends the stream there."""
        if self._recording_time is None or out_pts is None or self.sync is None:
            return False
        return out_pts * self.sync.tb >= Fraction(self._recording_time, 1_000_000)

    @property
    def frames_dropped(self) -> int:
        """Frames never encoded: dropped by the video sync, or past the output's -t."""
        return (self.sync.dropped if self.sync else 0) + self.frames_past_time

    @property
    def frames_duplicated(self) -> int:
        return self.sync.duplicated if self.sync else 0
