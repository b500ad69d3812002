"""Video sinks: any muxer and encoder PyAV has, written the way the ffmpeg CLI writes them.

A :class:`Sink` is one output: its :class:`~.muxer.Muxer` (libavformat's, or a hash muxer),
its streams in output order (its video streams, each a :class:`~.videolane.VideoLane` fed by a
chain, and the side streams, :mod:`avdnn.media.streams`), created together once every video
encoder has opened on its first frame, and the :class:`~.sidesync.SideSync` where they meet.
What the ffmpeg CLI adds on top of the libraries is reproduced here: the default codec of the
muxer, the encoder time base (1/frame rate), the pixel formats the encoder takes, and the
frame-rate sync (:mod:`.vsync`, ``-fps_mode`` auto: passthrough, vfr or cfr from the muxer's
flags; ``-r`` means constant rate). A sink closed after an error still flushes its encoders and
writes its trailer, so the file is valid with the frames before the error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, BinaryIO

from avdnn.errors import AvdnnError, from_av_error
from avdnn.media.output.muxer import Muxer
from avdnn.media.output.sidesync import SideSync
from avdnn.media.output.videoenc import VideoEncoder, auto_fps_mode
from avdnn.media.output.videolane import FirstVideo, VideoLane, VideoSettings
from avdnn.media.output.videostreams import VideoStreams
from avdnn.media.streams.sidepath import SidePath


class Sink(FirstVideo):
    """Encodes and muxes avdnn Frames into one output (a path, ``-`` for stdout, a URL, or a file object).

    The output's streams are set by :meth:`set_streams` (its video streams with their settings,
    and the ``sides``: streams that go around the chain, :mod:`avdnn.media.streams.sidepath`, each
    fed through this sink, its :class:`~avdnn.media.streams.sidepath.SideOutput`), then
    :meth:`begin` opens the target. The first video stream is written through the sink itself
    (:meth:`write`); the others through their :attr:`lanes`. Every packet goes through one
    interleaver, so the muxer sees ffmpeg's order. The other arguments are the output's options,
    the defaults of every video stream.
    """

    sides: list[SidePath]
    ready: bool
    _order: list[SidePath | VideoLane]
    _videos: VideoStreams

    def __init__(
        self,
        target: str | BinaryIO,
        *,
        format: str | None = None,  # noqa: A002 - ffmpeg's -f
        codec: str | None = None,
        pix_fmt: str | None = None,
        rate: Fraction | None = None,
        overwrite: bool | None = None,
        bitexact: bool = False,
        codec_options: dict[str, str] | None = None,
        fps_mode: str = "auto",
        metadata: dict[str, str] | None = None,
        start_time: int | None = None,
        recording_time: int | None = None,
        format_options: dict[str, str] | None = None,
        size: tuple[int, int] | None = None,
        stopped: Callable[[], bool] | None = None,
    ) -> None:
        self.target = target
        self.metadata = dict(metadata or {})
        #: Output -ss and -t (-to minus -ss), in microseconds, as ffmpeg's OptionsContext keeps them.
        self.start_time = start_time
        self.recording_time = recording_time
        self._size = size
        #: Gives the display matrix the first video stream carries (the input's, with -noautorotate),
        #: read when its encoder opens on the first frame.
        self.display_matrix: Callable[[], Sequence[int] | None] | None = None
        #: Called with the PyAV container once its header is written (ffmpeg's ``Output #0`` dump).
        self.on_header: Callable[[Any], object] | None = None
        #: Called at close once the first video stream has ended, before the side streams end
        #: (the other inputs' demuxers and the other video streams' pipelines finish).
        self.before_sides_end: list[Callable[[], None]] = []
        #: Called when the output is aborted (an error): whatever feeds it stops.
        self.on_abort: list[Callable[[], None]] = []
        self.rate = rate
        self.pix_fmt = pix_fmt
        self.format_options = dict(format_options or {})
        #: ffmpeg's two flags: -fflags +bitexact (the muxer's) and -flags +bitexact (the encoders');
        #: -bitexact (``bitexact``) sets both.
        self.bitexact = bitexact or "bitexact" in str(codec_options and codec_options.get("flags", "")).split("+")
        self.codec_options = dict(codec_options or {})
        self._closed = False
        self._muxer = Muxer(
            target,
            format=format,
            overwrite=overwrite,
            bitexact=bitexact,
            format_options=self.format_options,
            stopped=stopped,
        )
        self.name = self._muxer.name
        self._fps_mode = fps_mode
        self._codec = codec
        self._max_packets: int | None = None
        #: The output's video streams in output order (the first one is written through the sink).
        self.lanes: list[VideoLane] = []
        self._set_order((), 0)
        #: Metadata of the output's streams by output index, and chapters (set by the run plan).
        self.stream_metadata: dict[int, dict[str, str]] = {}
        #: AVStream dispositions by output index (run.selection.plan_dispositions)
        self.dispositions: list[int] = []
        self.chapters: list[Any] = []

    # -- the output's streams -------------------------------------------------------------

    def set_streams(self, sides: Sequence[SidePath], videos: Sequence[tuple[int, VideoSettings]] = ()) -> None:
        """The output's streams: its video streams (output index, settings) and ``sides`` in order.

        Each video stream's encoder is chosen here (``Unknown encoder`` and ffmpeg's "Automatic
        encoder selection failed" are raised now, as ffmpeg's choose_encoder raises them).
        """
        self._set_order(sides, len(videos))
        self.lanes = [self._new_lane(index, nth, settings) for nth, (index, settings) in enumerate(videos)]
        self._videos.set(self.lanes)
        at = {lane.video_index: lane for lane in self.lanes}
        remaining = iter(self.sides)
        self._order = [at[i] if i in at else next(remaining) for i in range(len(self.sides) + len(self.lanes))]
        for side in self.sides:
            side.attach(self)

    def begin(self) -> None:
        """Open the target (the streams are set); an output without video writes its header now."""
        try:
            self._muxer.open()
            if not self.lanes and self.sides:
                with self.lock:
                    self._create_outputs()
        except BaseException:
            self.abort()
            raise

    def _new_lane(self, index: int, nth: int, settings: VideoSettings) -> VideoLane:
        rate = settings.rate or self.rate
        muxer = self._muxer
        fps_mode = (
            auto_fps_mode(muxer.format_name, muxer.flags, rate is not None)
            if self._fps_mode == "auto"
            else self._fps_mode
        )
        codec = settings.codec or self._codec or muxer.video_encoder()

        def progress(end: Fraction, at_limit: bool) -> None:
            if nth == 0:  # the side streams follow the first video stream
                self._video_at(end, at_limit)
            elif at_limit:
                self._meet.finish_at(index, end)

        encoder = VideoEncoder(
            codec,
            name=self.name,
            pix_fmt=settings.pix_fmt or self.pix_fmt,
            rate=rate,
            fps_mode=fps_mode,
            options={**self.codec_options, **settings.options},
            bitexact=self.bitexact,
            start_time=self.start_time,
            recording_time=self.recording_time,
            fill_durations=muxer.hashed,
            mux=lambda packet, tb: self._meet.push(index, packet, tb),
            progress=progress,
        )
        size = settings.size or self._size
        lane = VideoLane(self._videos, encoder, video_index=index, nth=nth, size=size, trim=self.trim_filter())
        if self._max_packets is not None:
            encoder.max_packets = self._max_packets
        return lane

    def _set_order(self, sides: Sequence[SidePath], videos: int) -> None:
        """The side streams, the interleaver of the output's ``videos`` + sides streams, and the
        meeting of its video streams (their lanes are put in order by :meth:`set_streams`)."""
        self.sides = list(sides)
        self._order = list(self.sides)
        self._meet = SideSync(
            len(self.sides) + videos,
            self._write_packet,
            video=videos > 0,
            on_video=[side.on_video for side in self.sides],
            on_drop=self._dropped_at_cut,
        )
        #: Held by every thread that encodes or muxes into this output.
        self.lock = self._meet.lock
        self._videos = VideoStreams(
            lock=self.lock,
            create=self._create_outputs,
            ready=lambda: self.ready,
            end_stream=self._meet.end,
            name=self.name,
        )
        self.ready = False

    def fail_lane(self, lane: VideoLane, error: BaseException) -> None:
        """A video stream's pipeline failed: the output fails (its first stream stops at its next frame)."""
        self._videos.fail_lane(lane, error)

    @property
    def video_index(self) -> int | None:
        """The output index of the first video stream (None: the output has no video)."""
        return self.lanes[0].video_index if self.lanes else None

    @property
    def stream_order(self) -> list[SidePath | VideoLane]:
        """The output's streams in order: a side path, or a video stream."""
        return list(self._order)

    def default_codec(self, media_type: str) -> str | None:
        """The muxer's default encoder for a stream type (what ffmpeg picks without -c)."""
        return self._muxer.default_codec(media_type)

    @property
    def muxer_name(self) -> str:
        return self._muxer.muxer_name

    @property
    def takes_no_stream(self) -> bool:
        """Whether the muxer writes a file without streams (ffmpeg's AVFMT_NOSTREAMS)."""
        return self._muxer.takes_no_stream

    def reopen_output(self) -> None:
        """Connect a network output again and write its header anew (:meth:`Muxer.reopen`).

        The seam a service uses to reconnect a pushed output after a lost peer: call it from the
        error handler of a failed write, or between frames; it takes the output's lock."""
        with self.lock:
            self._muxer.reopen()

    def trim_filter(self, audio: bool = False) -> tuple[str, str] | None:
        """The trim/atrim ffmpeg appends to an encoded stream's graph for output -ss/-t (insert_trim)."""
        args = []
        if self.recording_time is not None:
            args.append(f"durationi={self.recording_time}us")
        if self.start_time is not None:
            args.append(f"starti={self.start_time}us")
        return ("atrim" if audio else "trim", ":".join(args)) if args else None

    def _side_output(self, side: SidePath) -> tuple[Any, Fraction]:
        """A side stream's output stream (or hash header entry) and time base; its encoder's
        refusal is reported naming the stream and the encoder, as ffmpeg's enc_open does."""
        import av

        try:
            if not self._muxer.hashed:
                out = side.add_output(self._muxer.container)
                return out, Fraction(out.time_base) if out.time_base else Fraction(side.time_base)
            out = side.hash_stream()
            return out, out.time_base
        except (av.FFmpegError, ValueError) as exc:
            err = from_av_error(exc, file=self.name)
            err.message = f"stream {side.stats.label}: could not open encoder '{side.codec_name}': {err.message}"
            raise err from exc

    def _lane_output(self, lane: VideoLane) -> tuple[Any, Fraction]:
        import av

        assert lane.first is not None
        frame, rate, tb = lane.first
        matrix = self.display_matrix if lane.nth == 0 else lane.display_matrix
        try:
            return lane.encoder.open(self._muxer.container, frame, rate, tb, matrix), tb
        except (av.FFmpegError, ValueError) as exc:
            err = from_av_error(exc, file=self.name)
            which = f"video stream #{lane.nth}: " if len(self.lanes) > 1 else ""
            err.message = (
                f"{which}could not open encoder '{lane.codec_name}' for {frame.width}x{frame.height} "
                f"{frame.format}: {err.message}"
            )
            self._videos.record(lane, err)
            raise err from exc

    def _create_outputs(self) -> None:
        """Every output stream, in output order, then the header; held side data may then flow."""
        streams = [
            self._lane_output(entry) if isinstance(entry, VideoLane) else self._side_output(entry)
            for entry in self._order
        ]
        self._muxer.write_header(
            streams,
            metadata=self.metadata,
            stream_metadata=self.stream_metadata,
            dispositions=self.dispositions,
            chapters=self.chapters,
            on_header=self.on_header,
        )
        self.ready = True
        self._meet.start()
        for side in self.sides:
            side.muxing_queue.release()
            side.on_ready()

    def _video_at(self, end: Fraction, at_limit: bool) -> None:
        """An encoded frame ends at ``end`` (s): the side streams may follow (and end there at -frames:v)."""
        if not self.sides:
            return
        if at_limit:
            assert self.video_index is not None
            self._meet.finish_at(self.video_index, end)
        self._meet.video_progress(end)

    # -- the side streams (SideOutput) ----------------------------------------------------

    def push_side(self, side: SidePath, packet: Any, tb: Fraction) -> None:
        """A packet of a side stream (``tb``: its time base), into the interleaver (held, bounded as
        ffmpeg's muxing queue, while the header waits for the video)."""
        with self.lock:
            if not self.ready:
                side.hold_before_header(packet.size)
            self._meet.push(side.out_index, packet, tb)

    def finish_side_at(self, side: SidePath, end: Fraction) -> None:
        """A copied video reached -frames:v, ending at ``end`` (s): the other streams end there too."""
        self._meet.finish_at(side.out_index, end)

    def end_side(self, side: SidePath) -> None:
        self._meet.end(side.out_index)

    def stream_ended(self, side: SidePath) -> bool:
        """Whether a side stream takes no more packets (ended, or past a frame limit's end)."""
        return self._meet.ended(side.out_index)

    def past_cut(self, end: Fraction) -> bool:
        """Whether something ending at ``end`` (s) lies past where a frame limit ended the output."""
        return self._meet.past_cut(end)

    def sync_hold(self, end: Fraction) -> bool:
        """ffmpeg's sync queue: with a frame limit, other streams wait for the video to get as far."""
        return self._meet.sync_hold(end, limited=bool(self.lanes) and self.video.max_packets is not None)

    def wait_for_video(self, time: Fraction, stopped: Callable[[], bool], lead: Fraction = Fraction(1)) -> None:
        """Block a stream of another input until the video is within ``lead`` s of ``time`` (see SideSync)."""
        self._meet.wait_for_video(time, stopped, lead)

    def wake(self) -> None:
        """Wake every :meth:`wait_for_video` (to re-check its ``stopped``)."""
        self._meet.wake()

    @property
    def packets_held_peak(self) -> int:
        """The most packets the interleaver ever held at once (bounded by the video pipeline's depth)."""
        return self._meet.peak

    def _dropped_at_cut(self, index: int) -> None:
        side = self._order[index]
        if isinstance(side, SidePath):
            late = "output frame limit reached (ffmpeg's sync queue)"
            side.stats.drop(late if self.ready else "output ended before its header")

    def _write_packet(self, index: int, packet: Any) -> None:
        """One packet, in interleaved order, to the muxer (called under the lock)."""
        self._muxer.write_packet(index, packet)
        side_path = self._order[index]
        if isinstance(side_path, SidePath):
            side_path.stats.packets_written += 1

    # -- the end --------------------------------------------------------------------------

    def close(self) -> None:
        """Flush the sync and the encoders and write the trailer; the output stays valid after errors.

        The side streams end here too (what they still hold is encoded; after a frame limit, cut
        where ffmpeg cuts it), and every packet left in the interleaver is written in order. Each
        step runs even when an earlier one failed (the trailer above all); the first error is raised.
        """
        import av

        if self._closed:
            return
        self._closed = self._meet.closed = True
        self._videos.close()  # a video stream waiting for the header stops waiting
        errors: list[BaseException] = []

        def step(fn: Callable[[], Any]) -> None:
            try:
                fn()
            except AvdnnError as exc:
                errors.append(exc)
            except (av.FFmpegError, OSError) as exc:
                err = from_av_error(exc, file=self.name)
                err.__cause__ = exc
                errors.append(err)

        def flush_video() -> None:
            if self.lanes:
                self.video.flush()

        def end_video() -> None:
            if self.video_index is not None:
                self._meet.video_progress(None)
                self._meet.end(self.video_index)

        step(flush_video)
        step(end_video)
        for hook in self.before_sides_end:
            step(hook)  # the other inputs' demuxers finish feeding their streams
        if self.ready:
            for side in self.sides:
                step(side.end)
        step(self._meet.flush if self.ready else self._meet.discard)  # no header: nothing can be written
        for close in self._muxer.close_steps():
            step(close)
        if errors:
            raise errors[0]

    def abort(self) -> None:
        """Close after a failure, keeping an error of the close itself from masking the first;
        whatever else feeds the output (its other video streams) is stopped first."""
        for hook in self.on_abort:
            with contextlib.suppress(AvdnnError):
                hook()
        with contextlib.suppress(AvdnnError):
            self.close()
