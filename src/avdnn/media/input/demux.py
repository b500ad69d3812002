"""One input's demuxer: each packet to its reader (the chain's video, or a side stream's handler), paced and looped.

The demuxer that reads the video also feeds the streams that go around the chain
(:mod:`avdnn.media.streams.sidepath`): their packets go to their handlers on the way, on the
same thread, as ffmpeg's demuxer thread sends every stream's packets on. Every packet is moved
by the ``-stream_loop`` rounds read before it (:class:`~.streamloop.StreamLoop`) and paced by
``-re``/``-readrate``; the video's packets leave for the decoder without the shift (the Source
adds it with the input's own offset).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from avdnn.errors import AvdnnError, from_av_error
from avdnn.media.input.streamloop import Stamp, StreamLoop
from avdnn.media.timing import AV_TIME_BASE, Pacer, rescale

__all__ = ["Demuxer"]

log = logging.getLogger("avdnn")
_US = Fraction(1, AV_TIME_BASE)
_AVFMT_SEEK_TO_PTS = 0x4000000


class Demuxer:
    """An input's PyAV container read packet by packet, for its video and its side streams.

    ``watch`` wraps the container's packet iterator (a live input's: losses become
    :class:`~.reopen.InputLost`); ``offset_us`` is the input's timestamp offset (pacing runs on
    the shifted timeline). :attr:`sides_done` (set by the run) says when every side stream has
    ended: nothing more then needs reading.
    """

    def __init__(
        self,
        container: Any,
        name: str,
        *,
        pacer: Pacer | None = None,
        offset_us: int = 0,
        watch: Callable[[Iterator[Any]], Iterator[Any]] | None = None,
    ) -> None:
        self.container = container
        self.name = name
        self.loop = StreamLoop()
        self._pacer = pacer
        self._offset_us = offset_us
        self._watch = watch
        #: Packets of the side streams, by input stream index.
        self.handlers: dict[int, Callable[[Any], None]] = {}
        self._ends: list[Callable[[], None]] = []
        self._loops: list[Callable[[], Stamp | None]] = []
        self.sides_done: Callable[[], bool] | None = None
        #: Set by the reader of :meth:`one_pass` once the video is trimmed: the side streams read on.
        self.video_done = False
        self._retired: list[Any] = []  # containers of the sessions before a reopening

    # -- the side streams -----------------------------------------------------------------

    def attach(
        self,
        index: int,
        packet: Callable[[Any], None],
        end: Callable[[], None],
        loop: Callable[[], Stamp | None] | None = None,
    ) -> None:
        """A stream that goes around the chain: its packets, its end, and its -stream_loop rewind."""
        self.handlers[index] = packet
        self._ends.append(end)
        if loop is not None:
            self._loops.append(loop)

    def to_side(self, packet: Any) -> None:
        """A packet of a side stream, to its handler."""
        self.handlers[packet.stream.index](packet)

    def sides_finished(self) -> bool:
        return self.sides_done is not None and self.sides_done()

    def end_sides(self) -> None:
        """The demuxer is at its end: the side streams flush their decoders (once)."""
        ends, self._ends = self._ends, []
        for end in ends:
            end()

    def drain_sides(self, done: Callable[[], bool]) -> None:
        """After the video stopped early: keep demuxing the side streams until ``done()`` says so.

        ffmpeg reads on until every output stream is finished, so with ``-frames:v`` the audio
        still reaches the point where the video ended although the file interleaves it later.
        """
        import av

        sides = [self.container.streams[i] for i in sorted(self.handlers)]
        if not sides or not self._ends or done():
            return
        try:
            for packet in self.container.demux(*sides):
                self.to_side(packet)
                if done():
                    return
            self.end_sides()
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name) from exc

    # -- reading --------------------------------------------------------------------------

    def one_pass(self, video: Any | None, tb: Fraction) -> Iterator[Any]:
        """Demux the input once (one -stream_loop round): the packets of ``video`` (the chain's
        stream; ``tb`` its time base) are yielded, the side streams' go to their handlers.

        Once the reader sets :attr:`video_done`, the video's packets are skipped and the pass
        ends when every side stream has ended (ffmpeg stops reading once every output stream has).
        """
        self.video_done = False
        vindex = video.index if video is not None else -1
        streams = [self.container.streams[i] for i in sorted(self.handlers)]
        if video is not None:
            streams.insert(0, video)
        if not streams:
            return
        packets = self.container.demux(*streams)
        if self._watch is not None:
            packets = self._watch(packets)
        for packet in packets:
            if packet.dts is None and packet.pts is None and packet.size == 0:
                if packet.stream.index != vindex:
                    self.to_side(packet)
                continue  # PyAV's end-of-stream marker: the decoder's flush drains it
            ptb = Fraction(packet.time_base) if packet.time_base else tb
            shift = self.loop.shift(ptb)
            if shift:
                if packet.pts is not None:
                    packet.pts += shift
                if packet.dts is not None:
                    packet.dts += shift
            self.loop.track(packet, ptb)
            if self._pacer is not None and packet.dts is not None:  # every stream is paced, as ffmpeg's readrate
                base = rescale(self._offset_us, _US, ptb) if self._offset_us else 0
                self._pacer.wait(float((packet.dts + base) * ptb))
            if packet.stream.index != vindex:
                self.to_side(packet)
                if (self.video_done or vindex < 0) and self.sides_finished():
                    return
                continue
            if self.video_done:
                continue  # the video is trimmed: the side streams are read on to their own end
            packet.pts = None if packet.pts is None else packet.pts - shift  # the Source adds offset + loops
            packet.dts = None if packet.dts is None else packet.dts - shift
            yield packet

    def seek(self, ts: int, *, fatal: bool = False) -> None:
        """avformat_seek_file(ic, -1, INT64_MIN, ts, ts, 0), as ffmpeg's demuxer calls it (ts in us).

        A failed ``-ss`` seek is a warning and the input is read from where it is; a failed
        ``-stream_loop`` rewind is the input's error (``fatal``), as in ffmpeg.
        """
        import av

        if not (self.container.format.flags & _AVFMT_SEEK_TO_PTS) and any(
            s.type == "video" and s.codec_context.has_b_frames for s in self.container.streams
        ):
            ts -= 3 * AV_TIME_BASE // 23  # ffmpeg's dts heuristic for streams with a video delay
        try:
            self.container.seek(ts, backward=True)
        except av.FFmpegError:
            if fatal:
                raise
            log.warning("%s: could not seek to position %.3f", self.name, ts / AV_TIME_BASE)

    def rewind(self, start_us: int) -> None:
        """ffmpeg's seek_to_start: the side streams' decoders end the round (their last frame may
        extend it), the input goes back to ``start_us``, and the next round follows this one."""
        for loop in self._loops:
            self.loop.extend(loop())
        self.seek(start_us, fatal=True)  # a failure ends the input
        self.loop.rewound()

    # -- sessions -------------------------------------------------------------------------

    def replace(self, container: Any) -> None:
        """A reopened input's new session: read ``container`` from now on, the side streams by
        their index as before (their paths keep the old streams' parameters: the old container
        is closed with this demuxer when there are any)."""
        old, self.container = self.container, container
        if self.handlers:
            self._retired.append(old)
        else:
            old.close()
        missing = [i for i in self.handlers if i >= len(container.streams)]
        if missing:  # another stream layout: the side paths cannot follow (an error line, not a traceback)
            raise AvdnnError(
                f"reopened with {len(container.streams)} stream(s), without stream #{missing[0]} that an "
                "output takes: a new stream layout is not supported",
                file=self.name,
            )

    def close(self) -> None:
        self.container.close()
        for old in self._retired:
            old.close()
