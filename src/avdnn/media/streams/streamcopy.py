"""Stream copy around the chain: the input's packets to the output, shifted as ffmpeg's streamcopy shifts them.

See :mod:`.sidepath` for how side streams meet the output.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from avdnn.media.output.hashmux import HashStream
from avdnn.media.streams.sidepath import SidePath
from avdnn.media.timing import rescale

__all__ = ["CopyPath"]

_US = Fraction(1, 1_000_000)


class CopyPath(SidePath):
    """Stream copy: the input packets, timestamps shifted as ffmpeg's streamcopy shifts them."""

    def __init__(self, stream: Any, out_index: int, **kw: Any) -> None:
        super().__init__(stream, out_index, **kw)
        self.media_type = stream.type
        ctx = stream.codec_context
        # the codec's name (avcodec_get_name), not its decoder's: subrip, not srt
        self.codec_name = ctx.codec.canonical_name if ctx is not None else "none"
        self.time_base = Fraction(stream.time_base)
        self._shift = rescale(1, self.offset, self.time_base) if self.offset else 0
        self._started = False
        self._copied = 0
        self._end_cause = "the stream ended"

    def add_output(self, container: Any) -> Any:
        return container.add_stream_from_template(self.stream)

    def hash_stream(self) -> Any:
        ctx = self.stream.codec_context
        extra = bytes(ctx.extradata) if ctx is not None and ctx.extradata else None
        if self.media_type == "audio":
            return HashStream(
                "audio",
                self.codec_name,
                self.time_base,
                sample_rate=ctx.sample_rate,
                layout=ctx.layout.name,
                extradata=extra,
            )
        if self.media_type == "video":
            sar = self.stream.sample_aspect_ratio
            return HashStream(
                "video",
                self.codec_name,
                self.time_base,
                width=ctx.width,
                height=ctx.height,
                sar=Fraction(sar) if sar else None,
                extradata=extra,
            )
        return HashStream(self.media_type, self.codec_name, self.time_base, extradata=extra)

    def packet(self, packet: Any) -> None:
        """ffmpeg's of_streamcopy: output -ss/-t on the estimated dts, keyframe start, shifts."""
        assert self.sink is not None
        if packet.dts is None and packet.pts is None and not packet.size:
            return  # the demuxer's flush packet
        self.stats.packets_read += 1
        if self.ended:
            self.stats.drop(self._end_cause)
            return
        tb = self.time_base
        if self._shift:
            if packet.pts is not None:
                packet.pts += self._shift
            if packet.dts is not None:
                packet.dts += self._shift
        ts = packet.dts if packet.dts is not None else packet.pts
        dts_us = rescale(ts, tb, _US) if ts is not None else None
        in_end = self.input_trim[1]
        if in_end is not None and dts_us is not None and dts_us >= in_end:
            # ffmpeg's demuxer: a stream of an input with -t/-to ends at that time
            self._end_cause = "input -t/-to reached"
            self.stats.drop(self._end_cause)
            self.end()
            return
        start = self.sink.start_time
        rec = self.sink.recording_time
        if rec is not None and dts_us is not None and dts_us >= rec + (start or 0):
            self._end_cause = "output -t/-to reached"
            self.stats.drop(self._end_cause)
            self.end()
            return
        if not self._started:
            if not packet.is_keyframe:
                self.stats.drop("before the first keyframe (ffmpeg copies from a keyframe)")
                return
            # (-copypriorss stays at its default, -1: no check against ts_copy_start)
            if start is not None and dts_us is not None and dts_us < start:
                self.stats.drop("before output -ss")
                return
            self._started = True
        offset = rescale(start or 0, _US, tb)
        if packet.dts is not None and self.media_type == "audio":
            packet.pts = packet.dts - offset  # of_streamcopy: an audio packet's pts follows its dts
        elif packet.pts is not None:
            packet.pts -= offset
        if packet.dts is not None:
            packet.dts -= offset
        limit = self.sink.max_packets if self.media_type == "video" else None  # -frames:v on a copied video
        if limit is not None and self._copied >= limit:
            self.stats.drop("output frame limit reached")
            return
        self.sink.push_side(self, packet, self.time_base)
        self._copied += 1
        if limit is not None and self._copied >= limit:
            # as an encoded video at its limit: the other streams end where this packet ends
            ts = packet.dts if packet.dts is not None else packet.pts
            if ts is not None:
                self.sink.finish_side_at(self, (ts + (packet.duration or 0)) * self.time_base)
            self._end_cause = "output frame limit reached"
            self.end()
