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

import os
import sys
from fractions import Fraction
from typing import Any, BinaryIO

from ..errors import AvdnnError, InvalidArgumentError, IOFailureError, NotFoundError, from_av_error
from .frame import Frame
from .hashmux import HASH_MUXERS, HashMuxer
from .vsync import VideoSync

#: ffmpeg's image2 codec by file extension (libavformat/img2.c), for -f image2 outputs.
IMAGE2_CODECS = {"png": "png", "jpg": "mjpeg", "jpeg": "mjpeg", "bmp": "bmp", "tif": "tiff", "tiff": "tiff",
                 "ppm": "ppm", "pgm": "pgm", "pbm": "pbm", "pam": "pam", "webp": "libwebp", "gif": "gif",
                 "tga": "targa", "exr": "exr", "qoi": "qoi", "sgi": "sgi", "pcx": "pcx", "dpx": "dpx",
                 "jp2": "jpeg2000", "j2k": "jpeg2000", "xwd": "xwd", "pfm": "pfm", "phm": "phm", "hdr": "hdr"}
AVFMT_NOTIMESTAMPS = 0x80
AVFMT_VARIABLE_FPS = 0x400
AV_CODEC_FLAG_BITEXACT = 0x800000


def auto_fps_mode(format_name: str, flags: int, rate_given: bool) -> str:
    """ffmpeg's -fps_mode auto for a muxer (ffmpeg_mux_init.c); -r asks for a constant rate."""
    if format_name == "avi":
        mode = "vfr"
    elif flags & AVFMT_VARIABLE_FPS:
        mode = "passthrough" if flags & AVFMT_NOTIMESTAMPS else "vfr"
    else:
        mode = "vscfr"
    if rate_given and mode == "vfr":
        mode = "vscfr"
    return mode


def _packet_flags(packet: Any) -> int:
    """AVPacket.flags from PyAV's booleans (KEY, CORRUPT, DISCARD, TRUSTED, DISPOSABLE)."""
    bits = (packet.is_keyframe, packet.is_corrupt, packet.is_discard, packet.is_trusted, packet.is_disposable)
    return sum(1 << i for i, b in enumerate(bits) if b)


class Sink:
    """Encodes and muxes avdnn Frames into one output (a path, ``-`` for stdout, or a file object)."""

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
    ) -> None:
        import av

        self.target = target
        self.name = "pipe:" if target == "-" else target if isinstance(target, str) else "<file>"
        self.pix_fmt = pix_fmt
        self.rate = rate
        self.bitexact = bitexact
        self.codec_options = dict(codec_options or {})
        self.frames_received = 0
        #: Frames handed to the encoder, duplicates included (what -frames:v counts).
        self.packets_encoded = 0
        #: -frames:v: stop handing frames to the encoder after this many.
        self.max_packets: int | None = None
        self._enc: Any = None
        self._sync: VideoSync[Any] | None = None
        self._durations: dict[int, int] = {}
        self._closed = False
        self._file: Any = None
        self._hash: HashMuxer | None = None
        self._container: Any = None
        if isinstance(target, str) and target != "-":
            self._check_path(target, overwrite)
        file: Any = sys.stdout.buffer if target == "-" else target
        if target == "-" and format is None:
            raise InvalidArgumentError("Unable to choose an output format for 'pipe:'; use -f", file="pipe:")
        if format in HASH_MUXERS:
            if isinstance(file, str):
                try:
                    self._file = file = open(file, "wb")  # noqa: SIM115 - closed in close()
                except OSError as exc:
                    raise from_av_error(exc, file=self.name) from exc
            lavf = "Lavf" + ".".join(map(str, av.library_versions["libavformat"]))
            self._hash = HashMuxer(format, file, software=None if bitexact else lavf)
            muxer_name, flags, default_codec = format, AVFMT_VARIABLE_FPS, "rawvideo"
        else:
            try:
                options = {"fflags": "+bitexact"} if bitexact else {}
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

    @staticmethod
    def _check_path(path: str, overwrite: bool | None) -> None:
        if os.path.exists(path) and not overwrite:
            raise IOFailureError(
                f"File '{path}' already exists. " + ("Exiting." if overwrite is False else "Use -y to overwrite."),
                code=-17, file=path,
            )
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise NotFoundError("No such file or directory", file=path)

    def accepted_pix_fmts(self) -> list[str] | None:
        """Pixel formats the encoder takes (the ffmpeg CLI appends format= with these); None: any."""
        if self.pix_fmt:
            return [self.pix_fmt]
        formats = self._codec.video_formats
        return None if not formats else [f.name for f in formats]

    def accepted_color_ranges(self) -> list[str] | None:
        """Colour ranges the encoder takes ("tv", "pc"), as ffmpeg adds them to its format=."""
        try:
            from .libav import encoder_color_ranges

            return encoder_color_ranges(self.codec_name)
        except AvdnnError:
            return None

    # -- writing --------------------------------------------------------------------------

    def _open(self, frame: Frame, rate: Fraction | None) -> None:
        import av

        rate = Fraction(self.rate or rate or 25)
        tb = 1 / rate
        try:
            if self._container is not None:
                stream = self._container.add_stream(self.codec_name, rate=rate, options=self.codec_options)
                enc = stream.codec_context
            else:
                enc = av.CodecContext.create(self.codec_name, "w")
                enc.options = dict(self.codec_options)
            enc.width, enc.height, enc.pix_fmt = frame.width, frame.height, frame.format
            enc.thread_type, enc.thread_count = "AUTO", 0  # ffmpeg's defaults (PyAV's are slice threads)
            enc.time_base = tb
            enc.framerate = rate
            if frame.sample_aspect_ratio:
                enc.sample_aspect_ratio = frame.sample_aspect_ratio
            if self.bitexact:
                enc.flags |= AV_CODEC_FLAG_BITEXACT
            color = frame._color_props()
            if color is not None:
                enc.color_range, enc.colorspace, enc.color_primaries, enc.color_trc = color
            if self._container is not None:
                enc.open(strict=False)
                self._enc = stream
            else:
                enc.open()
                self._enc = enc
                assert self._hash is not None
                self._hash.write_header(time_base=tb, codec_name=self._codec.canonical_name, width=frame.width,
                                        height=frame.height, sar=frame.sample_aspect_ratio,
                                        extradata=enc.extradata or None)
        except (av.FFmpegError, ValueError) as exc:
            err = from_av_error(exc, file=self.name)
            err.message = (f"could not open encoder '{self.codec_name}' for {frame.width}x{frame.height} "
                           f"{frame.format}: {err.message}")
            raise err from exc
        self._sync = VideoSync(self.fps_mode, tb)

    @property
    def started(self) -> bool:
        """Whether the encoder is open (a first frame came, or :meth:`start` was called)."""
        return self._sync is not None

    def start(self, width: int, height: int, pix_fmt: str, *, sar: Fraction | None = None,
              rate: Fraction | None = None) -> None:
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
                av_frame = src.to_av()
                av_frame.pts = out_pts
                av_frame.time_base = self._sync.tb if self._sync else None
                av_frame.duration = duration
                av_frame.pict_type = 0  # the encoder decides (a decoded I frame must not force one)
                self._durations[out_pts] = duration
                self._mux(self._enc.encode(av_frame))
                self.packets_encoded += 1
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name).with_context(pts=pts) from exc

    def _mux(self, packets: Any) -> None:
        if self._hash is None:
            for packet in packets:
                self._container.mux(packet)
            return
        for packet in packets:
            # libavformat's muxing fills a missing (zero) duration with one frame of the stream's
            # rate, which is 1 in the encoder time base 1/rate
            duration = packet.duration or self._durations.pop(packet.pts, 0) or 1
            self._durations.pop(packet.pts, None)
            side = [(sd.data_desc, bytes(sd)) for sd in packet.iter_sidedata()]
            self._hash.write_packet(bytes(packet), pts=packet.pts, dts=packet.dts, duration=duration,
                                    flags=_packet_flags(packet), side_data=side)

    @property
    def frames_written(self) -> int:
        """Input frames that reached the output at least once."""
        return self.frames_received - self.frames_dropped

    @property
    def frames_dropped(self) -> int:
        return self._sync.dropped if self._sync else 0

    @property
    def frames_duplicated(self) -> int:
        return self._sync.duplicated if self._sync else 0

    def close(self) -> None:
        """Flush the sync and the encoder and write the trailer; the output stays valid after errors."""
        import av

        if self._closed:
            return
        self._closed = True
        try:
            if self._sync is not None:
                if self._container is not None:
                    self._container.start_encoding()  # the header, also when no frame came
                self._encode(self._sync.flush(), None)
                self._mux(self._enc.encode(None))
            if self._hash is not None:
                self._hash.write_trailer()
            elif self._container is not None:
                self._container.close()
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name) from exc
        finally:
            if self._file is not None:
                self._file.close()
            if self.target == "-":
                sys.stdout.buffer.flush()

    def abort(self) -> None:
        """Close after a failure, keeping an error of the close itself from masking the first."""
        try:
            self.close()
        except AvdnnError:
            pass
