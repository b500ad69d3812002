"""A subtitle stream around the chain, converted as ffmpeg converts it (``do_subtitle_out``).

SubRip to ASS in Matroska by default; text converts to text and bitmaps to bitmaps only.
The encoder is set up as every transcoded side stream's (:mod:`.encoding`); see :mod:`.sidepath`
for how side streams meet the output.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from avdnn.errors import InvalidArgumentError, from_av_error
from avdnn.media.streams.encoding import EncodePath
from avdnn.media.timing import rescale

__all__ = ["SubtitleEncodePath"]

_US = Fraction(1, 1_000_000)


class SubtitleEncodePath(EncodePath):
    """Decode and encode one subtitle stream (ffmpeg's do_subtitle_out), e.g. SubRip to ASS in Matroska.

    Text converts to text and bitmaps to bitmaps only, as in ffmpeg. Times are libavcodec's
    AVSubtitle times: pts in microseconds, display times in milliseconds, start moved into pts.
    """

    media_type = "subtitle"

    def __init__(self, stream: Any, out_index: int, *, codec: str, **kw: Any) -> None:
        import av

        super().__init__(stream, out_index, codec=codec, **kw)
        dec = stream.codec_context
        src = av.Codec(dec.name, "r")
        if not ((src.text_sub and self._codec.text_sub) or (src.bitmap_sub and self._codec.bitmap_sub)):
            raise InvalidArgumentError(
                "Subtitle encoding currently only possible from text to text or bitmap to "
                f"bitmap ({dec.name} -> {codec})",
                option="c:s",
            )
        try:
            dec.open()
        except av.FFmpegError as exc:
            raise from_av_error(exc) from exc
        self._dec = dec
        self.time_base = _US

    def configure(self, enc: Any) -> None:
        if self._dec.subtitle_header:
            enc.subtitle_header = self._dec.subtitle_header  # ffmpeg copies the decoder's ASS header
        enc.time_base = _US

    def packet(self, packet: Any) -> None:
        import av

        if not packet.size:
            return
        self.stats.packets_read += 1
        assert self.sink is not None
        try:
            sub = self._dec.decode2(packet)
        except av.FFmpegError as exc:  # ffmpeg: "Error decoding subtitles", counted, decoding goes on
            key = f"decode error: {exc}"
            self.stats.failed[key] = self.stats.failed.get(key, 0) + 1
            return
        if sub is None or self.ended:
            return
        self.stats.frames_decoded += 1
        if sub.pts is None:  # ffmpeg: "Subtitle packets must have a pts" (skipped unless -xerror)
            self.stats.drop("no pts (Subtitle packets must have a pts)")
            return
        pts = sub.pts + (rescale(1, self.offset, _US) if self.offset else 0)
        start = self.sink.start_time
        if start is not None and pts < start:
            self.stats.drop("before output -ss")
            return
        pts -= start or 0
        rec = self.sink.recording_time
        if rec is not None and pts >= rec:  # check_recording_time: the stream ends here
            self.stats.drop("output -t/-to reached")
            self.end()
            return
        pts += sub.start_display_time * 1000
        sub.end_display_time -= sub.start_display_time
        sub.start_display_time = 0
        sub.pts = pts
        with self.sink.lock:
            try:
                out = self.encoder.encode_subtitle(sub)
            except av.FFmpegError as exc:
                raise from_av_error(exc) from exc
            out.pts = out.dts = pts
            out.duration = sub.end_display_time * 1000
            out.time_base = _US
            self.sink.push_side(self, out, _US)
