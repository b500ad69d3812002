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

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, from_av_error

if TYPE_CHECKING:
    from .sink import Sink


AV_CODEC_FLAG_BITEXACT = 0x800000
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
    """libavutil's ``av_rescale_delta``: rescale keeping sample-accurate continuity."""
    def rnd(v: Fraction, up: bool) -> int:
        return -((-v.numerator) // v.denominator) if up else v.numerator // v.denominator

    def near(v: Fraction) -> int:  # av_rescale_q: halves away from zero
        q = abs(v)
        r = int(q + Fraction(1, 2)) if q.denominator != 1 else int(q)
        return r if v >= 0 else -r

    if last[0] is None or not duration or in_tb <= out_tb:
        last[0] = near(in_ts * in_tb / fs_tb) + duration
        return near(in_ts * in_tb / out_tb)
    a = rnd((2 * in_ts - 1) * in_tb / fs_tb, False) >> 1
    b = (rnd((2 * in_ts + 1) * in_tb / fs_tb, True) + 1) >> 1
    if last[0] < 2 * a - b or last[0] > 2 * b - a:
        last[0] = near(in_ts * in_tb / fs_tb) + duration
        return near(in_ts * in_tb / out_tb)
    this = min(max(last[0], a), b)
    last[0] = this + duration
    return near(this * fs_tb / out_tb)


class SidePath:
    """One output stream fed from one input stream, around the chain."""

    media_type: str
    codec_name: str

    def __init__(self, stream: Any, out_index: int, *, offset: Fraction = Fraction(0), label: str = "") -> None:
        self.stream = stream
        self.in_index: int = stream.index
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

    def packet(self, packet: Any) -> None:
        raise NotImplementedError

    def end(self) -> None:
        raise NotImplementedError


class CopyPath(SidePath):
    """Stream copy: the input packets, timestamps shifted as ffmpeg's streamcopy shifts them."""

    def __init__(self, stream: Any, out_index: int, **kw: Any) -> None:
        super().__init__(stream, out_index, **kw)
        self.media_type = stream.type
        self.codec_name = stream.codec_context.name if stream.codec_context is not None else "none"
        self.time_base = Fraction(stream.time_base)
        self._shift = round(self.offset / self.time_base)

    def add_output(self, container: Any) -> Any:
        out = container.add_stream_from_template(self.stream)
        if self.stream.metadata:
            out.metadata.update(self.stream.metadata)
        return out

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
        assert self.sink is not None
        if packet.dts is None and packet.pts is None and not packet.size:
            return  # the demuxer's flush packet
        self.stats.packets_read += 1
        if self._shift:
            if packet.pts is not None:
                packet.pts += self._shift
            if packet.dts is not None:
                packet.dts += self._shift
        if self.media_type == "audio" and packet.dts is not None:
            packet.pts = packet.dts  # ffmpeg's of_streamcopy: audio pts follows dts
        self.sink.push_side(self, packet, self.time_base)

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
        self._filters = [*filters, *([("aformat", fmt)] if fmt else [])]
        text = ",".join(part for part in (filters_text, f"aformat={fmt}" if fmt else "") if part)
        from .libav import probe_audio_chain

        self.info = probe_audio_chain(text, sample_fmt=self._dec.format.name, sample_rate=self._dec.sample_rate,
                                      layout=self._dec.layout.name)
        self.time_base = Fraction(1, self.info.sample_rate)
        self.encoder: Any = None
        self._graph: Any = None
        self._graph_key: tuple[str, int, str] | None = None
        self._decoded: deque[Any] = deque()  # decoded, waiting for the encoder (None: end of stream)
        self._synced: deque[Any] = deque()   # filtered, waiting for the video (sync queue)
        self._flushed = False
        self._last_delta: list[int | None] = [None]
        self._last: tuple[int, int, Fraction] | None = None  # pts, duration estimate, time base

    def _aformat(self, sample_rate: int | None, channels: int | None) -> str:
        """The aformat arguments of ffmpeg's configure_output_audio_filter for this encoder."""
        import av

        c = self._codec
        args = []
        fmts = [f.name for f in (c.audio_formats or ())]
        if fmts:
            args.append("sample_fmts=" + "|".join(fmts))
        rates = [sample_rate] if sample_rate else list(c.audio_rates or ())
        if rates:
            args.append("sample_rates=" + "|".join(str(r) for r in rates))
        if channels:
            args.append("channel_layouts=" + av.AudioLayout(channels).name)
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
        if self.stream.metadata:
            out.metadata.update({k: v for k, v in self.stream.metadata.items() if k != "encoder"})
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
        return HashStream("audio", self._codec.name, self.time_base, sample_rate=self.info.sample_rate,
                          layout=self.info.layout, extradata=bytes(enc.extradata) if enc.extradata else None)

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
        """ffmpeg_dec.c audio_ts_process: timestamps in 1/sample_rate, continuous across packets."""
        tb_filter = Fraction(1, frame.sample_rate)
        tb = Fraction(frame.time_base) if frame.time_base else Fraction(self.stream.time_base)
        pts = frame.pts
        if pts is not None and self.offset:
            pts += round(self.offset / tb)
        if pts is None:
            if self._last is None:
                pts, tb = 0, tb_filter
            else:
                pts, tb = self._last[0] + self._last[1], self._last[2]
        elif self._last is not None:
            pred = Fraction(self._last[0] + self._last[1]) * self._last[2] / tb
            if pts > -((-pred.numerator) // pred.denominator):
                self._last_delta = [None]  # a gap in the timestamps: restart the conversion
        self._last = (pts, round(Fraction(frame.samples) * tb_filter / tb), tb)
        frame.pts = rescale_delta(tb, pts, tb_filter, frame.samples, self._last_delta, tb_filter)
        frame.time_base = tb_filter

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
            except (av.BlockingIOError, av.EOFError):
                break
            except av.FFmpegError as exc:
                raise from_av_error(exc) from exc
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
