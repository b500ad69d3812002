"""The streams that go around the DNN chain: copied packets and transcoded audio.

Audio, subtitle and data streams never enter the video chain. The demuxer that reads the
video hands their packets here, on its own thread, and each output stream takes one path:

* :class:`CopyPath` (``-c:a copy``, ``-c:s copy``...): timestamps shifted as the ffmpeg CLI
  shifts them (the input's start time, ``-itsoffset``), packets straight to the muxer;
* :class:`~.audiopath.AudioEncodePath`: decode, ffmpeg's audio timestamp handling, a
  libavfilter graph built once (``-af`` then the ``aformat`` ffmpeg appends for the encoder),
  the encoder's fixed frame size, encode;
* :class:`~.subpath.SubtitleEncodePath`: decode and encode subtitles (SubRip to ASS...).

Each hands packets to the output's :class:`~.interleave.Interleaver`, so a slow model delays
them with the video instead of desynchronising them, and they never buffer more than the
video pipeline's depth (plus libavformat's interleave bound). Each path counts what it read,
wrote, dropped and failed, by cause (:class:`StreamStats`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from avdnn.errors import from_av_error
from avdnn.media.timing import rescale

if TYPE_CHECKING:
    from avdnn.media.output.sink import Sink


AV_CODEC_FLAG_BITEXACT = 0x800000
_US = Fraction(1, 1_000_000)
AV_CODEC_CAP_VARIABLE_FRAME_SIZE = 1 << 16


@dataclass
class StreamStats:
    """Packets and frames of one stream that does not go through the chain."""

    label: str
    media_type: str
    codec: str
    packets_read: int = 0
    frames_decoded: int = 0
    packets_written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)

    def drop(self, cause: str, n: int = 1) -> None:
        self.dropped[cause] = self.dropped.get(cause, 0) + n


def rescale_delta(
    in_tb: Fraction, in_ts: int, fs_tb: Fraction, duration: int, last: list[int | None], out_tb: Fraction
) -> int:
    """libavutil's ``av_rescale_delta``: rescale keeping sample-accurate continuity (``last[0]``)."""
    if last[0] is not None and duration and in_tb > out_tb:
        a = rescale(2 * in_ts - 1, in_tb, fs_tb, "down") >> 1
        b = (rescale(2 * in_ts + 1, in_tb, fs_tb, "up") + 1) >> 1
        if 2 * a - b <= last[0] <= 2 * b - a:
            this = min(max(last[0], a), b)
            last[0] = this + duration
            return rescale(this, fs_tb, out_tb)
    last[0] = rescale(in_ts, in_tb, fs_tb) + duration
    return rescale(in_ts, in_tb, out_tb)


#: av_channel_layout_default: the first layout of libavutil's table with that many channels.
_DEFAULT_LAYOUTS = {
    1: "mono",
    2: "stereo",
    3: "2.1",
    4: "4.0",
    5: "5.0",
    6: "5.1",
    7: "6.1",
    8: "7.1",
    10: "5.1.4",
    12: "7.1.4",
    16: "hexadecagonal",
    24: "22.2",
}


def default_layout(channels: int) -> str:
    """The layout ffmpeg's ``-ac N`` asks for (an unnamed one, ``Nc``, past the table)."""
    return _DEFAULT_LAYOUTS.get(channels, f"{channels}c")


def open_hash_encoder(codec_name: str, configure: Callable[[Any], None]) -> Any:
    """An encoder for a hash muxer's stream (no container to add it to), configured and open."""
    import av

    enc = av.CodecContext.create(codec_name, "w")
    configure(enc)
    try:
        enc.open(strict=False)
    except (av.FFmpegError, ValueError) as exc:
        raise from_av_error(exc) from exc
    return enc


class SidePath:
    """One output stream fed from one input stream, around the chain."""

    media_type: str
    codec_name: str
    #: The time base of the packets this path hands to the output.
    time_base: Fraction

    def __init__(
        self,
        stream: Any,
        out_index: int,
        *,
        offset: Fraction = Fraction(0),
        label: str = "",
        input_trim: tuple[int | None, int | None] = (None, None),
    ) -> None:
        self.stream = stream
        #: The input's own trim (-ss with accurate seek, -t/-to), in microseconds: (start, duration).
        self.input_trim = input_trim
        self.in_index: int = stream.index
        #: The input file the stream comes from (its demuxer feeds the path).
        self.input_file = 0
        self.out_index = out_index
        #: Seconds added to every timestamp (minus the input start time, plus -itsoffset).
        self.offset = offset
        self.sink: Sink | None = None
        self.stats = StreamStats(label or f"{stream.index}:{stream.type}", stream.type, "copy")
        self.ended = False

    def attach(self, sink: Sink) -> None:
        self.sink = sink

    def add_output(self, container: Any) -> Any:
        """Create this path's stream in the output container (None: a hash muxer)."""
        raise NotImplementedError

    def hash_stream(self) -> Any:
        raise NotImplementedError

    def on_ready(self) -> None:
        """The output's header is written: anything held may now be encoded."""

    def on_video(self) -> None:
        """The video stream advanced or ended (only paths that wait on it care)."""

    #: Whether this path decodes audio (ffmpeg then takes a -stream_loop round's end from the decoder).
    decodes_audio = False

    def loop(self) -> tuple[int, Fraction] | None:
        """-stream_loop rewinds the input: reset for the next round; the end (ts, tb) it decoded, if any."""
        return None

    def packet(self, packet: Any) -> None:
        raise NotImplementedError

    def end(self) -> None:
        raise NotImplementedError


class CopyPath(SidePath):
    """Stream copy: the input packets, timestamps shifted as ffmpeg's streamcopy shifts them."""

    def __init__(self, stream: Any, out_index: int, **kw: Any) -> None:
        super().__init__(stream, out_index, **kw)
        self.media_type = stream.type
        ctx = stream.codec_context
        # the codec's name (avcodec_get_name), not its decoder's: subrip, not srt
        self.codec_name = ctx.codec.canonical_name if ctx is not None else "none"
        self.time_base = Fraction(stream.time_base)
        self._shift = rescale(1, self.offset, self.time_base) if self.offset else 0
        self._started = False
        self._copied = 0
        self._end_cause = "the stream ended"

    def add_output(self, container: Any) -> Any:
        return container.add_stream_from_template(self.stream)

    def hash_stream(self) -> Any:
        from avdnn.media.output.hashmux import HashStream

        ctx = self.stream.codec_context
        extra = bytes(ctx.extradata) if ctx is not None and ctx.extradata else None
        if self.media_type == "audio":
            return HashStream(
                "audio",
                self.codec_name,
                self.time_base,
                sample_rate=ctx.sample_rate,
                layout=ctx.layout.name,
                extradata=extra,
            )
        if self.media_type == "video":
            sar = self.stream.sample_aspect_ratio
            return HashStream(
                "video",
                self.codec_name,
                self.time_base,
                width=ctx.width,
                height=ctx.height,
                sar=Fraction(sar) if sar else None,
                extradata=extra,
            )
        return HashStream(self.media_type, self.codec_name, self.time_base, extradata=extra)

    def packet(self, packet: Any) -> None:
        """ffmpeg's of_streamcopy: output -ss/-t on the estimated dts, keyframe start, shifts."""
        assert self.sink is not None
        if packet.dts is None and packet.pts is None and not packet.size:
            return  # the demuxer's flush packet
        self.stats.packets_read += 1
        if self.ended:
            self.stats.drop(self._end_cause)
            return
        tb = self.time_base
        if self._shift:
            if packet.pts is not None:
                packet.pts += self._shift
            if packet.dts is not None:
                packet.dts += self._shift
        ts = packet.dts if packet.dts is not None else packet.pts
        dts_us = rescale(ts, tb, _US) if ts is not None else None
        in_end = self.input_trim[1]
        if in_end is not None and dts_us is not None and dts_us >= in_end:
            # ffmpeg's demuxer: a stream of an input with -t/-to ends at that time
            self._end_cause = "input -t/-to reached"
            self.stats.drop(self._end_cause)
            self.end()
            return
        start = self.sink.start_time
        rec = self.sink.recording_time
        if rec is not None and dts_us is not None and dts_us >= rec + (start or 0):
            self._end_cause = "output -t/-to reached"
            self.stats.drop(self._end_cause)
            self.end()
            return
        if not self._started:
            if not packet.is_keyframe:
                self.stats.drop("before the first keyframe (ffmpeg copies from a keyframe)")
                return
            # (-copypriorss stays at its default, -1: no check against ts_copy_start)
            if start is not None and dts_us is not None and dts_us < start:
                self.stats.drop("before output -ss")
                return
            self._started = True
        offset = rescale(start or 0, _US, tb)
        if packet.dts is not None and self.media_type == "audio":
            packet.pts = packet.dts - offset  # of_streamcopy: an audio packet's pts follows its dts
        elif packet.pts is not None:
            packet.pts -= offset
        if packet.dts is not None:
            packet.dts -= offset
        limit = self.sink.max_packets if self.media_type == "video" else None  # -frames:v on a copied video
        if limit is not None and self._copied >= limit:
            self.stats.drop("output frame limit reached")
            return
        self.sink.push_side(self, packet, self.time_base)
        self._copied += 1
        if limit is not None and self._copied >= limit:
            # as an encoded video at its limit: the other streams end where this packet ends
            ts = packet.dts if packet.dts is not None else packet.pts
            if ts is not None:
                self.sink.finish_side_at(self, (ts + (packet.duration or 0)) * self.time_base)
            self._end_cause = "output frame limit reached"
            self.end()

    def end(self) -> None:
        if not self.ended and self.sink is not None:
            self.ended = True
            self.sink.end_side(self)
