"""Video sources: anything PyAV can demux and decode, and lavfi source graphs, read as ffmpeg reads them.

``-f lavfi -i "testsrc=s=64x64:d=0.4"`` opens libavformat's own lavfi device through PyAV,
so frames and timestamps are the ones ffmpeg's lavfi input produces, bit for bit. Files and
URLs are decoded with frame threading. The input side of the ffmpeg CLI is reproduced here:
timestamps shifted by the input's start time (and by ``-ss``/``-itsoffset``), accurate seek,
``-t``/``-to``, ``-stream_loop``, ``-re`` pacing, decode errors concealed and counted
(:mod:`.decode`), and the display matrix applied (:mod:`.rotate`). docs/media.md lists every
option with ffmpeg's name.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from avdnn.errors import AvdnnError, InvalidArgumentError, NotFoundError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.input.decode import DEFAULT_MAX_ERROR_RATE, VideoDecoder, discard_value
from avdnn.media.input.filters import FilterList, InputFilters
from avdnn.media.input.framedata import display_matrix
from avdnn.media.input.live import LiveOptions, LiveStats, is_live, is_network, open_input, redact_url
from avdnn.media.input.reopen import InputLost, live_packets, reopen
from avdnn.media.input.rotate import Matrix, autorotate_filters, matrix_from_options, swaps_axes
from avdnn.media.timing import AV_TIME_BASE, Pacer, check_readrate, parse_time, recording_time, rescale

log = logging.getLogger("avdnn")
_US = Fraction(1, AV_TIME_BASE)
_AVFMT_SEEK_TO_PTS = 0x4000000


@dataclass(frozen=True)
class StreamInfo:
    """What the chain needs to know about the input before the first frame (as frames leave: rotated)."""

    width: int
    height: int
    pix_fmt: str
    time_base: Fraction
    frame_rate: Fraction | None
    sample_aspect_ratio: Fraction | None
    duration: float | None


class Source:
    """Decoded video frames of one input, in presentation order, as avdnn Frames.

    Keyword options, each ffmpeg's input option of the same meaning (times are seconds or
    ffmpeg time strings such as ``"00:01:02.5"`` / ``"1500ms"``):

    * ``format``, ``options``: ``-f`` and the demuxer's AVOptions (``-fflags +discardcorrupt`` ...);
    * ``threads``: decoder ``-threads`` (``"auto"`` or a count; 1 decodes single-threaded);
    * ``decoder_options``: decoder AVOptions (``-err_detect`` ...);
    * ``seek``: ``-ss``, seeking to the keyframe before and, with ``accurate_seek`` (default,
      ``-noaccurate_seek`` turns it off), dropping the frames before the point;
    * ``duration`` / ``to``: ``-t`` / ``-to`` (``-t`` wins when both are given);
    * ``itsoffset``: ``-itsoffset``, added to every timestamp;
    * ``stream_loop``: ``-stream_loop`` (-1 loops for ever);
    * ``realtime`` / ``readrate`` / ``readrate_initial_burst``: ``-re``, ``-readrate``,
      ``-readrate_initial_burst``;
    * ``autorotate`` (``-autorotate``/``-noautorotate``), ``display_rotation``,
      ``display_hflip``, ``display_vflip``: the display matrix, applied before the chain;
    * ``xerror``: ``-xerror``, the first decode error ends the input; ``max_error_rate``:
      ``-max_error_rate``, checked when the input ends (:class:`ErrorRateExceededError`);
    * ``discard``: ``-discard`` for the video stream (``none``, ``default``, ``noref``,
      ``bidir``, ``nointra``, ``nokey``, ``all``);
    * ``reconnect_attempts``, ``reconnect_delay``, ``live_timeout``, ``live_drop``,
      ``live_queue``: a live input's bounds, reopening and drop policy (:mod:`.live`,
      docs/live.md); :attr:`live` says whether the input is live.

    Counters for the run's accounting: :attr:`errors` (by cause), :attr:`frames_concealed`,
    :attr:`packets_corrupt`, :attr:`decode_errors`, :attr:`frames_decoded`,
    :attr:`frames_trimmed` and ``frames_read`` (frames handed out).
    """

    def __init__(
        self,
        url: str,
        *,
        format: str | None = None,  # noqa: A002 - ffmpeg's -f
        options: dict[str, str] | None = None,
        threads: int | str = "auto",
        decoder_options: dict[str, str] | None = None,
        seek: float | str | None = None,
        accurate_seek: bool = True,
        duration: float | str | None = None,
        to: float | str | None = None,
        itsoffset: float | str | None = None,
        stream_loop: int = 0,
        realtime: bool = False,
        readrate: float | None = None,
        readrate_initial_burst: float = 0.5,
        autorotate: bool = True,
        display_rotation: float | None = None,
        display_hflip: bool = False,
        display_vflip: bool = False,
        xerror: bool = False,
        max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
        discard: str | None = None,
        video: bool = True,
        reconnect_attempts: int = 3,
        reconnect_delay: float = 1.0,
        live_timeout: float = 5.0,
        live_drop: str | None = None,
        live_queue: int | None = None,
    ) -> None:
        self.url = url
        #: The URL as avdnn shows it: its credentials redacted (see avdnn._util.redact).
        self.name = redact_url(url)
        self.format = format
        self._seek_us = parse_time(seek, "ss")
        self._recording_us = recording_time(self._seek_us, parse_time(duration, "t"), parse_time(to, "to"))
        if not 0.0 <= max_error_rate <= 1.0:
            raise InvalidArgumentError(f"max_error_rate {max_error_rate} out of range [0 - 1]", option="max_error_rate")
        check_readrate(readrate, readrate_initial_burst)
        if url == "-" or url.startswith("pipe:"):  # ffmpeg's stdin alias; libavformat opens pipe:N itself
            url = "pipe:" if url == "-" else url
        elif format is None and "://" not in url and not os.path.exists(url) and "%" not in url:
            raise NotFoundError("No such file or directory", file=url)
        self.live_options = LiveOptions(reconnect_attempts, reconnect_delay, live_timeout, live_drop, live_queue)
        self._open_args: dict[str, Any] = {"format": format, "options": options, "live": self.live_options}
        self._container: Any = open_input(url, **self._open_args)
        self.live_stats = LiveStats()
        self._stop = threading.Event()  # the run is ending: no more waiting to reopen
        self._gap_from: float | None = None
        #: reopenings in a row whose session gave no frame, and the frame count at the last (media.reopen)
        self._idle_reopens = 0
        self._frames_at_reopen = 0
        self._reopened_at = float("-inf")
        self._last_in = [0.0]  # when the last packet arrived (media.reopen: the gap starts there)
        self._retired: list[Any] = []  # containers of the sessions before a reopening (media.reopen)
        #: Packets of the streams that go around the chain, by input stream index (see media.sidepath).
        self.side_handlers: dict[int, Callable[[Any], None]] = {}
        #: Called once the demuxer is at its end (the side streams flush their decoders).
        self.side_ends: list[Callable[[], None]] = []
        if video and not self._container.streams.video:
            self._container.close()
            raise InvalidArgumentError("no video stream", file=url)
        self._decoder_args: dict[str, Any] = {
            "threads": threads,
            "xerror": xerror,
            "options": decoder_options,
            "file": self.name,
        }
        self._discard = discard
        self._stream: Any = None
        self.decoder: Any = None
        #: Whether video is decoded for a chain (False: an output without video, or -c:v copy).
        self.video = False
        if video:
            self.use_video(self._container.streams.video[0].index)
        self.max_error_rate = max_error_rate
        self.accurate_seek = accurate_seek
        self.stream_loop = stream_loop
        rate = 1.0 if realtime else readrate  # ffmpeg: -re is -readrate 1; -readrate 0 does not pace
        self._pacer = Pacer(rate, readrate_initial_burst) if rate else None
        #: Whether the input arrives at its own pace (network, device, -re): media.live.is_live.
        self.live = is_live(url, format, self._container, paced=bool(rate))
        #: A live network input: read with bounds and reopened when lost (media.reopen).
        self._network = self.live and is_network(url, format)
        self.autorotate = autorotate
        self._override: Matrix | None = None
        if display_rotation is not None or display_hflip or display_vflip:
            self._override = matrix_from_options(display_rotation, display_hflip, display_vflip)
        #: The display matrix of the stream (None until the first frame, unless overridden).
        self.display_matrix: Matrix | None = self._override
        start = self._container.start_time
        self._start_us = start if start is not None and self.format != "lavfi" else 0
        self._offset_us = (parse_time(itsoffset, "itsoffset") or 0) - (self._seek_us or 0) - self._start_us
        self.frames_read = 0
        self._pushed = self._passed = 0
        # -stream_loop: ffmpeg's max_pts/min_pts over all streams and the looped duration (ts, tb)
        self._max_pts: tuple[int, Fraction] | None = None
        self._min_pts: tuple[int, Fraction] | None = None
        self._duration: tuple[int, Fraction] = (0, _US)
        #: Set when an audio stream is decoded: its decoder's end, not packet durations, extends a round.
        self._audio_decoded = False
        #: Whether every side stream has ended (then nothing more needs reading; set by the run).
        self.sides_done: Callable[[], bool] | None = None
        #: Called at each -stream_loop rewind; each returns its stream's end (ts, tb) or None.
        self.side_loops: list[Callable[[], tuple[int, Fraction] | None]] = []
        self._out_sar: Fraction | None = None
        self._ahead: list[Frame] = []
        self._error: AvdnnError | None = None
        self._gen: Generator[Frame, None, None] | None = None
        self._filters: InputFilters | None = None
        if self._seek_us is not None:
            self._seek(self._seek_us + self._start_us)

    def attach_side(
        self,
        index: int,
        packet: Callable[[Any], None],
        end: Callable[[], None],
        loop: Callable[[], tuple[int, Fraction] | None],
        *,
        decodes_audio: bool = False,
    ) -> None:
        """A stream that goes around the chain: its packets, its end, and its -stream_loop rewind."""
        self.side_handlers[index] = packet
        self.side_ends.append(end)
        self.side_loops.append(loop)
        self._audio_decoded = self._audio_decoded or decodes_audio

    def use_video(self, index: int | None) -> None:
        """Decode input stream ``index`` for the chain (None: no video is decoded, e.g. -c:v copy)."""
        if index is None:
            self._stream, self.decoder, self.video = None, None, False
            return
        stream = self._container.streams[index]
        if stream is not self._stream:
            self._stream = stream
            if self._discard is not None:
                stream.discard = discard_value(self._discard)
            self.decoder = VideoDecoder(stream, **self._decoder_args)
        self.video = True

    @property
    def video_stream(self) -> Any:
        """The PyAV stream decoded for the chain (None when no video is decoded)."""
        return self._stream if self.video else None

    @property
    def container(self) -> Any:
        """PyAV's input container (its global metadata and chapters are copied to outputs)."""
        return self._container

    @property
    def streams(self) -> Any:
        """PyAV's streams of the input, for stream selection and the side streams."""
        return self._container.streams

    @property
    def offset(self) -> Fraction:
        """Seconds added to every timestamp: ffmpeg's ts_offset (-start time, -ss, +-itsoffset)."""
        return Fraction(self._offset_us, AV_TIME_BASE)

    @property
    def output_display_matrix(self) -> Matrix | None:
        """The matrix an output's video stream carries: the input's, when it was not applied
        (-noautorotate), as ffmpeg copies the stream's display matrix side data."""
        return None if self.autorotate else self.display_matrix

    @property
    def input_trim(self) -> tuple[int | None, int | None]:
        """(start, duration) in microseconds of the trim ffmpeg puts on every decoded stream of this
        input (-ss with accurate seek: start 0 on the shifted timeline; -t/-to: the duration)."""
        start = 0 if self._seek_us is not None and self.accurate_seek else None
        return start, self._recording_us

    @property
    def recording_time(self) -> int | None:
        """The input's -t (or -to less -ss) in microseconds: copied streams end there too."""
        return self._recording_us

    # -- counters -------------------------------------------------------------------------

    @property
    def errors(self) -> dict[str, int]:
        """Decode failures by cause: ``send_packet``, ``receive_frame``, ``corrupt_frame``."""
        return dict(self.decoder.errors) if self.decoder is not None else {}

    @property
    def frames_concealed(self) -> int:
        return self.decoder.frames_concealed if self.decoder is not None else 0

    @property
    def packets_corrupt(self) -> int:
        return self.decoder.packets_corrupt if self.decoder is not None else 0

    @property
    def decode_errors(self) -> int:
        return self.decoder.decode_errors if self.decoder is not None else 0

    @property
    def counters(self) -> dict[str, int]:
        """Every input counter in one dict, for a run's accounting (names as the attributes)."""
        return {
            "frames_read": self.frames_read,
            "frames_decoded": self.frames_decoded,
            "frames_trimmed": self.frames_trimmed,
            "frames_concealed": self.frames_concealed,
            "decode_errors": self.decode_errors,
            "packets_corrupt": self.packets_corrupt,
            **{f"errors.{k}": v for k, v in self.errors.items()},
            **(self.live_stats.counters() if self._network else {}),
        }

    @property
    def frames_decoded(self) -> int:
        return self.decoder.frames_decoded if self.decoder is not None else 0

    # -- description ----------------------------------------------------------------------

    @property
    def info(self) -> StreamInfo:
        s = self._stream
        if self.autorotate and self._override is None and self._filters is None:
            self._peek()
        rate = s.guessed_rate or s.average_rate
        sar = s.sample_aspect_ratio
        fmt = s.codec_context.format
        dur = float(s.duration * s.time_base) if s.duration and s.time_base else None
        width, height = s.codec_context.width, s.codec_context.height
        if self.autorotate and swaps_axes(autorotate_filters(self.display_matrix)):
            width, height = height, width
            sar = 1 / Fraction(sar) if sar else None
        return StreamInfo(
            width=width,
            height=height,
            pix_fmt=fmt.name if fmt is not None else "",
            time_base=Fraction(s.time_base or _US),
            frame_rate=Fraction(rate) if rate else None,
            sample_aspect_ratio=Fraction(sar) if sar else None,
            duration=dur if dur is not None and dur > 0 else None,
        )

    def _peek(self) -> None:
        """Decode ahead to the first frame: its side data carries the stream's display matrix."""
        try:
            first = next(self._frames(), None)
        except AvdnnError as exc:
            self._error = exc  # raised by iteration, in the run, with the run's accounting
            return
        if first is not None:
            self._ahead.append(first)
        elif self._filters is None:  # no frame at all: nothing to rotate
            self._filters = InputFilters([])

    # -- frames ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Frame]:
        while self._ahead:
            yield self._ahead.pop(0)
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        yield from self._frames()

    def _frames(self) -> Generator[Frame, None, None]:
        if self._gen is None:
            # The generator sees the Source through a weak proxy (and calls its generator methods
            # unbound, on the proxy): a Source holding a generator that holds the Source would be
            # a cycle, freed by the cyclic GC at some arbitrary point instead of when dropped.
            self._gen = Source._generate(cast(Source, weakref.proxy(self)))
        return self._gen

    def _generate(self) -> Generator[Frame, None, None]:
        import av

        loops_left = self.stream_loop
        try:
            while True:
                stream = self._stream  # a reopened live input has new streams
                tb = Fraction(stream.time_base or _US) if stream is not None else _US
                sar = (
                    Fraction(stream.sample_aspect_ratio) if stream is not None and stream.sample_aspect_ratio else None
                )
                offset = (rescale(self._offset_us, _US, tb) if self._offset_us else 0) + self._looped(tb)
                try:
                    yield from Source._one_pass(self, tb, offset, sar)
                except InputLost as lost:  # a network input failed or stalled: its frames so far, then reopen
                    if self.decoder is not None:
                        for av_frame in self.decoder.flush():
                            yield from Source._emit(self, av_frame, offset, sar)
                    reopen(self, lost.error)
                    continue
                if self._network and not self._trim_done() and not self._sides_finished() and reopen(self, None):
                    continue  # the sender went away (end of stream): a live input is reopened
                if loops_left == 0 or self._max_pts is None or self._trim_done() or self._sides_finished():
                    break
                loops_left -= 1 if loops_left > 0 else 0
                Source._seek_to_start(self)
            if self._filters is not None:
                for av_frame in self._filters.flush():
                    yield self._wrap(av_frame)
            self._end_sides()
        except AvdnnError:
            raise
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name).with_context(pts=None) from exc
        if self.decoder is not None:
            self.decoder.check_error_rate(self.max_error_rate)

    def _looped(self, tb: Fraction) -> int:
        """ffmpeg's d->duration (the rounds looped so far) in time base ``tb``."""
        return rescale(self._duration[0], self._duration[1], tb) if self._duration[0] else 0

    def _track(self, packet: Any, tb: Fraction) -> None:
        """ffmpeg's max_pts/min_pts over every stream's packets (pts already moved by the loops)."""
        if packet.pts is None:
            return
        end = packet.pts + (0 if self._audio_decoded else (packet.duration or 0))
        if self._max_pts is None or Fraction(end) * tb > self._max_pts[0] * self._max_pts[1]:
            self._max_pts = (end, tb)
        if self._min_pts is None or Fraction(packet.pts) * tb < self._min_pts[0] * self._min_pts[1]:
            self._min_pts = (packet.pts, tb)

    def _seek_to_start(self) -> None:
        """ffmpeg's seek_to_start: rewind, and the loop duration from max/min pts (and the audio's end)."""
        if self.decoder is not None:
            self.decoder.reset()
        for loop in self.side_loops:  # the audio decoders drain; their last frame's end may extend the round
            end = loop()
            if end is not None and (self._max_pts is None or end[0] * end[1] > self._max_pts[0] * self._max_pts[1]):
                self._max_pts = end
        self._seek(self._start_us, fatal=True)  # a failure ends the input
        assert self._max_pts is not None
        min_ts, min_tb = self._min_pts if self._min_pts is not None else (0, self._max_pts[1])
        self._duration = (self._max_pts[0] - rescale(min_ts, min_tb, self._max_pts[1]), self._max_pts[1])

    def _one_pass(self, tb: Fraction, offset: int, sar: Fraction | None) -> Iterator[Frame]:
        """Demux and decode the input once (one -stream_loop round), ending early when trimmed.

        Packets of the side streams go to their handlers on the way, moved by the rounds looped
        before this one (the side paths add the input's own offset themselves).
        """
        video = self._stream.index if self._stream is not None else -1
        streams = [self._container.streams[i] for i in sorted(self.side_handlers)]
        if self._stream is not None:
            streams.insert(0, self._stream)
        if not streams:
            return
        video_done = False
        packets = self._container.demux(*streams)
        if self._network:  # its failures and stalls end the pass as InputLost (reopened by _generate)
            packets = live_packets(packets, self.name, self.live_options.live_timeout, self._last_in)
        for packet in packets:
            if packet.dts is None and packet.pts is None and packet.size == 0:
                if packet.stream.index != video:
                    self.side_handlers[packet.stream.index](packet)
                continue  # PyAV's end-of-stream marker: flush() below drains the decoder
            ptb = Fraction(packet.time_base) if packet.time_base else tb
            shift = self._looped(ptb)
            if shift:
                if packet.pts is not None:
                    packet.pts += shift
                if packet.dts is not None:
                    packet.dts += shift
            self._track(packet, ptb)
            if self._pacer is not None and packet.dts is not None:  # every stream is paced, as ffmpeg's readrate
                base = rescale(self._offset_us, _US, ptb) if self._offset_us else 0
                self._pacer.wait(float((packet.dts + base) * ptb))
            if packet.stream.index != video:
                self.side_handlers[packet.stream.index](packet)
                if (video_done or video < 0) and self._sides_finished():
                    return  # ffmpeg stops reading once every output stream has ended
                continue
            if video_done:
                continue  # the video is trimmed: the side streams are read on to their own end
            packet.pts = None if packet.pts is None else packet.pts - shift  # _emit adds offset + loops
            packet.dts = None if packet.dts is None else packet.dts - shift
            for av_frame in self.decoder.decode(packet):
                yield from Source._emit(self, av_frame, offset, sar)
            if self._trim_done():
                if not self.side_handlers or self._sides_finished():
                    return
                video_done = True
        if self.decoder is not None and not video_done:
            for av_frame in self.decoder.flush():
                yield from Source._emit(self, av_frame, offset, sar)

    def _sides_finished(self) -> bool:
        return self.sides_done is not None and self.sides_done()

    def drain_sides(self, done: Callable[[], bool]) -> None:
        """After the video stopped early: keep demuxing the side streams until ``done()`` says so.

        ffmpeg reads on until every output stream is finished, so with ``-frames:v`` the audio
        still reaches the point where the video ended although the file interleaves it later.
        """
        import av

        sides = [self._container.streams[i] for i in sorted(self.side_handlers)]
        if not sides or not self.side_ends or done():
            return
        try:
            for packet in self._container.demux(*sides):
                self.side_handlers[packet.stream.index](packet)
                if done():
                    return
            self._end_sides()
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name) from exc

    def _end_sides(self) -> None:
        ends, self.side_ends = self.side_ends, []
        for end in ends:
            end()

    def _trim_done(self) -> bool:
        return self._filters is not None and self._filters.finished

    def _emit(self, av_frame: Any, offset: int, sar: Fraction | None) -> Iterator[Frame]:
        """Put a decoded frame on the output timeline and through the input filters."""
        if av_frame.pts is None:  # ffmpeg takes best_effort_timestamp, which PyAV does not expose
            av_frame.pts = av_frame.dts
        if offset and av_frame.pts is not None:
            av_frame.pts += offset
        if self._filters is None:
            if self._override is None:  # with -noautorotate too: the output then carries the matrix
                self.display_matrix = display_matrix(av_frame)  # not av_frame.side_data: see framedata
            self._filters = self._make_filters(sar)
        if not self._filters.filters:
            yield self._wrap(av_frame)
            return
        self._pushed += 1
        for out in self._filters.push(av_frame):
            yield self._wrap(out)

    @property
    def frames_trimmed(self) -> int:
        """Decoded frames the input trim dropped (-ss with accurate seek, -t, -to)."""
        return self._pushed - self._passed

    def _make_filters(self, sar: Fraction | None) -> InputFilters:
        chain: FilterList = []
        if self.autorotate and self.display_matrix is not None:
            chain += autorotate_filters(self.display_matrix)
            chain.append(("sidedata", "mode=delete:type=DISPLAYMATRIX"))  # the output carries no rotation
        trim = []
        if self._seek_us is not None and self.accurate_seek:
            trim.append("start=0us")
        if self._recording_us is not None:
            trim.append(f"duration={self._recording_us}us")
        if trim:
            chain.append(("trim", ":".join(trim)))
        self._out_sar = 1 / sar if sar and swaps_axes(chain) else sar
        return InputFilters(chain, sample_aspect_ratio=sar)

    def _wrap(self, av_frame: Any) -> Frame:
        frame = Frame.from_av(av_frame)
        frame.sample_aspect_ratio = self._out_sar
        self.frames_read += 1
        if self._gap_from is not None:  # the first frame after a reopening: the gap ends
            self.live_stats.gap_seconds += time.monotonic() - self._gap_from
            self._gap_from = None
        if self._filters is not None and self._filters.filters:
            self._passed += 1
        return frame

    def _seek(self, ts: int, *, fatal: bool = False) -> None:
        """avformat_seek_file(ic, -1, INT64_MIN, ts, ts, 0), as ffmpeg's demuxer calls it (ts in us).

        A failed ``-ss`` seek is a warning and the input is read from where it is; a failed
        ``-stream_loop`` rewind is the input's error (``fatal``), as in ffmpeg.
        """
        import av

        if not (self._container.format.flags & _AVFMT_SEEK_TO_PTS) and any(
            s.type == "video" and s.codec_context.has_b_frames for s in self._container.streams
        ):
            ts -= 3 * AV_TIME_BASE // 23  # ffmpeg's dts heuristic for streams with a video delay
        try:
            self._container.seek(ts, backward=True)
        except av.FFmpegError:
            if fatal:
                raise
            log.warning("%s: could not seek to position %.3f", self.name, ts / AV_TIME_BASE)

    def interrupt(self) -> None:
        """The run is ending: a wait to reopen a lost live input ends now (called from any thread)."""
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        # Park the decoder's frame threads first, with the GIL released (flush_buffers is nogil):
        # freeing a frame-threaded decoder from a dealloc holds the GIL while it joins workers,
        # and a worker logging through PyAV's Python log callback then deadlocks (seen with
        # h264 stopped early by -frames:v while the CLI forwards FFmpeg's log lines).
        with contextlib.suppress(Exception):  # closing must not fail on a decoder that never opened
            if self._stream is not None:
                self._stream.codec_context.flush_buffers()
        gen, self._gen, self._ahead = self._gen, None, []
        if gen is not None:  # end the demux loop before its container goes
            with contextlib.suppress(ValueError):  # still running on a reader thread: it ends by itself
                gen.close()
        self._container.close()
        for old in self._retired:
            old.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
