"""Video sources: anything PyAV can demux and decode, and lavfi source graphs, read as ffmpeg reads them.

``-f lavfi -i "testsrc=s=64x64:d=0.4"`` opens libavformat's own lavfi device through PyAV,
so frames and timestamps are the ones ffmpeg's lavfi input produces, bit for bit. Files and
URLs are decoded with frame threading. The input side of the ffmpeg CLI is reproduced here:
timestamps shifted by the input's start time (and by ``-ss``/``-itsoffset``), accurate seek,
``-t``/``-to``, ``-stream_loop``, ``-re`` pacing, decode errors concealed and counted
(:mod:`.decode`), and the display matrix applied (:mod:`.filters`). The Source puts the parts
together: its :class:`~.demux.Demuxer` reads the packets (and feeds the side streams), the
:class:`~.decode.VideoDecoder` decodes the video, :class:`~.filters.InputFilters` rotate and trim
it, and a live network input's losses are reopened (:mod:`.reopen`). docs/media.md lists every
option with ffmpeg's name.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.media.frame import Frame
from avdnn.media.input.decode import DEFAULT_MAX_ERROR_RATE, VideoDecoder
from avdnn.media.input.demux import Demuxer
from avdnn.media.input.filters import InputFilters
from avdnn.media.input.live import LiveOptions, LiveStats, is_live, is_network, open_input, redact_url
from avdnn.media.input.reader import VideoReader
from avdnn.media.input.reopen import Reopener
from avdnn.media.input.rotate import Matrix, autorotate_filters, matrix_from_options, swaps_axes
from avdnn.media.input.streamloop import Stamp
from avdnn.media.timing import AV_TIME_BASE, Pacer, check_readrate, parse_time, recording_time

_US = Fraction(1, AV_TIME_BASE)


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
        # nothing checks the path before libavformat: an image2 pattern (%03d, -pattern_type glob)
        # is no file, and a missing file is libavformat's own "No such file or directory"
        self.live_options = LiveOptions(reconnect_attempts, reconnect_delay, live_timeout, live_drop, live_queue)
        open_args: dict[str, Any] = {"format": format, "options": options, "live": self.live_options}
        container: Any = open_input(url, **open_args)
        self._closed_info: StreamInfo | None = None
        try:
            self.live_stats = LiveStats()
            self._stop = threading.Event()  # the run is ending: no more waiting to reopen
            if video and not container.streams.video:
                raise InvalidArgumentError("no video stream", file=url)
            rate = 1.0 if realtime else readrate  # ffmpeg: -re is -readrate 1; -readrate 0 does not pace
            #: Whether the input arrives at its own pace (network, device, -re): media.input.live.is_live.
            self.live = is_live(url, format, container, paced=bool(rate))
            #: A live network input is read with bounds and reopened when lost (media.input.reopen).
            self._reopener: Reopener | None = None
            if self.live and is_network(url, format):
                self._reopener = Reopener(self.url, self.name, open_args, self.live_stats, self._stop)
            start = container.start_time
            self._start_us = start if start is not None and self.format != "lavfi" else 0
            self._offset_us = (parse_time(itsoffset, "itsoffset") or 0) - (self._seek_us or 0) - self._start_us
            self._demux = Demuxer(
                container,
                self.name,
                pacer=Pacer(rate, readrate_initial_burst) if rate else None,
                offset_us=self._offset_us,
                watch=self._reopener.packets if self._reopener is not None else None,
            )
            self.accurate_seek = accurate_seek
            self.autorotate = autorotate
            self._override: Matrix | None = None
            if display_rotation is not None or display_hflip or display_vflip:
                self._override = matrix_from_options(display_rotation, display_hflip, display_vflip)
            trim = [
                *(["start=0us"] if self._seek_us is not None and accurate_seek else []),
                *([f"duration={self._recording_us}us"] if self._recording_us is not None else []),
            ]
            self._filters = InputFilters(
                autorotate=autorotate, display_matrix=self._override, trim=":".join(trim) if trim else None
            )
            self._reader = VideoReader(
                self._demux,
                self._filters,
                name=self.name,
                decoder_args={"threads": threads, "xerror": xerror, "options": decoder_options, "file": self.name},
                discard=discard,
                offset_us=self._offset_us,
                start_us=self._start_us,
                stream_loop=stream_loop,
                max_error_rate=max_error_rate,
                reopener=self._reopener,
                live_stats=self.live_stats,
            )
            #: Whether video is decoded for a chain (False: an output without video, or -c:v copy).
            self.video = False
            if video:
                self.use_video(container.streams.video[0].index)
            self._ahead: list[Frame] = []
            self._error: AvdnnError | None = None
            self._gen: Generator[Frame, None, None] | None = None
            if self._seek_us is not None:
                self._demux.seek(self._seek_us + self._start_us)
        except BaseException:
            # whatever failed after the open (no video, a bad -discard, the decoder, the seek): the
            # container is closed here, not left to the garbage collector with its descriptor and threads
            container.close()
            raise

    # -- streams --------------------------------------------------------------------------

    def attach_side(
        self,
        index: int,
        packet: Callable[[Any], None],
        end: Callable[[], None],
        loop: Callable[[], Stamp | None] | None = None,
        *,
        decodes_audio: bool = False,
    ) -> None:
        """A stream that goes around the chain: its packets, its end, and its -stream_loop rewind."""
        self._demux.attach(index, packet, end, loop)
        self._demux.loop.audio_decoded = self._demux.loop.audio_decoded or decodes_audio

    @property
    def demuxer(self) -> Demuxer:
        """The input's demuxer: its side streams' packets and ends (another input's are fed from it)."""
        return self._demux

    @property
    def sides_done(self) -> Callable[[], bool] | None:
        """Whether every side stream has ended (then nothing more needs reading; set by the run)."""
        return self._demux.sides_done

    @sides_done.setter
    def sides_done(self, done: Callable[[], bool] | None) -> None:
        self._demux.sides_done = done

    def drain_sides(self, done: Callable[[], bool]) -> None:
        """After the video stopped early: demux the side streams on until ``done()`` (see Demuxer)."""
        self._demux.drain_sides(done)

    def use_video(self, index: int | None) -> None:
        """Decode input stream ``index`` for the chain (None: no video is decoded, e.g. -c:v copy)."""
        self._reader.select(None if index is None else self._demux.container.streams[index])
        self.video = index is not None

    @property
    def decoder(self) -> VideoDecoder | None:
        """The video's decoder (None when no video is decoded)."""
        return self._reader.decoder

    @property
    def _stream(self) -> Any:
        return self._reader.stream

    @property
    def frames_read(self) -> int:
        """Frames handed out."""
        return self._reader.frames_read

    @property
    def video_stream(self) -> Any:
        """The PyAV stream decoded for the chain (None when no video is decoded)."""
        return self._stream if self.video else None

    @property
    def container(self) -> Any:
        """PyAV's input container (its global metadata and chapters are copied to outputs)."""
        return self._demux.container

    @property
    def streams(self) -> Any:
        """PyAV's streams of the input, for stream selection and the side streams."""
        return self._demux.container.streams

    @property
    def offset(self) -> Fraction:
        """Seconds added to every timestamp: ffmpeg's ts_offset (-start time, -ss, +-itsoffset)."""
        return Fraction(self._offset_us, AV_TIME_BASE)

    @property
    def display_matrix(self) -> Matrix | None:
        """The display matrix of the stream (None until the first frame, unless overridden)."""
        return self._filters.display_matrix

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
    def frames_decoded(self) -> int:
        return self.decoder.frames_decoded if self.decoder is not None else 0

    @property
    def frames_trimmed(self) -> int:
        """Decoded frames the input trim dropped (-ss with accurate seek, -t, -to)."""
        return self._filters.pushed - self._filters.passed

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
            **(self.live_stats.counters() if self._reopener is not None else {}),
        }

    # -- description ----------------------------------------------------------------------

    @property
    def info(self) -> StreamInfo:
        if self._closed_info is not None:  # the stream of a closed PyAV container is freed memory
            return self._closed_info
        if self.autorotate and self._override is None and not self._filters.decided:
            self._peek()
        return self._describe()

    def _describe(self) -> StreamInfo:
        s = self._stream
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
        elif not self._filters.decided:  # no frame at all: nothing to rotate
            self._filters.decide(None, None)

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
            self._gen = self._reader.frames()
        return self._gen

    # -- the end --------------------------------------------------------------------------

    def interrupt(self) -> None:
        """The run is ending: a wait to reopen a lost live input ends now (called from any thread)."""
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self._closed_info is None and self._stream is not None:
            # what the stream was, for a sink opened with no frame after the input ended (pipeline)
            self._closed_info = self._describe()
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
        self._demux.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
