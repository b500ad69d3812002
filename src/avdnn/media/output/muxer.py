"""One output's muxer: libavformat's through PyAV, or one of avdnn's hash muxers, on its target.

The target is opened as the ffmpeg CLI opens it (:mod:`.target`): a file (refused when it exists
without ``-y``, for a muxer that writes one file, as ffmpeg's assert_file_overwrite; or when its
folder does not), ``-`` for Python's stdout, ``pipe:N`` for a descriptor (a format is then
required), a file object, or a network URL through libavformat's protocols with the output's
AVOptions (:class:`~.target.NetworkTarget`). A muxer that opens its own files (segment, hls, dash,
tee, image2 sequences, rtsp) gets the URL as it is. The URL is opened by :meth:`Muxer.open`, once
the output's streams are chosen and before any frame is encoded, as ffmpeg's of_open does.

FFmpeg's hash muxers (md5, framemd5, crc...) are avdnn's own (:mod:`.hashmux`), byte-compatible
with ffmpeg's; every other format is libavformat's. The :class:`Muxer` writes the header once
every stream exists (with the run's metadata, dispositions and chapters), then each packet in the
order the interleaver gives, then the trailer. :meth:`Muxer.reopen` connects a network output
again and writes a new header on the new connection (the seam a service reconnecting a pushed
output uses).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, BinaryIO

from avdnn._util.redact import redact_url
from avdnn.errors import (
    AVERROR_ENCODER_NOT_FOUND,
    AvdnnError,
    InvalidArgumentError,
    NotFoundError,
    NotSupportedError,
    from_av_error,
)
from avdnn.media.libav.avio import guess_codec, guess_muxer
from avdnn.media.output.hashmux import HASH_MUXERS, HashMuxer, HashStream
from avdnn.media.output.target import (
    AVFMT_NOFILE,
    NOFILE_TIMEOUTS,
    NetworkTarget,
    check_file_target,
    is_network_target,
    rw_timeout,
)
from avdnn.media.output.videoenc import AVFMT_VARIABLE_FPS
from avdnn.media.tags import METADATA_ENCODING, METADATA_ERRORS

__all__ = ["Muxer"]

#: AVFMT_NOSTREAMS: a muxer that may have no stream at all (ffmpeg does not ask for one).
AVFMT_NOSTREAMS = 0x1000
#: PyAV's buffer for a file object: libavformat's IO_BUFFER_SIZE.
_IO_BUFFER_SIZE = 32768


@dataclass
class _Header:
    """What the header was written with (a reopened output writes it again)."""

    metadata: dict[str, str] = field(default_factory=dict)
    stream_metadata: dict[int, dict[str, str]] = field(default_factory=dict)
    dispositions: list[int] = field(default_factory=list)
    chapters: list[Any] = field(default_factory=list)
    hash_streams: list[HashStream] = field(default_factory=list)


def _packet_flags(packet: Any) -> int:
    """AVPacket.flags from PyAV's booleans (KEY, CORRUPT, DISCARD, TRUSTED, DISPOSABLE)."""
    bits = (packet.is_keyframe, packet.is_corrupt, packet.is_discard, packet.is_trusted, packet.is_disposable)
    return sum(1 << i for i, b in enumerate(bits) if b)


def _numbered(name: str) -> bool:
    """av_filename_number_test: whether an image2 name is a sequence pattern (``%03d``)."""
    return re.search(r"(?<!%)%0?\d*d", name.replace("%%", "")) is not None


class Muxer:
    """An output's target and muxer: ``container`` (PyAV's; None for a hash muxer), its name,
    flags and the encoders it defaults to (what ffmpeg picks without ``-c``).

    ``bitexact`` is ``-bitexact``; ``format_options`` the muxer's and the protocol's AVOptions
    (``-fflags +bitexact`` too keeps the version string out of a hash muxer's header, as
    ffmpeg's); ``stopped()`` says the run is stopping (a listening output stops waiting).
    """

    def __init__(
        self,
        target: str | BinaryIO,
        *,
        format: str | None,  # noqa: A002 - ffmpeg's -f
        overwrite: bool | None,
        bitexact: bool,
        format_options: dict[str, str],
        stopped: Callable[[], bool] | None = None,
    ) -> None:
        import av

        self.target = target
        self.name = "pipe:" if target == "-" else target if isinstance(target, str) else "<file>"
        self._hash: HashMuxer | None = None
        self.container: Any = None
        self._file: Any = None
        self._net: NetworkTarget | None = None
        self._streams: list[Any] = []
        self._tbs: list[Fraction] = []
        self._header: _Header | None = None
        self._opened = False
        self._stopped = stopped or (lambda: False)
        self._format = format
        self._options = dict(format_options)
        if bitexact:
            self._options["fflags"] = self._options.get("fflags", "") + "+bitexact"
        pipe = isinstance(target, str) and (target == "-" or target.startswith("pipe:"))
        #: A URL opened through a network protocol (tcp, udp, rtmp, http ...).
        self.network = isinstance(target, str) and not pipe and is_network_target(target)
        if pipe and format is None:
            raise InvalidArgumentError(_unguessable(self.name), file=self.name)
        if format in HASH_MUXERS:
            fmt_bitexact = bitexact or "bitexact" in format_options.get("fflags", "").replace("-", "+").split("+")
            lavf = "Lavf" + ".".join(map(str, av.library_versions["libavformat"]))
            self._hash = HashMuxer(format, None, software=None if fmt_bitexact else lavf)  # its target: open()
            self.format_name, self.flags = format, AVFMT_VARIABLE_FPS
        else:
            # the format, from -f or the name; nothing is opened yet (PyAV opens a path at the header)
            # "-" is Python's stdout (where an embedding program or a test captures it); pipe:N is
            # libavformat's pipe protocol on that descriptor, as ffmpeg opens it
            file = sys.stdout.buffer if target == "-" else target
            self.container = self._new_container(file, self._options, format=format)
            self.format_name, self.flags = self.container.format.name, self.container.format.flags
        # ffmpeg's assert_file_overwrite: a file the muxer writes itself, and image2's single image
        if (
            isinstance(target, str)
            and not pipe
            and not self.network
            and (not self.flags & AVFMT_NOFILE or (self.format_name == "image2" and not _numbered(target)))
        ):
            check_file_target(target, overwrite)

    def _new_container(
        self,
        file: Any,
        options: dict[str, str],
        *,
        format: str | None,  # noqa: A002 - ffmpeg's -f
        buffer_size: int = _IO_BUFFER_SIZE,
    ) -> Any:
        """PyAV's output container on ``file`` (a path is only named: PyAV opens it with the header)."""
        import av

        try:
            return av.open(
                file,
                "w",
                format=format,
                options=options,
                buffer_size=buffer_size,
                # the input's tags, and -metadata from argv, written as the bytes they came as (media.tags)
                metadata_encoding=METADATA_ENCODING,
                metadata_errors=METADATA_ERRORS,
            )
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.name) from exc
        except ValueError as exc:
            if not format:
                raise InvalidArgumentError(_unguessable(self.name), file=self.name) from exc
            raise InvalidArgumentError(
                f"Unable to find output format '{format}' for '{self.name}'", file=self.name
            ) from exc

    def _on_network(self) -> Any:
        """A container of the same format on the network connection."""
        assert self._net is not None
        size = self._net.max_packet_size or _IO_BUFFER_SIZE  # a datagram per buffer, as ffio_fdopen sizes it
        return self._new_container(self._net, self._net.unused, format=self.format_name, buffer_size=size)

    # -- what the muxer takes --------------------------------------------------------------

    @property
    def hashed(self) -> bool:
        """Whether this is one of avdnn's hash muxers (no container: encoders are opened alone)."""
        return self._hash is not None

    @property
    def muxer_name(self) -> str:
        return self._hash.fmt if self._hash is not None else str(self.container.format.name)

    @property
    def takes_no_stream(self) -> bool:
        """AVFMT_NOSTREAMS: the muxer writes a file without any stream (ffmpeg's check is skipped)."""
        return bool(self.flags & AVFMT_NOSTREAMS)

    def _guess(self, media_type: str) -> tuple[str | None, str | None]:
        name = "pipe:" if self.target == "-" or not isinstance(self.target, str) else self.target
        return guess_codec(self.format_name, name, media_type)

    def default_codec(self, media_type: str) -> str | None:
        """The encoder ffmpeg gives a stream of the type without ``-c`` (av_guess_codec: the
        segment muxer's inner format, image2's extension); None: the muxer takes no such stream
        automatically. A codec without an encoder here still counts (its error comes with it)."""
        if self._hash is not None:
            return {"video": "rawvideo", "audio": "pcm_s16le"}.get(media_type)
        codec, encoder = self._guess(media_type)
        if codec is None:
            return None
        return encoder or codec

    def video_encoder(self) -> str:
        """The encoder of a video stream without ``-c:v``: ffmpeg's choose_encoder, or its error."""
        if self._hash is not None:
            return "rawvideo"
        codec, encoder = self._guess("video")
        if encoder is None:
            raise NotFoundError(
                f"Automatic encoder selection failed Default encoder for format {self.format_name} "
                f"(codec {codec or 'none'}) is probably disabled. Please choose an encoder manually.",
                code=AVERROR_ENCODER_NOT_FOUND,
                file=self.name,
            )
        return encoder

    # -- the target -------------------------------------------------------------------------

    def open(self) -> None:
        """Open the target (ffmpeg's avio_open2 in of_open): the streams are known, no frame is
        encoded yet. A refused connection is ffmpeg's ``Error opening output URL: Connection refused``."""
        if self._opened:
            return
        self._opened = True
        target = self.target
        if self._hash is not None:
            self._hash.out = self._open_hash_target()
            return
        if not self.network:
            return  # a path or pipe: PyAV opens it with the header; a file object is open already
        assert isinstance(target, str)
        if self.flags & AVFMT_NOFILE:  # rtsp, hls, dash, tee: the muxer connects; bound its socket I/O
            known = NOFILE_TIMEOUTS.get(self.format_name)
            bound = rw_timeout(self._options)
            if known is not None and bound is not None and known[0] not in self._options:
                self._options[known[0]] = known[1](bound)
                self.container = self._new_container(target, self._options, format=self.format_name)
            return
        self._net = NetworkTarget(target, redact_url(target), self._options, stopped=self._stopped)
        self.container = self._on_network()

    def _open_hash_target(self) -> Any:
        target = self.target
        if target == "-":
            return sys.stdout.buffer
        if not isinstance(target, str):
            return target
        if target.startswith("pipe:"):
            self._file = open(int(target[5:] or 1), "wb", closefd=False)  # noqa: SIM115 - closed in close_steps()
        elif self.network:
            self._file = self._net = NetworkTarget(target, redact_url(target), self._options, stopped=self._stopped)
        else:
            try:
                self._file = open(target.removeprefix("file:"), "wb")  # noqa: SIM115 - closed in close_steps()
            except OSError as exc:
                raise from_av_error(exc, file=self.name) from exc
        return self._file

    def reopen(self) -> None:
        """Connect a network output again and write a new header on the new connection.

        The seam for reconnecting a pushed output (a server restarted): the old connection's
        trailer is attempted and its error ignored, the streams are declared again from the
        ones written so far (same codec parameters, same metadata), and the packets that follow
        go to the new connection. Call it under the output's lock, between packets.
        """
        import av

        if self._net is None:
            raise NotSupportedError(f"'{self.name}' is not a network output: it cannot be reopened", file=self.name)
        if self._hash is not None:
            self._net.reopen()
            if self._header is not None:
                self._hash.write_header(self._header.hash_streams)
            return
        old = self.container
        with contextlib.suppress(av.FFmpegError, AvdnnError, OSError, ValueError):
            old.close()  # the trailer to a peer that is likely gone
        self._net.reopen()
        self.container = self._on_network()
        if self._header is None:
            return  # no header yet: the streams are declared as usual
        streams = [self.container.add_stream_from_template(s, opaque=True) for s in self._streams]
        self._write_container_header(list(zip(streams, self._tbs, strict=True)), self._header)

    # -- header, packets, trailer ---------------------------------------------------------------

    def write_header(
        self,
        streams: Sequence[tuple[Any, Fraction]],
        *,
        metadata: dict[str, str],
        stream_metadata: dict[int, dict[str, str]],
        dispositions: Sequence[int],
        chapters: Sequence[Any],
        on_header: Callable[[Any], object] | None,
    ) -> None:
        """The header, once every output stream exists: (PyAV stream or :class:`HashStream`, its
        time base) in output order, with global and per-stream metadata, dispositions and chapters
        as the plan decided (ffmpeg's -map_metadata); ``on_header`` sees the written container."""
        self.open()
        if self._hash is not None:
            self._streams = [out for out, _ in streams]
            self._tbs = [tb for _, tb in streams]
            hashed = [out for out in self._streams if isinstance(out, HashStream)]
            self._header = _Header(hash_streams=hashed)
            self._hash.write_header(hashed)
            return
        header = _Header(metadata, stream_metadata, list(dispositions), list(chapters))
        self._write_container_header(streams, header)
        self._header = header
        if on_header is not None:
            on_header(self.container)

    def _write_container_header(self, streams: Sequence[tuple[Any, Fraction]], header: _Header) -> None:
        import av

        self._streams = [out for out, _ in streams]
        self._tbs = [tb for _, tb in streams]
        container = self.container
        metadata, stream_metadata = header.metadata, header.stream_metadata
        dispositions, chapters = header.dispositions, header.chapters
        container.metadata.update(metadata)
        for key in [k for k, v in metadata.items() if v == ""]:  # -metadata key= deletes it
            del container.metadata[key]
        for index, tags in stream_metadata.items():
            out = self._streams[index]
            out.metadata.update(tags)
            for key in [k for k, v in tags.items() if v == ""]:
                del out.metadata[key]
        for index, disposition in enumerate(dispositions):
            if disposition and index < len(self._streams):
                self._streams[index].disposition = disposition
        if chapters:
            container.set_chapters(list(chapters))
        try:
            container.start_encoding()
        except AvdnnError as exc:  # the network target's own error (a write of the header failed)
            exc.message = f"could not write the header: {exc.message}"
            raise
        except (av.FFmpegError, ValueError) as exc:  # the muxer refused the streams' parameters
            err = from_av_error(exc, file=self.name)
            err.message = f"could not write the header (incorrect codec parameters?): {err.message}"
            raise err from exc

    def write_packet(self, index: int, packet: Any) -> None:
        """One packet of output stream ``index``, in interleaved order."""
        import av

        try:
            if self._hash is None:
                packet.stream = self._streams[index]
                self.container.mux(packet)
                return
            tb = self._tbs[index]
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

    def close_steps(self) -> list[Callable[[], Any]]:
        """The trailer and the target's close, as steps that each run even when one before failed."""
        steps: list[Callable[[], Any]] = []
        if self._hash is not None:
            if self._hash.out is not None and self._opened:
                steps.append(self._hash.write_trailer)
        elif self.container is not None:
            steps.append(self.container.close)  # no header was written when no stream could open
        if self._file is not None:
            steps.append(self._file.close)
        elif self._net is not None:
            steps.append(self._net.close)
        if self.target == "-":
            steps.append(sys.stdout.buffer.flush)
        return steps


def _unguessable(name: str) -> str:
    """ffmpeg's words (libavformat's avformat_alloc_output_context2) for an output with no muxer."""
    return (
        f"Unable to choose an output format for '{name}'; use a standard extension for the filename "
        "or specify the format manually."
    )


def check_output_name(target: str, format: str | None) -> None:  # noqa: A002 - ffmpeg's -f
    """Refuse, before anything runs, an output whose muxer cannot be chosen (no ``-f`` and a name
    libavformat guesses none for: ``""``, ``x``, ``-``) or that names no file (``-f mp4 ""``),
    with ffmpeg's error (exit 234, and 254 for the missing file)."""
    name = "pipe:" if target == "-" else target
    if format is None:
        if guess_muxer(None, name) is None:
            raise InvalidArgumentError(_unguessable(name), file=name)
    elif target == "" and format != "null" and format not in HASH_MUXERS:
        raise NotFoundError("No such file or directory", file=name)
