"""The streams that go around the DNN chain: copied packets and transcoded audio.

Audio, subtitle and data streams never enter the video chain. The demuxer that reads the
video hands their packets here, on its own thread, and each output stream takes one path:

* :class:`CopyPath` (``-c:a copy``, ``-c:s copy``...): timestamps shifted as the ffmpeg CLI
  shifts them (the input's start time, ``-itsoffset``), packets straight to the muxer;
* :class:`AudioEncodePath`: decode, ffmpeg's audio timestamp handling (``audio_ts_process``),
  a libavfilter graph built once (``-af`` then the ``aformat`` that ffmpeg appends for the
  encoder: its sample formats, ``-ar``, ``-ac``), the encoder's fixed frame size, encode.

Both hand packets to the output's :class:`~.interleave.Interleaver`, so a slow model delays
them with the video instead of desynchronising them, and they never buffer more than the
video pipeline's depth (plus libavformat's interleave bound). Each path counts what it read,
wrote, dropped and failed, by cause (:class:`StreamStats`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, from_av_error
from .timing import rescale

if TYPE_CHECKING:
    from .sink import Sink


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


def rescale_delta(in_tb: Fraction, in_ts: int, fs_tb: Fraction, duration: int, last: list[int | None],
                  out_tb: Fraction) -> int:
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
_DEFAULT_LAYOUTS = {1: "mono", 2: "stereo", 3: "2.1", 4: "4.0", 5: "5.0", 6: "5.1", 7: "6.1", 8: "7.1",
                    10: "5.1.4", 12: "7.1.4", 16: "hexadecagonal", 24: "22.2"}


def default_layout(channels: int) -> str:
    """The layout ffmpeg's ``-ac N`` asks for (an unnamed one, ``Nc``, past the table)."""
    return _DEFAULT_LAYOUTS.get(channels, f"{channels}c")


class SidePath:
    """One output stream fed from one input stream, around the chain."""

    media_type: str
    codec_name: str
    #: The time base of the packets this path hands to the output.
    time_base: Fraction

    def __init__(self, stream: Any, out_index: int, *, offset: Fraction = Fraction(0), label: str = "",
                 input_trim: tuple[int | None, int | None] = (None, None)) -> None:
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
        from .hashmux import HashStream

        ctx = self.stream.codec_context
        extra = bytes(ctx.extradata) if ctx is not None and ctx.extradata else None
        if self.media_type == "audio":
            return HashStream("audio", self.codec_name, self.time_base, sample_rate=ctx.sample_rate,
                              layout=ctx.layout.name, extradata=extra)
        if self.media_type == "video":
            sar = self.stream.sample_aspect_ratio
            return HashStream("video", self.codec_name, self.time_base, width=ctx.width, height=ctx.height,
                              sar=Fraction(sar) if sar else None, extradata=extra)
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


class AudioEncodePath(SidePath):
    """Decode, filter (``-af`` + ffmpeg's aformat for the encoder) and encode one audio stream.

    The encoder belongs to the output (it is created with the output's header); decoded frames
    that arrive before it are held, and so are filtered frames past the video's progress while a
    frame limit is in force (ffmpeg's sync queue before the encoders), all under the sink's lock.
    """

    media_type = "audio"
    decodes_audio = True

    def __init__(self, stream: Any, out_index: int, *, codec: str,
                 filters: Sequence[tuple[str, str | None]] = (), filters_text: str = "",
                 sample_rate: int | None = None, channels: int | None = None, bit_rate: int | None = None,
                 codec_options: dict[str, str] | None = None, bitexact: bool = False, **kw: Any) -> None:
        import av

        super().__init__(stream, out_index, **kw)
        self.codec_name = codec
        self.stats.codec = codec
        try:
            self._codec = av.Codec(codec, "w")
        except (av.FFmpegError, ValueError) as exc:
            raise InvalidArgumentError(f"Unknown encoder '{codec}'") from exc
        if self._codec.type != "audio":
            raise InvalidArgumentError(f"Encoder '{codec}' is not an audio encoder")
        self.bit_rate = bit_rate
        self.codec_options = dict(codec_options or {})
        self.bitexact = bitexact
        self._dec = stream.codec_context
        self._dec.thread_type = "AUTO"
        fmt = self._aformat(sample_rate, channels)
        in_start, in_dur = self.input_trim
        trim = ":".join(arg for arg in (None if in_start is None else f"starti={in_start}us",
                                        None if in_dur is None else f"durationi={in_dur}us") if arg)
        # the input's trim first (ffmpeg's configure_input_audio_filter), then -af, then the aformat
        self._filters = [*([("atrim", trim)] if trim else []), *filters, *([("aformat", fmt)] if fmt else [])]
        text = ",".join(part for part in (filters_text, f"aformat={fmt}" if fmt else "") if part)
        from .libav import probe_audio_chain

        if self._dec.layout.name.endswith(" channels"):  # unspecified order: ffmpeg's guess_input_channel_layout
            self._dec.layout = default_layout(self._dec.channels)
        self.info = probe_audio_chain(text, sample_fmt=self._dec.format.name, sample_rate=self._dec.sample_rate,
                                      layout=self._dec.layout.name)
        self.time_base = Fraction(1, self.info.sample_rate)
        self.encoder: Any = None
        self._graph: Any = None
        self._graph_key: tuple[str, int, str] | None = None
        self._decoded: deque[Any] = deque()  # decoded, waiting for the encoder (None: end of stream)
        self._synced: deque[Any] = deque()   # filtered, waiting for the video (sync queue)
        self._flushed = False
        self._trimmed = False
        self._start_shift = 0
        # audio_ts_process state (DecoderPriv): last pts and duration estimate in the internal time base
        self._last_delta: list[int | None] = [None]
        self._last_pts: int | None = None
        self._last_dur = 0
        self._last_tb = Fraction(1, 1)
        self._last_rate = 0

    def _aformat(self, sample_rate: int | None, channels: int | None) -> str:
        """The aformat arguments of ffmpeg's configure_output_audio_filter for this encoder."""
        c = self._codec
        args = []
        fmts = [f.name for f in (c.audio_formats or ())]
        if fmts:
            args.append("sample_fmts=" + "|".join(fmts))
        rates = [sample_rate] if sample_rate else list(c.audio_rates or ())
        if rates:
            args.append("sample_rates=" + "|".join(str(r) for r in rates))
        if channels:
            args.append("channel_layouts=" + default_layout(channels))
        else:
            from .libav import encoder_channel_layouts

            layouts = encoder_channel_layouts(c.name)
            if layouts:
                args.append("channel_layouts=" + "|".join(layouts))
        return ":".join(args)

    # -- the output stream ----------------------------------------------------------------

    def _configure(self, enc: Any) -> None:
        enc.format = self.info.sample_fmt
        enc.sample_rate = self.info.sample_rate
        enc.layout = self.info.layout
        enc.time_base = self.time_base
        if self.bit_rate:
            enc.bit_rate = self.bit_rate
        if self.bitexact:
            enc.flags |= AV_CODEC_FLAG_BITEXACT
        enc.options = dict(self.codec_options)

    def add_output(self, container: Any) -> Any:
        out = container.add_stream(self.codec_name, rate=self.info.sample_rate)
        self._configure(out.codec_context)
        self.encoder = out.codec_context
        return out

    def hash_stream(self) -> Any:
        import av

        from .hashmux import HashStream

        enc = av.CodecContext.create(self.codec_name, "w")
        self._configure(enc)
        try:
            enc.open(strict=False)
        except (av.FFmpegError, ValueError) as exc:
            raise from_av_error(exc) from exc
        self.encoder = enc
        return HashStream("audio", self._codec.canonical_name, self.time_base, sample_rate=self.info.sample_rate,
                          layout=self.info.layout, extradata=bytes(enc.extradata) if enc.extradata else None)

    def attach(self, sink: Sink) -> None:
        super().attach(sink)
        trim = sink.trim_filter(audio=True)
        if trim is not None:  # output -ss/-t: ffmpeg's insert_trim, after the aformat
            self._filters.append(trim)
        self._start_shift = rescale(sink.start_time or 0, _US, self.time_base)

    def on_ready(self) -> None:
        self._run()

    def on_video(self) -> None:
        """The video advanced (or ended): frames the sync queue held may go on."""
        self._release_synced()

    # -- packets in -----------------------------------------------------------------------

    def packet(self, packet: Any) -> None:
        import av

        if not packet.size:
            return  # the demuxer's flush packet: end() drains the decoder
        self.stats.packets_read += 1
        try:
            frames = self._dec.decode(packet)
        except av.InvalidDataError as exc:  # concealed as ffmpeg does: counted, decoding goes on
            key = f"decode error: {exc.strerror or exc}"
            self.stats.failed[key] = self.stats.failed.get(key, 0) + 1
            return
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        for frame in frames:
            self._in(frame)

    def loop(self) -> tuple[int, Fraction] | None:
        """Drain and reset the decoder as ffmpeg does at a rewind; the end of its last frame
        (last pts + duration estimate, in the internal time base, without the input's offset)."""
        import av

        try:
            frames = self._dec.decode(None)
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        for frame in frames:
            self._in(frame)
        self._dec.flush_buffers()
        if self._last_pts is None:
            return None
        shift = rescale(1, self.offset, self._last_tb) if self.offset else 0
        return self._last_pts + self._last_dur - shift, self._last_tb

    def end(self) -> None:
        import av

        if self.ended or self.sink is None:
            return
        self.ended = True
        try:
            frames = self._dec.decode(None)
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        for frame in frames:
            self._in(frame)
        self._in(None)

    def _in(self, frame: Any | None) -> None:
        assert self.sink is not None
        if frame is not None:
            self.stats.frames_decoded += 1
            self._ts(frame)
        with self.sink.lock:
            self._decoded.append(frame)
            self._run()

    def _ts(self, frame: Any) -> None:
        """ffmpeg_dec.c audio_ts_process: continuous timestamps in an internal time base that can
        hold every sample rate seen (audio_samplerate_update), then in 1/sample_rate."""
        sr = frame.sample_rate
        ftb = Fraction(frame.time_base) if frame.time_base else Fraction(self.stream.time_base)
        if sr != self._last_rate:
            prev = self._last_tb.denominator
            g = math.gcd(prev, sr)
            new = Fraction(1, 28224000) if prev // g >= (2**31 - 1) // sr else Fraction(1, prev // g * sr)
            if ftb.numerator == 1 and ftb.denominator > new.denominator and not ftb.denominator % new.denominator:
                new = ftb
            if self._last_pts is not None:
                self._last_pts = rescale(self._last_pts, self._last_tb, new)
            self._last_dur = rescale(self._last_dur, self._last_tb, new)
            self._last_tb, self._last_rate = new, sr
        tb = self._last_tb
        pred = 0 if self._last_pts is None else self._last_pts + self._last_dur
        pts = frame.pts
        if pts is not None and self.offset:
            pts += rescale(1, self.offset, ftb)  # the demuxer's ts_offset
        if pts is None:
            pts, ftb = pred, tb
        elif self._last_pts is not None and pts > rescale(pred, tb, ftb, "up"):
            self._last_delta = [None]  # a gap in the timestamps: restart the conversion
        pts = rescale_delta(ftb, pts, tb, frame.samples, self._last_delta, tb)
        self._last_pts = pts
        self._last_dur = rescale(frame.samples, Fraction(1, sr), tb)
        frame.pts = rescale(pts, tb, Fraction(1, sr))
        frame.time_base = Fraction(1, sr)

    def _run(self) -> None:
        """Decoded frames through the graph, once the encoder exists (its frame size shapes the graph)."""
        import av

        if self.encoder is None:
            return
        while self._decoded:
            frame = self._decoded.popleft()
            if frame is not None:
                key = (frame.format.name, frame.sample_rate, frame.layout.name)
                if self._graph is not None and key != self._graph_key:
                    self._drain(final=True, reset=True)  # ffmpeg reconfigures on a format change
                if self._graph is None:
                    self._build(frame, key)
            if self._graph is None:  # end of stream and no frame ever came
                self._sync(None)
                continue
            if self._trimmed:
                if frame is not None:
                    self.stats.drop("output -t/-to reached")
                continue
            try:
                self._graph.push(frame)
            except av.FFmpegError as exc:
                raise from_av_error(exc) from exc
            self._drain(final=frame is None)

    def _build(self, frame: Any, key: tuple[str, int, str]) -> None:
        import av

        g = av.filter.Graph()
        try:
            nodes = [g.add_abuffer(format=key[0], sample_rate=key[1], layout=key[2], time_base=frame.time_base)]
            nodes += [g.add(name) if args is None else g.add(name, args) for name, args in self._filters]
            nodes.append(g.add("abuffersink"))
            g.link_nodes(*nodes)
            g.configure()
        except (av.FFmpegError, ValueError) as exc:
            raise from_av_error(exc) if isinstance(exc, av.FFmpegError) else InvalidArgumentError(str(exc)) from exc
        size = self.encoder.frame_size
        if size and not self._codec.capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE:
            g.set_audio_frame_size(size)
        self._graph, self._graph_key = g, key

    def _drain(self, final: bool, reset: bool = False) -> None:
        import av

        if reset:
            self._graph.push(None)
        while True:
            try:
                out = self._graph.pull()
            except av.BlockingIOError:
                break
            except av.EOFError:
                final = True  # atrim reached output -t: the stream ends here
                self._trimmed = True
                break
            except av.FFmpegError as exc:
                raise from_av_error(exc) from exc
            if self._start_shift and out.pts is not None:
                out.pts -= self._start_shift  # the output's start time, as ffmpeg subtracts it
            rec = self.sink.recording_time if self.sink is not None else None
            if rec is not None and out.pts is not None and out.pts * self.time_base >= Fraction(rec, 1_000_000):
                self.stats.drop("output -t/-to reached")  # check_recording_time at the encoder
                continue
            self._sync(out)
        if reset:
            self._graph = None
        elif final:
            self._sync(None)

    def _sync(self, frame: Any | None) -> None:
        self._synced.append(frame)
        self._release_synced()

    def _release_synced(self) -> None:
        assert self.sink is not None
        while self._synced and not self._flushed:
            frame = self._synced[0]
            if frame is not None and frame.pts is not None:
                end = Fraction(frame.pts + frame.samples, frame.sample_rate)
                if self.sink.past_cut(end):
                    self._synced.popleft()
                    self.stats.drop("output frame limit reached (ffmpeg's sync queue)")
                    self._flush_encoder()
                    continue
                if self.sink.sync_hold(end):
                    return
            self._synced.popleft()
            if frame is None:
                self._flush_encoder()
            else:
                self._encode(frame)
        while self._flushed and self._synced:
            if self._synced.popleft() is not None:
                self.stats.drop("output frame limit reached (ffmpeg's sync queue)")

    def _encode(self, frame: Any | None) -> None:
        import av

        assert self.sink is not None
        try:
            packets = self.encoder.encode(frame)
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        for packet in packets:
            self.sink.push_side(self, packet, self.time_base)

    def _flush_encoder(self) -> None:
        assert self.sink is not None
        if not self._flushed:
            self._flushed = True
            self._encode(None)
            self.sink.end_side(self)


class SubtitleEncodePath(SidePath):
    """Decode and encode one subtitle stream (ffmpeg's do_subtitle_out), e.g. SubRip to ASS in Matroska.

    Text converts to text and bitmaps to bitmaps only, as in ffmpeg. Times are libavcodec's
    AVSubtitle times: pts in microseconds, display times in milliseconds, start moved into pts.
    """

    media_type = "subtitle"

    def __init__(self, stream: Any, out_index: int, *, codec: str, **kw: Any) -> None:
        import av

        super().__init__(stream, out_index, **kw)
        self.codec_name = codec
        self.stats.codec = codec
        try:
            self._codec = av.Codec(codec, "w")
        except (av.FFmpegError, ValueError) as exc:
            raise InvalidArgumentError(f"Unknown encoder '{codec}'") from exc
        dec = stream.codec_context
        src = av.Codec(dec.name, "r")
        if not ((src.text_sub and self._codec.text_sub) or (src.bitmap_sub and self._codec.bitmap_sub)):
            raise InvalidArgumentError("Subtitle encoding currently only possible from text to text or bitmap to "
                                       f"bitmap ({dec.name} -> {codec})", option="c:s")
        try:
            dec.open()
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        self._dec = dec
        self.time_base = _US
        self.encoder: Any = None

    def _configure(self, enc: Any) -> None:
        if self._dec.subtitle_header:
            enc.subtitle_header = self._dec.subtitle_header  # ffmpeg copies the decoder's ASS header
        enc.time_base = _US

    def add_output(self, container: Any) -> Any:
        out = container.add_stream(self.codec_name)
        self._configure(out.codec_context)
        self.encoder = out.codec_context
        return out

    def hash_stream(self) -> Any:
        import av

        from .hashmux import HashStream

        enc = av.CodecContext.create(self.codec_name, "w")
        self._configure(enc)
        enc.open()
        self.encoder = enc
        return HashStream("subtitle", self._codec.canonical_name, _US,
                          extradata=bytes(enc.extradata) if enc.extradata else None)

    def packet(self, packet: Any) -> None:
        import av

        if not packet.size:
            return
        self.stats.packets_read += 1
        assert self.sink is not None
        try:
            sub = self._dec.decode2(packet)
        except av.FFmpegError as exc:  # ffmpeg: "Error decoding subtitles", counted, decoding goes on
            key = f"decode error: {exc}"
            self.stats.failed[key] = self.stats.failed.get(key, 0) + 1
            return
        if sub is None or self.ended:
            return
        self.stats.frames_decoded += 1
        if sub.pts is None:  # ffmpeg: "Subtitle packets must have a pts" (skipped unless -xerror)
            self.stats.drop("no pts (Subtitle packets must have a pts)")
            return
        pts = sub.pts + (rescale(1, self.offset, _US) if self.offset else 0)
        start = self.sink.start_time
        if start is not None and pts < start:
            self.stats.drop("before output -ss")
            return
        pts -= start or 0
        rec = self.sink.recording_time
        if rec is not None and pts >= rec:  # check_recording_time: the stream ends here
            self.stats.drop("output -t/-to reached")
            self.end()
            return
        pts += sub.start_display_time * 1000
        sub.end_display_time -= sub.start_display_time
        sub.start_display_time = 0
        sub.pts = pts
        with self.sink.lock:
            try:
                out = self.encoder.encode_subtitle(sub)
            except av.FFmpegError as exc:
                raise from_av_error(exc) from exc
            out.pts = out.dts = pts
            out.duration = sub.end_display_time * 1000
            out.time_base = _US
            self.sink.push_side(self, out, _US)

    def end(self) -> None:
        if not self.ended and self.sink is not None:
            self.ended = True
            self.sink.end_side(self)
