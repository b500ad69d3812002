"""An input's video decoded for the chain: each -stream_loop round and each reopened session, onto the output timeline.

The :class:`~.demux.Demuxer` hands the video's packets of one pass (a round) to the
:class:`~.decode.VideoDecoder`; each decoded frame is moved by the input's offset and the rounds
before it, then goes through the :class:`~.filters.InputFilters` (autorotation, trim), which end
the reading early once the trim is done. A pass that a live network input loses ends in
:class:`~.reopen.InputLost`: the decoder is drained, the :class:`~.reopen.Reopener` opens a new
session, and reading goes on with it, the same decoder on the new session's video. At the end of
the input the decode error rate is checked (``-max_error_rate``).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from fractions import Fraction
from typing import Any

from avdnn.errors import AvdnnError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.input.decode import VideoDecoder, discard_value
from avdnn.media.input.demux import Demuxer
from avdnn.media.input.filters import InputFilters
from avdnn.media.input.live import LiveStats
from avdnn.media.input.reopen import InputLost, Reopener
from avdnn.media.timing import AV_TIME_BASE, rescale

__all__ = ["VideoReader"]

_US = Fraction(1, AV_TIME_BASE)


class VideoReader:
    """The input stream decoded for the chain (:meth:`select`), read as Frames by :meth:`frames`.

    ``decoder_args`` are :class:`~.decode.VideoDecoder`'s keywords; ``discard`` is ``-discard``
    (every session's video stream gets it); ``offset_us`` the input's timestamp offset and
    ``start_us`` where a -stream_loop rewind goes back to; ``stream_loop`` the rounds after the
    first (-1: for ever). ``frames_read`` counts the frames handed out.
    """

    def __init__(
        self,
        demux: Demuxer,
        filters: InputFilters,
        *,
        name: str,
        decoder_args: dict[str, Any],
        discard: str | None,
        offset_us: int,
        start_us: int,
        stream_loop: int,
        max_error_rate: float,
        reopener: Reopener | None,
        live_stats: LiveStats,
    ) -> None:
        self._demux = demux
        self._filters = filters
        self.name = name
        self._decoder_args = decoder_args
        self._discard = discard
        self._offset_us = offset_us
        self._start_us = start_us
        self._stream_loop = stream_loop
        self._max_error_rate = max_error_rate
        self._reopener = reopener
        self._live_stats = live_stats
        self.stream: Any = None
        self.decoder: VideoDecoder | None = None
        self.frames_read = 0

    def select(self, stream: Any | None) -> None:
        """Decode ``stream`` (None: none); the same stream keeps its decoder."""
        if stream is None:
            self.stream, self.decoder = None, None
            return
        if stream is not self.stream:
            self.stream = stream
            if self._discard is not None:
                stream.discard = discard_value(self._discard)
            self.decoder = VideoDecoder(stream, **self._decoder_args)

    def _ended(self) -> bool:
        return self._filters.finished or self._demux.sides_finished()

    def frames(self) -> Generator[Frame, None, None]:
        """Every round (-stream_loop) and every session (a reopened live input) of the input."""
        import av

        loops_left = self._stream_loop
        demux = self._demux
        try:
            while True:
                stream = self.stream  # a reopened live input has new streams
                tb = Fraction(stream.time_base or _US) if stream is not None else _US
                sar = (
                    Fraction(stream.sample_aspect_ratio) if stream is not None and stream.sample_aspect_ratio else None
                )
                offset = (rescale(self._offset_us, _US, tb) if self._offset_us else 0) + demux.loop.shift(tb)
                try:
                    yield from self._one_pass(tb, offset, sar)
                except InputLost as lost:  # a network input failed or stalled: its frames so far, then reopen
                    if self.decoder is not None:
                        for av_frame in self.decoder.flush():
                            yield from self._emit(av_frame, offset, sar)
                    self._reopen(lost.error)
                    continue
                if self._reopener is not None and not self._ended() and self._reopen(None):
                    continue  # the sender went away (end of stream): a live input is reopened
                if loops_left == 0 or not demux.loop.seen or self._ended():
                    break
                loops_left -= 1 if loops_left > 0 else 0
                if self.decoder is not None:  # ffmpeg's seek_to_start
                    self.decoder.reset()
                demux.rewind(self._start_us)
            for av_frame in self._filters.flush():
                yield self._wrap(av_frame)
            demux.end_sides()
        except AvdnnError:
            raise
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name).with_context(pts=None) from exc
        if self.decoder is not None:
            self.decoder.check_error_rate(self._max_error_rate)

    def _one_pass(self, tb: Fraction, offset: int, sar: Fraction | None) -> Iterator[Frame]:
        """Decode the video of one pass over the input, ending early when trimmed."""
        demux = self._demux
        for packet in demux.one_pass(self.stream, tb):
            assert self.decoder is not None
            for av_frame in self.decoder.decode(packet):
                yield from self._emit(av_frame, offset, sar)
            if self._filters.finished:
                if not demux.handlers or demux.sides_finished():
                    return
                demux.video_done = True
        if self.decoder is not None and not demux.video_done:
            for av_frame in self.decoder.flush():
                yield from self._emit(av_frame, offset, sar)

    def _emit(self, av_frame: Any, offset: int, sar: Fraction | None) -> Iterator[Frame]:
        """Put a decoded frame on the output timeline and through the input filters."""
        if av_frame.pts is None:  # ffmpeg takes best_effort_timestamp, which PyAV does not expose
            av_frame.pts = av_frame.dts
        if offset and av_frame.pts is not None:
            av_frame.pts += offset
        for out in self._filters.frames(av_frame, sar):
            yield self._wrap(out)

    def _wrap(self, av_frame: Any) -> Frame:
        frame = Frame.from_av(av_frame)
        frame.sample_aspect_ratio = self._filters.out_sar
        self.frames_read += 1
        if self._reopener is not None:  # the first frame after a reopening: the gap ends
            self._reopener.frame_arrived()
        return frame

    # -- a live input's new session -------------------------------------------------------

    def _reopen(self, cause: AvdnnError | None) -> bool:
        assert self._reopener is not None
        frames = self.decoder.frames_decoded if self.decoder is not None else 0
        return self._reopener.reopen(cause, frames, self._adopt)

    def _adopt(self, container: Any) -> None:
        """Read a reopened input's new session: its video to the same decoder (the counters go on),
        the side streams by index as before, its timestamps past the old ones."""
        index = self.stream.index if self.stream is not None else None  # read before its container goes
        self._demux.replace(container)
        if index is not None:
            streams = container.streams
            new = streams[index] if index < len(streams) and streams[index].type == "video" else None
            if new is None and streams.video:
                new = streams.video[0]
            if new is None:
                raise AvdnnError("reopened without a video stream", file=self.name)
            self.stream = new
            if self._discard is not None:  # -discard applies to every session's video stream
                new.discard = discard_value(self._discard)
            if self.decoder is not None:
                self.decoder.rebind(new)
        hole = self._demux.loop.continue_session(container.start_time if container.start_time is not None else 0)
        stream = self.stream
        rate = (stream.guessed_rate or stream.average_rate) if stream is not None else None
        if hole and rate:  # the frames lost in a hole the timestamps show
            self._live_stats.frames_lost += round(hole / AV_TIME_BASE * float(rate))
