"""Video sinks: any muxer and encoder PyAV has, written the way the ffmpeg CLI writes them.

Containers (mp4, mkv, webm, png sequences...) go through libavformat via PyAV; FFmpeg's
hash muxers (md5, framemd5, crc...) through :mod:`.hashmux`, byte-compatible with ffmpeg's.
What the ffmpeg CLI adds on top of the libraries is reproduced here: the default codec of
the muxer, the encoder time base (1/frame rate), the pixel formats the encoder takes, and
the frame-rate sync (:mod:`.vsync`, ``-fps_mode`` auto: passthrough, vfr or cfr from the
muxer's flags; ``-r`` means constant rate). A sink closed after an error still flushes
its encoder and writes its trailer, so the file is valid with the frames before the error.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, BinaryIO

from avdnn.errors import AvdnnError, InvalidArgumentError, IOFailureError, NotFoundError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.output.hashmux import HASH_MUXERS, HashMuxer, HashStream
from avdnn.media.output.interleave import Interleaver
from avdnn.media.output.videoenc import AVFMT_VARIABLE_FPS, IMAGE2_CODECS, auto_fps_mode, open_video_encoder
from avdnn.media.output.vsync import VideoSync
from avdnn.media.streams.sidepath import SidePath


def _packet_flags(packet: Any) -> int:
    """AVPacket.flags from PyAV's booleans (KEY, CORRUPT, DISCARD, TRUSTED, DISPOSABLE)."""
    bits = (packet.is_keyframe, packet.is_corrupt, packet.is_discard, packet.is_trusted, packet.is_disposable)
    return sum(1 << i for i, b in enumerate(bits) if b)


class Sink:
    """Encodes and muxes avdnn Frames into one output (a path, ``-`` for stdout, or a file object).

    Besides the video stream (output index ``video_index``; None: no video), the output carries
    the ``sides``: streams that go around the chain (:mod:`.sidepath`), in output order. All
    output streams are created together, in that order, when the video encoder opens on the first
    frame (its size and rate come from the chain), and every packet goes through one
    :class:`~.interleave.Interleaver`, so the muxer sees ffmpeg's order.
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
        import av

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
        self._hash: HashMuxer | None = None
        self._container: Any = None
        #: Called with the PyAV container once its header is written (ffmpeg's ``Output #0`` dump).
        self.on_header: Callable[[Any], object] | None = None
        #: Called at close once the video has ended, before the side streams end.
        self.before_sides_end: list[Callable[[], None]] = []
        self.set_streams((), 0)  # replaced below; set so that abort() works at any point
        self.name = "pipe:" if target == "-" else target if isinstance(target, str) else "<file>"
        self.pix_fmt = pix_fmt
        self.rate = rate
        self.format_options = dict(format_options or {})
        #: ffmpeg's two flags: -fflags +bitexact (the muxer's) and -flags +bitexact (the encoders');
        #: -bitexact (``bitexact``) sets both.
        fmt_bitexact = bitexact or "bitexact" in self.format_options.get("fflags", "").replace("-", "+").split("+")
        self.bitexact = bitexact or "bitexact" in str(codec_options and codec_options.get("flags", "")).split("+")
        self.codec_options = dict(codec_options or {})
        self.frames_received = 0
        #: Frames the encoder did not take because they lie past the output's -t (check_recording_time).
        self.frames_past_time = 0
        #: Frames handed to the encoder, duplicates included (what -frames:v counts).
        self.packets_encoded = 0
        #: -frames:v: stop handing frames to the encoder after this many.
        self.max_packets: int | None = None
        self._enc: Any = None
        self._sync: VideoSync[Any] | None = None
        self._durations: dict[int, int] = {}
        self._rate_known = True  # the encoder time base is 1/rate (set when it opens)
        self._closed = False
        self._file: Any = None
        pipe = isinstance(target, str) and (target == "-" or target.startswith("pipe:"))
        if isinstance(target, str) and not pipe:
            self._check_path(target, overwrite)
        # "-" is Python's stdout (where an embedding program or a test captures it); pipe:N is
        # libavformat's pipe protocol on that descriptor, as ffmpeg opens it
        file: Any = sys.stdout.buffer if target == "-" else target
        if pipe and format is None:
            raise InvalidArgumentError(f"Unable to choose an output format for '{self.name}'; use -f", file=self.name)
        if format in HASH_MUXERS:
            if pipe and isinstance(target, str) and target != "-":
                fd = int(target[5:] or 1)
                self._file = file = open(fd, "wb", closefd=False)  # noqa: SIM115 - closed in close()
            elif isinstance(file, str):
                try:
                    self._file = file = open(file, "wb")  # noqa: SIM115 - closed in close()
                except OSError as exc:
                    raise from_av_error(exc, file=self.name) from exc
            lavf = "Lavf" + ".".join(map(str, av.library_versions["libavformat"]))
            self._hash = HashMuxer(format, file, software=None if fmt_bitexact else lavf)
            muxer_name, flags, default_codec = format, AVFMT_VARIABLE_FPS, "rawvideo"
        else:
            try:
                options = dict(self.format_options)
                if bitexact:
                    options["fflags"] = options.get("fflags", "") + "+bitexact"
                self._container = av.open(file, "w", format=format, options=options)
            except (av.FFmpegError, OSError) as exc:
                raise from_av_error(exc, file=self.name) from exc
            except ValueError as exc:
                what = f"output format '{format}'" if format else "an output format"
                raise InvalidArgumentError(f"Unable to find {what} for '{self.name}'", file=self.name) from exc
            muxer_name, flags = self._container.format.name, self._container.format.flags
            default_codec = self._container.default_video_codec
            if muxer_name in ("image2", "image2pipe") and isinstance(target, str):
                default_codec = IMAGE2_CODECS.get(target.rsplit(".", 1)[-1].lower(), default_codec)
            if default_codec in (None, "none", "wrapped_avframe"):
                default_codec = "rawvideo"
        self.fps_mode = auto_fps_mode(muxer_name, flags, rate is not None) if fps_mode == "auto" else fps_mode
        self.codec_name: str = codec or default_codec
        try:
            self._codec = av.Codec(self.codec_name, "w")
        except (av.FFmpegError, ValueError) as exc:
            self.abort()
            raise NotFoundError(f"Unknown encoder '{self.codec_name}'", file=self.name) from exc
        self._choose_pix_fmt()
        #: Metadata of the output's streams by output index, and chapters (set by the run plan).
        self.stream_metadata: dict[int, dict[str, str]] = {}
        #: AVStream dispositions by output index (graph.plan.plan_dispositions)
        self.dispositions: list[int] = []
        self.chapters: list[Any] = []
        self.set_streams(sides, video_index)

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
        self._interleaver = Interleaver(n, self._write_packet, on_drop=self._dropped_at_cut)
        #: Held by every thread that encodes or muxes into this output.
        self.lock: threading.RLock = self._interleaver._lock
        #: Notified whenever the video advances (streams of other inputs pace themselves on it).
        self._video_cond = threading.Condition(self.lock)
        self.ready = False
        self._out_streams: list[Any] = [None] * n
        self._hash_tbs: list[Fraction] = [Fraction(1)] * n
        #: End time (s) of the last video frame handed to the encoder.
        self.video_head: Fraction | None = Fraction(-1) if video_index is not None else None
        self._video_done = video_index is None
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

    def _write_metadata(self) -> None:
        """Global and per-stream metadata and chapters, as the plan decided (ffmpeg's -map_metadata)."""
        self._container.metadata.update(self.metadata)
        for key in [k for k, v in self.metadata.items() if v == ""]:  # -metadata key= deletes it
            del self._container.metadata[key]
        for index, tags in self.stream_metadata.items():
            out = self._out_streams[index]
            out.metadata.update(tags)
            for key in [k for k, v in tags.items() if v == ""]:
                del out.metadata[key]
        for index, disposition in enumerate(self.dispositions):
            if disposition and index < len(self._out_streams):
                self._out_streams[index].disposition = disposition
        if self.chapters:
            self._container.set_chapters(self.chapters)

    def default_codec(self, media_type: str) -> str | None:
        """The muxer's default encoder for a stream type (what ffmpeg picks without -c)."""
        if self._hash is not None:
            return {"video": "rawvideo", "audio": "pcm_s16le"}.get(media_type)
        name = getattr(self._container, f"default_{media_type}_codec", None)
        return None if name in (None, "none") else str(name)

    @property
    def muxer_name(self) -> str:
        return self._hash.fmt if self._hash is not None else str(self._container.format.name)

    def accepts_codec(self, codec_name: str) -> bool:
        """Whether the muxer can carry a stream of this codec (avformat_query_codec)."""
        if self._hash is not None:
            return True
        try:
            import av

            return av.Codec(codec_name, "r").name in self._container.supported_codecs
        except Exception:  # noqa: BLE001 - unknown codec names: the muxer decides when writing
            return True

    @staticmethod
    def _check_path(path: str, overwrite: bool | None) -> None:
        if os.path.exists(path) and not overwrite:
            raise IOFailureError(
                f"File '{path}' already exists. " + ("Exiting." if overwrite is False else "Use -y to overwrite."),
                code=-17,
                file=path,
            )
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise NotFoundError("No such file or directory", file=path)

    def trim_filter(self, audio: bool = False) -> tuple[str, str] | None:
        """The trim/atrim ffmpeg appends to an encoded stream's graph for output -ss/-t (insert_trim)."""
        args = []
        if self.recording_time is not None:
            args.append(f"durationi={self.recording_time}us")
        if self.start_time is not None:
            args.append(f"starti={self.start_time}us")
        return ("atrim" if audio else "trim", ":".join(args)) if args else None

    def _choose_pix_fmt(self) -> None:
        """A -pix_fmt the encoder does not take becomes its closest one, with ffmpeg's warning
        (moviepy asks libx264 for yuva420p)."""
        names = [f.name for f in self._codec.video_formats or ()]
        if self.pix_fmt is None or not names or self.pix_fmt in names:
            return
        from avdnn.media.libav.codecs import best_pix_fmt

        best = best_pix_fmt(names, self.pix_fmt)
        logging.getLogger("avdnn").warning(
            "Incompatible pixel format '%s' for codec '%s', auto-selecting format '%s'",
            self.pix_fmt,
            self.codec_name,
            best,
        )
        self.pix_fmt = best

    def accepted_pix_fmts(self) -> list[str] | None:
        """Pixel formats the encoder takes (the ffmpeg CLI appends format= with these); None: any."""
        if self.pix_fmt:
            return [self.pix_fmt]
        formats = self._codec.video_formats
        return None if not formats else [f.name for f in formats]

    def accepted_color_ranges(self) -> list[str] | None:
        """Colour ranges the encoder takes ("tv", "pc"), as ffmpeg adds them to its format=."""
        try:
            from avdnn.media.libav.codecs import encoder_color_ranges

            return encoder_color_ranges(self.codec_name)
        except AvdnnError:
            return None

    # -- writing --------------------------------------------------------------------------

    def _open(self, frame: Frame, rate: Fraction | None) -> None:
        import av

        known = self.rate or rate
        rate = Fraction(known or 25)
        tb = 1 / rate
        self._rate_known = bool(known)
        if not known and self.fps_mode in ("vfr", "passthrough") and frame.time_base:
            tb = Fraction(frame.time_base)  # ffmpeg's choose_out_timebase: no rate known, the filter's time base
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
        self._sync = VideoSync(self.fps_mode, tb, self.start_time or 0)

    def _video_encoder(self, frame: Frame, rate: Fraction, tb: Fraction) -> Any:
        self._enc, out = open_video_encoder(
            self._container,
            self.codec_name,
            self._codec.canonical_name,
            frame,
            rate,
            tb,
            options=self.codec_options,
            bitexact=self.bitexact,
            display_matrix=self.display_matrix,
        )
        return out

    def _side_output(self, side: SidePath) -> tuple[Any, Fraction]:
        """A side stream's output stream (or hash header entry) and time base; its encoder's
        refusal is reported naming the stream and the encoder, as ffmpeg's enc_open does."""
        import av

        try:
            if self._container is not None:
                out = side.add_output(self._container)
                return out, Fraction(out.time_base) if out.time_base else Fraction(side.time_base)
            out = side.hash_stream()
            return out, out.time_base
        except (av.FFmpegError, ValueError) as exc:
            err = from_av_error(exc, file=self.name)
            err.message = f"stream {side.stats.label}: could not open encoder '{side.codec_name}': {err.message}"
            raise err from exc

    def _create_outputs(self, video: tuple[Frame, Fraction, Fraction] | None) -> None:
        """Every output stream, in output order, then the header; held side data may then flow."""
        import av

        hash_streams: list[HashStream] = []
        for i, side in enumerate(self._order):
            if side is None:
                assert video is not None
                out = self._video_encoder(*video)
                tb = video[2]
            else:
                out, tb = self._side_output(side)
            self._out_streams[i] = out
            self._hash_tbs[i] = tb
            if isinstance(out, HashStream):
                hash_streams.append(out)
        if self._hash is not None:
            self._hash.write_header(hash_streams)
        else:
            self._write_metadata()
            try:
                self._container.start_encoding()
            except (av.FFmpegError, ValueError) as exc:  # the muxer refused the streams' parameters
                err = from_av_error(exc, file=self.name)
                err.message = f"could not write the header (incorrect codec parameters?): {err.message}"
                raise err from exc
            if self.on_header is not None:
                self.on_header(self._container)
        self.ready = True
        self._interleaver.start()
        for side in self.sides:
            side.on_ready()

    @property
    def started(self) -> bool:
        """Whether the encoder is open (a first frame came, or :meth:`start` was called)."""
        return self._sync is not None

    def start(
        self, width: int, height: int, pix_fmt: str, *, sar: Fraction | None = None, rate: Fraction | None = None
    ) -> None:
        """Open the encoder without a frame: ffmpeg still writes header and trailer when
        no frame reaches the output (``select=0``), from what the filter graph negotiated."""
        if self._sync is None:
            self._open(Frame(None, pix_fmt, width, height, sample_aspect_ratio=sar), rate)

    def write(self, frame: Frame, rate: Fraction | None = None) -> None:
        """Encode one frame (rate: the chain's output frame rate, for the time base)."""
        if self._sync is None:
            self._open(frame, rate)
        assert self._sync is not None
        self.frames_received += 1
        self._encode(self._sync.push(frame, frame.pts, frame.time_base, frame.duration), frame.pts)

    def _encode(self, items: Any, pts: int | None) -> None:
        import av

        try:
            for src, out_pts, duration in items:
                if self.max_packets is not None and self.packets_encoded >= self.max_packets:
                    break
                if self._past_recording_time(out_pts):
                    self.frames_past_time += 1
                    continue
                av_frame = src.to_av()
                av_frame.pts = out_pts
                av_frame.time_base = self._sync.tb if self._sync else None
                av_frame.duration = duration
                av_frame.pict_type = 0  # the encoder decides (a decoded I frame must not force one)
                if self._hash is not None:  # the hash muxers fill a packet's missing duration from it
                    self._durations[out_pts] = duration
                self._mux(self._enc.encode(av_frame))
                self.packets_encoded += 1
                if self.sides:
                    end = (out_pts + (duration or 1)) * self._sync.tb if self._sync and out_pts is not None else None
                    if end is not None:
                        if self.max_packets is not None and self.packets_encoded >= self.max_packets:
                            assert self.video_index is not None
                            self._interleaver.finish_at(self.video_index, end)
                        self._video_progress(end)
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name).with_context(pts=pts) from exc

    def _mux(self, packets: Any) -> None:
        """The video encoder's packets, into the interleaver."""
        assert self.video_index is not None and self._sync is not None
        tb = self._sync.tb
        for packet in packets:
            if self._hash is not None:
                # libavformat's muxing (ff_compute_frame_duration) fills a missing (zero) duration with
                # one frame of the stream's rate, 1 in the encoder time base 1/rate; with no rate known,
                # one tick of a time base coarser than 1/1000 (nothing for a finer one)
                tick = self._rate_known or tb.numerator * 1000 > tb.denominator
                packet.duration = packet.duration or self._durations.pop(packet.pts, 0) or int(tick)
                self._durations.pop(packet.pts, None)
            ts = packet.dts if packet.dts is not None else packet.pts
            time = ts * tb if ts is not None else None
            end = (ts + (packet.duration or 0)) * tb if ts is not None else None
            self._interleaver.push(self.video_index, packet, time, end)

    def _past_recording_time(self, out_pts: int | None) -> bool:
        """ffmpeg's check_recording_time at the encoder: the output's -t ends the stream there."""
        if self.recording_time is None or out_pts is None or self._sync is None:
            return False
        return out_pts * self._sync.tb >= Fraction(self.recording_time, 1_000_000)

    def push_side(self, side: SidePath, packet: Any, tb: Fraction) -> None:
        """A packet of a side stream (``tb``: its time base), into the interleaver."""
        ts = packet.dts if packet.dts is not None else packet.pts
        time = ts * tb if ts is not None else None
        end = (ts + (packet.duration or 0)) * tb if ts is not None else None
        self._interleaver.push(side.out_index, packet, time, end)

    def finish_side_at(self, side: SidePath, end: Fraction) -> None:
        """A copied video reached -frames:v, ending at ``end`` (s): the other streams end there too."""
        self._interleaver.finish_at(side.out_index, end)

    def end_side(self, side: SidePath) -> None:
        self._interleaver.end(side.out_index)

    def stream_ended(self, side: SidePath) -> bool:
        """Whether a side stream takes no more packets (ended, or past a frame limit's end)."""
        return self._interleaver.ended(side.out_index)

    @property
    def packets_held_peak(self) -> int:
        """The most packets the interleaver ever held at once (bounded by the video pipeline's depth)."""
        return self._interleaver.peak

    @property
    def frame_limit_reached(self) -> bool:
        return self._interleaver.cut is not None

    def past_cut(self, end: Fraction) -> bool:
        """Whether something ending at ``end`` (s) lies past where a frame limit ended the output."""
        return self._interleaver.past_cut(end)

    def sync_hold(self, end: Fraction) -> bool:
        """ffmpeg's sync queue: with a frame limit, other streams wait for the video to get as far."""
        if self.max_packets is None or self._video_done or self.video_head is None:
            return False
        return self.video_head < end

    def wait_for_video(self, time: Fraction, stopped: Callable[[], bool], lead: Fraction = Fraction(1)) -> None:
        """Block until the video has got within ``lead`` seconds of ``time`` (or ended, or ``stopped()``).

        A stream of another input is demuxed on its own thread; this keeps it from running ahead
        of the video and piling up in the interleaver, as ffmpeg's reading of the input whose
        output stream is furthest behind does.
        """
        with self._video_cond:
            self._video_cond.wait_for(
                lambda: (
                    self._video_done
                    or self.video_head is None
                    or self._closed
                    or self.video_head >= time - lead
                    or stopped()
                )
            )

    def wake(self) -> None:
        """Wake every :meth:`wait_for_video` (to re-check its ``stopped``)."""
        with self._video_cond:
            self._video_cond.notify_all()

    def _video_progress(self, end: Fraction | None) -> None:
        """The video reached ``end`` (s); None: it ended. Lets waiting side streams go on."""
        with self.lock:
            if end is None:
                self._video_done = True
            else:
                self.video_head = end
            for side in self.sides:
                side.on_video()
            self._video_cond.notify_all()

    def _dropped_at_cut(self, index: int) -> None:
        side = self._order[index]
        if side is not None:
            side.stats.drop("output frame limit reached (ffmpeg's sync queue)")

    def _write_packet(self, index: int, packet: Any) -> None:
        """One packet, in interleaved order, to the muxer (called under the lock)."""
        import av

        try:
            if self._hash is None:
                packet.stream = self._out_streams[index]
                self._container.mux(packet)
            else:
                tb = self._hash_tbs[index]
                src = Fraction(packet.time_base) if packet.time_base else tb
                pts, dts, duration = packet.pts, packet.dts, packet.duration or 0
                if src != tb:
                    pts = None if pts is None else round(pts * src / tb)
                    dts = None if dts is None else round(dts * src / tb)
                    duration = round(duration * src / tb)
                side = [(sd.data_desc, bytes(sd)) for sd in packet.iter_sidedata()]
                self._hash.write_packet(
                    bytes(packet),
                    index=index,
                    pts=pts,
                    dts=dts,
                    duration=duration,
                    flags=_packet_flags(packet),
                    side_data=side,
                )
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name) from exc
        side_path = self._order[index]
        if side_path is not None:
            side_path.stats.packets_written += 1

    @property
    def frames_written(self) -> int:
        """Input frames that reached the output at least once."""
        return self.frames_received - self.frames_dropped

    @property
    def frames_dropped(self) -> int:
        """Frames never encoded: dropped by the video sync, or past the output's -t."""
        return (self._sync.dropped if self._sync else 0) + self.frames_past_time

    @property
    def frames_duplicated(self) -> int:
        return self._sync.duplicated if self._sync else 0

    def close(self) -> None:
        """Flush the sync and the encoders and write the trailer; the output stays valid after errors.

        The side streams end here too (what they still hold is encoded; after a frame limit, cut
        where ffmpeg cuts it), and every packet left in the interleaver is written in order. Each
        step runs even when an earlier one failed (the trailer above all); the first error is raised.
        """
        import av

        if self._closed:
            return
        self._closed = True
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
            if self._sync is not None:
                self._encode(self._sync.flush(), None)
                self._mux(self._enc.encode(None))

        def end_video() -> None:
            if self.video_index is not None:
                self._video_progress(None)
                self._interleaver.end(self.video_index)

        step(flush_video)
        step(end_video)
        for hook in self.before_sides_end:
            step(hook)  # the other inputs' demuxers finish feeding their streams
        if self.ready:
            for side in self.sides:
                step(side.end)
        step(self._interleaver.flush)
        if self._hash is not None:
            step(self._hash.write_trailer)
        elif self._container is not None:
            step(self._container.close)  # no header was written when no stream could open
        if self._file is not None:
            step(self._file.close)
        if self.target == "-":
            step(sys.stdout.buffer.flush)
        if errors:
            raise errors[0]

    def abort(self) -> None:
        """Close after a failure, keeping an error of the close itself from masking the first."""
        with contextlib.suppress(AvdnnError):
            self.close()
