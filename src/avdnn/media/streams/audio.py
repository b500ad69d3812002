"""An audio stream around the chain, transcoded: decode, libavfilter, encode, as ffmpeg does it.

The decoded frames get ffmpeg's audio timestamps (``audio_ts_process``), then one libavfilter
graph built once per input format: the input's trim, ``-af``, and the ``aformat`` ffmpeg appends
for the encoder (its sample formats, rates and channel layouts, or ``-ar``/``-ac``), with the
encoder's fixed frame size; with a frame limit, frames wait for the video as in ffmpeg's sync
queue. See :mod:`.sidepath` for how side streams meet the output.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from avdnn.errors import InvalidArgumentError, from_av_error
from avdnn.media.filtergraph import FilterGraph, Step, probe_audio
from avdnn.media.libav.codecs import encoder_channel_layouts
from avdnn.media.streams.encoding import AV_CODEC_FLAG_BITEXACT, EncodePath
from avdnn.media.streams.sidepath import SideOutput
from avdnn.media.timing import rescale

__all__ = ["AudioEncodePath", "default_layout", "rescale_delta"]

_US = Fraction(1, 1_000_000)
AV_CODEC_CAP_VARIABLE_FRAME_SIZE = 1 << 16

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


class AudioEncodePath(EncodePath):
    """Decode, filter (``-af`` + ffmpeg's aformat for the encoder) and encode one audio stream.

    The encoder belongs to the output (it is created with the output's header); decoded frames
    that arrive before it are held (as many as ffmpeg's muxing queue would hold of their packets:
    :mod:`avdnn.media.output.muxqueue`), and so are filtered frames past the video's progress while
    a frame limit is in force (ffmpeg's sync queue before the encoders), all under the sink's lock.
    """

    media_type = "audio"
    decodes_audio = True

    def __init__(
        self,
        stream: Any,
        out_index: int,
        *,
        codec: str,
        filters: Sequence[tuple[str, str | None]] = (),
        filters_text: str = "",
        sample_rate: int | None = None,
        channels: int | None = None,
        bit_rate: int | None = None,
        codec_options: dict[str, str] | None = None,
        bitexact: bool = False,
        **kw: Any,
    ) -> None:
        super().__init__(stream, out_index, codec=codec, **kw)
        if self._codec.type != "audio":
            raise InvalidArgumentError(f"Encoder '{codec}' is not an audio encoder")
        self.bit_rate = bit_rate
        self.codec_options = dict(codec_options or {})
        self.bitexact = bitexact
        self._dec = stream.codec_context
        self._dec.thread_type = "AUTO"
        fmt = self._aformat(sample_rate, channels)
        in_start, in_dur = self.input_trim
        trim = ":".join(
            arg
            for arg in (
                None if in_start is None else f"starti={in_start}us",
                None if in_dur is None else f"durationi={in_dur}us",
            )
            if arg
        )
        # the input's trim first (ffmpeg's configure_input_audio_filter), then -af, then the aformat
        self._filters: list[Step] = [
            *([("atrim", trim)] if trim else []),
            *filters,
            *([("aformat", fmt)] if fmt else []),
        ]
        text = ",".join(part for part in (filters_text, f"aformat={fmt}" if fmt else "") if part)
        if not self._dec.channels:  # the probe never found them (a cut file): abuffer refuses it, EINVAL
            raise InvalidArgumentError(
                f"stream #{stream.index}: Neither number of channels nor channel layout specified"
            )
        if self._dec.layout.name.endswith(" channels"):  # unspecified order: ffmpeg's guess_input_channel_layout
            self._dec.layout = default_layout(self._dec.channels)
        self.info = probe_audio(
            text, sample_fmt=self._dec.format.name, sample_rate=self._dec.sample_rate, layout=self._dec.layout.name
        )
        self.time_base = Fraction(1, self.info.sample_rate)
        self._graph: FilterGraph | None = None
        self._graph_key: tuple[str, int, str] | None = None
        self._decoded: deque[Any] = deque()  # decoded, waiting for the encoder (None: end of stream)
        self._synced: deque[Any] = deque()  # filtered, waiting for the video (sync queue)
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
            layouts = encoder_channel_layouts(c.name)
            if layouts:
                args.append("channel_layouts=" + "|".join(layouts))
        return ":".join(args)

    # -- the output stream ----------------------------------------------------------------

    def configure(self, enc: Any) -> None:
        enc.format = self.info.sample_fmt
        enc.sample_rate = self.info.sample_rate
        enc.layout = self.info.layout
        enc.time_base = self.time_base
        if self.bit_rate:
            enc.bit_rate = self.bit_rate
        if self.bitexact:
            enc.flags |= AV_CODEC_FLAG_BITEXACT
        enc.options = dict(self.codec_options)

    def stream_options(self) -> dict[str, Any]:
        return {"rate": self.info.sample_rate}

    def hash_fields(self) -> dict[str, Any]:
        return {"sample_rate": self.info.sample_rate, "layout": self.info.layout}

    def attach(self, sink: SideOutput) -> None:
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
        if self.encoder is None:  # its frames wait for the output's header: ffmpeg's muxing queue bound
            assert self.sink is not None
            with self.sink.lock:
                if self.encoder is None:
                    self.hold_before_header(packet.size)
        try:
            frames = self._dec.decode(packet)
        except av.EOFError:
            return
        except av.FFmpegError as exc:
            # concealed as ffmpeg's decoder does with any error of send_packet/receive_frame (not
            # only AVERROR_INVALIDDATA: a damaged AAC PCE is libavcodec's bare -1, "EPERM"):
            # counted, decoding goes on
            key = f"decode error: {exc.strerror or exc}"
            self.stats.failed[key] = self.stats.failed.get(key, 0) + 1
            return
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
            if not self._graph.push(frame):
                self._trimmed = True  # the graph takes no more (atrim reached output -t): the stream ends
            self._drain(final=frame is None or self._trimmed)

    def _build(self, frame: Any, key: tuple[str, int, str]) -> None:
        size = self.encoder.frame_size
        fixed = size if size and not self._codec.capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE else None
        self._graph = FilterGraph.audio_chain(
            self._filters, format=key[0], sample_rate=key[1], layout=key[2], time_base=frame.time_base, frame_size=fixed
        )
        self._graph_key = key

    def _drain(self, final: bool, reset: bool = False) -> None:
        graph = self._graph
        assert graph is not None
        if reset:
            graph.push(None)
        for out in graph.pull():
            if self._start_shift and out.pts is not None:
                out.pts -= self._start_shift  # the output's start time, as ffmpeg subtracts it
            rec = self.sink.recording_time if self.sink is not None else None
            if rec is not None and out.pts is not None and out.pts * self.time_base >= Fraction(rec, 1_000_000):
                self.stats.drop("output -t/-to reached")  # check_recording_time at the encoder
                continue
            self._sync(out)
        if graph.ended:
            final = True  # atrim reached output -t: the stream ends here
            self._trimmed = True
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
