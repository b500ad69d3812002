"""The encoder of a transcoded side stream: found by name, configured once, in the output's container or alone.

An audio or subtitle stream that is decoded and encoded again (:mod:`.audio`, :mod:`.subtitles`)
gets its encoder here, the same way for both: the encoder named by ``-c:a``/``-c:s`` (an unknown
name is ffmpeg's "Unknown encoder"), configured by the path (:meth:`EncodePath.configure`), then
either created as a stream of the output's container, which opens it with the header, or, for
a hash muxer (no container), opened alone and described by its :class:`~avdnn.media.output.hashmux.HashStream`.
"""

from __future__ import annotations

from typing import Any

from avdnn.errors import AVERROR_ENCODER_NOT_FOUND, NotFoundError, from_av_error
from avdnn.media.output.hashmux import HashStream
from avdnn.media.output.videoenc import AV_CODEC_FLAG_BITEXACT
from avdnn.media.streams.sidepath import SidePath

__all__ = ["AV_CODEC_FLAG_BITEXACT", "EncodePath"]


class EncodePath(SidePath):
    """A side path that encodes: ``encoder`` is its codec context once the output has its streams.

    Subclasses configure the encoder (:meth:`configure`) and may add keywords for the container's
    ``add_stream`` (:meth:`stream_options`) and for the hash header (:meth:`hash_fields`).
    """

    def __init__(self, stream: Any, out_index: int, *, codec: str, **kw: Any) -> None:
        import av

        super().__init__(stream, out_index, **kw)
        self.codec_name = codec
        self.stats.codec = codec
        try:
            self._codec = av.Codec(codec, "w")
        except (av.FFmpegError, ValueError) as exc:
            raise NotFoundError(f"Unknown encoder '{codec}'", code=AVERROR_ENCODER_NOT_FOUND) from exc
        self.encoder: Any = None

    def configure(self, enc: Any) -> None:
        """Set the encoder's parameters before it opens."""
        raise NotImplementedError

    def stream_options(self) -> dict[str, Any]:
        """Keywords of the container's ``add_stream`` for this encoder."""
        return {}

    def hash_fields(self) -> dict[str, Any]:
        """The :class:`HashStream` fields besides the codec, time base and extradata."""
        return {}

    def add_output(self, container: Any) -> Any:
        out = container.add_stream(self.codec_name, **self.stream_options())
        self.configure(out.codec_context)
        self.encoder = out.codec_context
        return out

    def hash_stream(self) -> Any:
        """The encoder opened alone (no container to add it to), and its stream as the hash header says it."""
        import av

        enc = av.CodecContext.create(self.codec_name, "w")
        self.configure(enc)
        try:
            enc.open(strict=False)
        except (av.FFmpegError, ValueError) as exc:
            raise from_av_error(exc) from exc
        self.encoder = enc
        return HashStream(
            self.media_type,
            self._codec.canonical_name,
            self.time_base,
            **self.hash_fields(),
            extradata=bytes(enc.extradata) if enc.extradata else None,
        )
