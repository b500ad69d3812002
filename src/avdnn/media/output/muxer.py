"""One output's muxer: libavformat's through PyAV, or one of avdnn's hash muxers, on its target.

The target is opened as the ffmpeg CLI opens it: a path (refused when it exists without ``-y``,
or when its folder does not), ``-`` for Python's stdout, ``pipe:N`` for a descriptor (a format
is then required), or a file object. FFmpeg's hash muxers (md5, framemd5, crc...) are avdnn's own
(:mod:`.hashmux`), byte-compatible with ffmpeg's; every other format is libavformat's. The
:class:`Muxer` writes the header once every stream exists (with the run's metadata, dispositions
and chapters), then each packet in the order the interleaver gives, then the trailer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, BinaryIO

from avdnn.errors import InvalidArgumentError, IOFailureError, NotFoundError, from_av_error
from avdnn.media.output.hashmux import HASH_MUXERS, HashMuxer, HashStream
from avdnn.media.output.videoenc import AVFMT_VARIABLE_FPS, IMAGE2_CODECS

__all__ = ["Muxer"]


def _packet_flags(packet: Any) -> int:
    """AVPacket.flags from PyAV's booleans (KEY, CORRUPT, DISCARD, TRUSTED, DISPOSABLE)."""
    bits = (packet.is_keyframe, packet.is_corrupt, packet.is_discard, packet.is_trusted, packet.is_disposable)
    return sum(1 << i for i, b in enumerate(bits) if b)


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


class Muxer:
    """An output's target and muxer: ``container`` (PyAV's; None for a hash muxer), its name,
    flags and the video codec it defaults to (what ffmpeg picks without ``-c:v``).

    ``bitexact`` is ``-bitexact``; ``format_options`` the muxer's AVOptions (``-fflags +bitexact``
    too keeps the version string out of a hash muxer's header, as ffmpeg's).
    """

    def __init__(
        self,
        target: str | BinaryIO,
        *,
        format: str | None,  # noqa: A002 - ffmpeg's -f
        overwrite: bool | None,
        bitexact: bool,
        format_options: dict[str, str],
    ) -> None:
        import av

        self.target = target
        self.name = "pipe:" if target == "-" else target if isinstance(target, str) else "<file>"
        self._hash: HashMuxer | None = None
        self.container: Any = None
        self._file: Any = None
        self._streams: list[Any] = []
        self._tbs: list[Fraction] = []
        pipe = isinstance(target, str) and (target == "-" or target.startswith("pipe:"))
        if isinstance(target, str) and not pipe:
            _check_path(target, overwrite)
        # "-" is Python's stdout (where an embedding program or a test captures it); pipe:N is
        # libavformat's pipe protocol on that descriptor, as ffmpeg opens it
        file: Any = sys.stdout.buffer if target == "-" else target
        if pipe and format is None:
            raise InvalidArgumentError(f"Unable to choose an output format for '{self.name}'; use -f", file=self.name)
        if format in HASH_MUXERS:
            if pipe and isinstance(target, str) and target != "-":
                fd = int(target[5:] or 1)
                self._file = file = open(fd, "wb", closefd=False)  # noqa: SIM115 - closed in close_steps()
            elif isinstance(file, str):
                try:
                    self._file = file = open(file, "wb")  # noqa: SIM115 - closed in close_steps()
                except OSError as exc:
                    raise from_av_error(exc, file=self.name) from exc
            fmt_bitexact = bitexact or "bitexact" in format_options.get("fflags", "").replace("-", "+").split("+")
            lavf = "Lavf" + ".".join(map(str, av.library_versions["libavformat"]))
            self._hash = HashMuxer(format, file, software=None if fmt_bitexact else lavf)
            self.format_name, self.flags, default_codec = format, AVFMT_VARIABLE_FPS, "rawvideo"
        else:
            try:
                options = dict(format_options)
                if bitexact:
                    options["fflags"] = options.get("fflags", "") + "+bitexact"
                self.container = av.open(file, "w", format=format, options=options)
            except (av.FFmpegError, OSError) as exc:
                raise from_av_error(exc, file=self.name) from exc
            except ValueError as exc:
                what = f"output format '{format}'" if format else "an output format"
                raise InvalidArgumentError(f"Unable to find {what} for '{self.name}'", file=self.name) from exc
            self.format_name, self.flags = self.container.format.name, self.container.format.flags
            default_codec = self.container.default_video_codec
            if self.format_name in ("image2", "image2pipe") and isinstance(target, str):
                default_codec = IMAGE2_CODECS.get(target.rsplit(".", 1)[-1].lower(), default_codec)
            if default_codec in (None, "none", "wrapped_avframe"):
                default_codec = "rawvideo"
        self.default_video_codec: str = default_codec

    @property
    def hashed(self) -> bool:
        """Whether this is one of avdnn's hash muxers (no container: encoders are opened alone)."""
        return self._hash is not None

    @property
    def muxer_name(self) -> str:
        return self._hash.fmt if self._hash is not None else str(self.container.format.name)

    def default_codec(self, media_type: str) -> str | None:
        """The muxer's default encoder for a stream type (what ffmpeg picks without -c)."""
        if self._hash is not None:
            return {"video": "rawvideo", "audio": "pcm_s16le"}.get(media_type)
        name = getattr(self.container, f"default_{media_type}_codec", None)
        return None if name in (None, "none") else str(name)

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
        import av

        self._streams = [out for out, _ in streams]
        self._tbs = [tb for _, tb in streams]
        if self._hash is not None:
            self._hash.write_header([out for out in self._streams if isinstance(out, HashStream)])
            return
        container = self.container
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
        except (av.FFmpegError, ValueError) as exc:  # the muxer refused the streams' parameters
            err = from_av_error(exc, file=self.name)
            err.message = f"could not write the header (incorrect codec parameters?): {err.message}"
            raise err from exc
        if on_header is not None:
            on_header(container)

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
            steps.append(self._hash.write_trailer)
        elif self.container is not None:
            steps.append(self.container.close)  # no header was written when no stream could open
        if self._file is not None:
            steps.append(self._file.close)
        if self.target == "-":
            steps.append(sys.stdout.buffer.flush)
        return steps
