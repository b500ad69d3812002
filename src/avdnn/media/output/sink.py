"""Video sinks: any muxer and encoder PyAV has, written the way the ffmpeg CLI writes them.

A :class:`Sink` is one output: its :class:`~.muxer.Muxer` (libavformat's, or a hash muxer),
its streams in output order (the chain's video and the side streams, :mod:`avdnn.media.streams`),
created together when the video encoder opens on the first frame, and the :class:`~.sidesync.SideSync`
where they meet. What the ffmpeg CLI adds on top of the libraries is reproduced here: the
default codec of the muxer, the encoder time base (1/frame rate), the pixel formats the encoder
takes, and the frame-rate sync (:mod:`.vsync`, ``-fps_mode`` auto: passthrough, vfr or cfr from
the muxer's flags; ``-r`` means constant rate). A sink closed after an error still flushes its
encoder and writes its trailer, so the file is valid with the frames before the error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, BinaryIO

from avdnn.errors import AvdnnError, NotFoundError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.output.muxer import Muxer
from avdnn.media.output.sidesync import SideSync
from avdnn.media.output.videoenc import VideoEncoder, auto_fps_mode
from avdnn.media.streams.sidepath import SidePath


class Sink:
    """Encodes and muxes avdnn Frames into one output (a path, ``-`` for stdout, or a file object).

    Besides the video stream (output index ``video_index``; None: no video), the output carries
    the ``sides``: streams that go around the chain (:mod:`avdnn.media.streams.sidepath`), in
    output order, each fed through this sink (it is their
    :class:`~avdnn.media.streams.sidepath.SideOutput`). All output streams are created together,
    in that order, when the video encoder opens on the first frame (its size and rate come from
    the chain), and every packet goes through one interleaver, so the muxer sees ffmpeg's order.
    """

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
        sides: Sequence[SidePath] = (),
        video_index: int | None = 0,
        metadata: dict[str, str] | None = None,
        start_time: int | None = None,
        recording_time: int | None = None,
        format_options: dict[str, str] | None = None,
        size: tuple[int, int] | None = None,
    ) -> None:
        self.target = target
        self.metadata = dict(metadata or {})
        #: Output -ss and -t (-to minus -ss), in microseconds, as ffmpeg's OptionsContext keeps them.
        self.start_time = start_time
        self.recording_time = recording_time
        #: Output -s WxH: the chain's frames are scaled to this size, as ffmpeg's autoscale does.
        self.size = size
        #: Gives the display matrix the video stream carries (the input's, with -noautorotate), read
        #: when the encoder opens on the first frame.
        self.display_matrix: Callable[[], Sequence[int] | None] | None = None
        #: Called with the PyAV container once its header is written (ffmpeg's ``Output #0`` dump).
        self.on_header: Callable[[Any], object] | None = None
        #: Called at close once the video has ended, before the side streams end.
        self.before_sides_end: list[Callable[[], None]] = []
        self.rate = rate
        self.format_options = dict(format_options or {})
        #: ffmpeg's two flags: -fflags +bitexact (the muxer's) and -flags +bitexact (the encoders');
        #: -bitexact (``bitexact``) sets both.
        self.bitexact = bitexact or "bitexact" in str(codec_options and codec_options.get("flags", "")).split("+")
        self.codec_options = dict(codec_options or {})
        self._closed = False
        self._muxer = Muxer(
            target, format=format, overwrite=overwrite, bitexact=bitexact, format_options=self.format_options
        )
        self.name = self._muxer.name
        self._video: VideoEncoder | None = None
        self.set_streams((), 0)  # replaced below; set so that abort() works from here on
        muxer = self._muxer
        self.fps_mode = (
            auto_fps_mode(muxer.format_name, muxer.flags, rate is not None) if fps_mode == "auto" else fps_mode
        )
        self.codec_name: str = codec or muxer.default_video_codec
        try:
            self._video = VideoEncoder(
                self.codec_name,
                name=self.name,
                pix_fmt=pix_fmt,
                rate=rate,
                fps_mode=self.fps_mode,
                options=self.codec_options,
                bitexact=self.bitexact,
                start_time=start_time,
                recording_time=recording_time,
                fill_durations=muxer.hashed,
                mux=self._video_packet,
                progress=self._video_at,
            )
        except NotFoundError:
            self.abort()
            raise
        #: Metadata of the output's streams by output index, and chapters (set by the run plan).
        self.stream_metadata: dict[int, dict[str, str]] = {}
        #: AVStream dispositions by output index (run.selection.plan_dispositions)
        self.dispositions: list[int] = []
        self.chapters: list[Any] = []
        self.set_streams(sides, video_index)

    @property
    def video(self) -> VideoEncoder:
        """The output's video encoder (its codec, pixel formats, counters)."""
        assert self._video is not None
        return self._video

    # -- the output's streams -------------------------------------------------------------

    def set_streams(self, sides: Sequence[SidePath], video_index: int | None = 0) -> None:
        """The output's streams: the video at ``video_index`` (None: none) and ``sides`` in order.

        Called before the first frame; an output without video opens at once.
        """
        self.sides = list(sides)
        self.video_index = video_index
        n = len(self.sides) + (video_index is not None)
        self._order: list[SidePath | None] = []
        remaining = iter(self.sides)
        for i in range(n):
            self._order.append(None if i == video_index else next(remaining))
        self._meet = SideSync(
            n,
            self._write_packet,
            video=video_index is not None,
            on_video=[side.on_video for side in self.sides],
            on_drop=self._dropped_at_cut,
        )
        #: Held by every thread that encodes or muxes into this output.
        self.lock = self._meet.lock
        self.ready = False
        for side in self.sides:
            side.attach(self)
        if video_index is None and self.sides:
            try:
                self._create_outputs(None)
            except BaseException:
                self.abort()
                raise

    @property
    def stream_order(self) -> list[SidePath | None]:
        """The output's streams in order: a side path, or None for the chain's video."""
        return list(self._order)

    def default_codec(self, media_type: str) -> str | None:
        """The muxer's default encoder for a stream type (what ffmpeg picks without -c)."""
        return self._muxer.default_codec(media_type)

    @property
    def muxer_name(self) -> str:
        return self._muxer.muxer_name

    def trim_filter(self, audio: bool = False) -> tuple[str, str] | None:
        """The trim/atrim ffmpeg appends to an encoded stream's graph for output -ss/-t (insert_trim)."""
        args = []
        if self.recording_time is not None:
            args.append(f"durationi={self.recording_time}us")
        if self.start_time is not None:
            args.append(f"starti={self.start_time}us")
        return ("atrim" if audio else "trim", ":".join(args)) if args else None

    def accepted_pix_fmts(self) -> list[str] | None:
        """Pixel formats the encoder takes (the ffmpeg CLI appends format= with these); None: any."""
        return self.video.accepted_pix_fmts()

    def accepted_color_ranges(self) -> list[str] | None:
        """Colour ranges the encoder takes ("tv", "pc"), as ffmpeg adds them to its format=."""
        return self.video.accepted_color_ranges()

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

    def _create_outputs(self, video: tuple[Frame, Fraction, Fraction] | None) -> None:
        """Every output stream, in output order, then the header; held side data may then flow."""
        streams: list[tuple[Any, Fraction]] = []
        for side in self._order:
            if side is None:
                assert video is not None
                frame, rate, tb = video
                streams.append((self.video.open(self._muxer.container, frame, rate, tb, self.display_matrix), tb))
            else:
                streams.append(self._side_output(side))
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

    # -- the video ------------------------------------------------------------------------

    def _open(self, frame: Frame, rate: Fraction | None) -> None:
        import av

        rate, tb = self.video.timing(frame, rate)
        try:
            with self.lock:
                self._create_outputs((frame, rate, tb))
        except (av.FFmpegError, ValueError) as exc:
            err = from_av_error(exc, file=self.name)
            err.message = (
                f"could not open encoder '{self.codec_name}' for {frame.width}x{frame.height} "
                f"{frame.format}: {err.message}"
            )
            raise err from exc
        self.video.begin(tb)

    @property
    def started(self) -> bool:
        """Whether the encoder is open (a first frame came, or :meth:`start` was called)."""
        return self.video.started

    def start(
        self, width: int, height: int, pix_fmt: str, *, sar: Fraction | None = None, rate: Fraction | None = None
    ) -> None:
        """Open the encoder without a frame: ffmpeg still writes header and trailer when
        no frame reaches the output (``select=0``), from what the filter graph negotiated."""
        if not self.video.started:
            self._open(Frame(None, pix_fmt, width, height, sample_aspect_ratio=sar), rate)

    def write(self, frame: Frame, rate: Fraction | None = None) -> None:
        """Encode one frame (rate: the chain's output frame rate, for the time base)."""
        if not self.video.started:
            self._open(frame, rate)
        self.video.write(frame)

    def _video_packet(self, packet: Any, tb: Fraction) -> None:
        assert self.video_index is not None
        self._meet.push(self.video_index, packet, tb)

    def _video_at(self, end: Fraction, at_limit: bool) -> None:
        """An encoded frame ends at ``end`` (s): the side streams may follow (and end there at -frames:v)."""
        if not self.sides:
            return
        if at_limit:
            assert self.video_index is not None
            self._meet.finish_at(self.video_index, end)
        self._meet.video_progress(end)

    @property
    def max_packets(self) -> int | None:
        """-frames:v: stop handing frames to the encoder after this many."""
        return self.video.max_packets

    @max_packets.setter
    def max_packets(self, value: int | None) -> None:
        self.video.max_packets = value

    @property
    def packets_encoded(self) -> int:
        """Frames handed to the encoder, duplicates included (what -frames:v counts)."""
        return self.video.packets_encoded

    @property
    def frames_past_time(self) -> int:
        """Frames the encoder did not take because they lie past the output's -t (check_recording_time)."""
        return self.video.frames_past_time

    @property
    def frames_written(self) -> int:
        """Input frames that reached the output at least once."""
        return self.video.frames_received - self.video.frames_dropped

    @property
    def frames_dropped(self) -> int:
        """Frames never encoded: dropped by the video sync, or past the output's -t."""
        return self.video.frames_dropped

    @property
    def frames_duplicated(self) -> int:
        return self.video.frames_duplicated

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
        return self._meet.sync_hold(end, limited=self._video is not None and self._video.max_packets is not None)

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
        if side is not None:
            late = "output frame limit reached (ffmpeg's sync queue)"
            side.stats.drop(late if self.ready else "output ended before its header")

    def _write_packet(self, index: int, packet: Any) -> None:
        """One packet, in interleaved order, to the muxer (called under the lock)."""
        self._muxer.write_packet(index, packet)
        side_path = self._order[index]
        if side_path is not None:
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
            if self._video is not None:
                self._video.flush()

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
        """Close after a failure, keeping an error of the close itself from masking the first."""
        with contextlib.suppress(AvdnnError):
            self.close()
