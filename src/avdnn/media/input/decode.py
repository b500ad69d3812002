"""Video decoding the way the ffmpeg CLI decodes: errors concealed, counted, and fatal only on request.

libavcodec conceals damage itself (h264 copies blocks from the reference, marks the frame
corrupt); what stops a decode is the CLI's choice. fftools/ffmpeg_dec.c counts every failed
``avcodec_send_packet``/``avcodec_receive_frame`` in ``decode_errors`` and goes on with the
next packet, warns "corrupt decoded frame" for frames flagged corrupt and keeps them, and
only with ``-xerror`` (exit_on_error) returns the first error (AVERROR_INVALIDDATA for a corrupt
frame). At the end, a rate of errors over ``frames + errors`` above ``-max_error_rate`` (2/3 by
default) ends the run with exit status 69. :class:`VideoDecoder` does the same for one stream,
one packet at a time, so a single-stream loop and a multi-stream demux loop can both drive it.
"""

from __future__ import annotations

import logging
from typing import Any

from avdnn.errors import FFMPEG_ERROR_RATE_EXCEEDED, InvalidArgumentError, InvalidDataError, from_av_error

log = logging.getLogger("avdnn")

#: ffmpeg's -max_error_rate default.
DEFAULT_MAX_ERROR_RATE = 2 / 3


class ErrorRateExceededError(InvalidDataError):
    """More decode errors than ``-max_error_rate`` allows; the CLI exits with 69, as ffmpeg does."""

    default_code = FFMPEG_ERROR_RATE_EXCEEDED


class VideoDecoder:
    """One video stream's decoder with ffmpeg's error policy and counters.

    ``decode(packet)`` and ``flush()`` return the PyAV frames libavcodec produced, concealed
    ones included. Counters (also summarised by :attr:`errors`, by cause):

    * ``frames_decoded``: frames the decoder returned (ffmpeg's ``frames_decoded``);
    * ``decode_errors``: failed send/receive calls (ffmpeg's ``decode_errors``), split into
      ``errors["send_packet"]`` and ``errors["receive_frame"]``;
    * ``frames_concealed``: returned frames libavcodec flagged corrupt (concealment active);
    * ``packets_corrupt``: packets the demuxer flagged corrupt (AV_PKT_FLAG_CORRUPT).
    """

    def __init__(
        self,
        stream: Any,
        *,
        threads: int | str = "auto",
        xerror: bool = False,
        options: dict[str, str] | None = None,
        file: str | None = None,
    ) -> None:
        self._threads = threads
        self._options = options
        self.rebind(stream)
        self.xerror = xerror
        self.file = file
        self.frames_decoded = 0
        self.frames_concealed = 0
        self.packets_corrupt = 0
        self.errors: dict[str, int] = {"send_packet": 0, "receive_frame": 0, "corrupt_frame": 0}

    def rebind(self, stream: Any) -> None:
        """Decode ``stream`` from now on (a reopened live input), keeping the counters."""
        ctx = stream.codec_context
        threads = self._threads
        if threads == "auto" or int(threads) != 1:
            ctx.thread_type = "AUTO"
            if threads != "auto" and int(threads) > 0:
                ctx.thread_count = int(threads)
        else:
            ctx.thread_count = 1
        if self._options:
            ctx.options = {**ctx.options, **self._options}  # read when PyAV opens the decoder, on first use
        self.codec_context = ctx
        self.time_base = stream.time_base

    @property
    def decode_errors(self) -> int:
        return self.errors["send_packet"] + self.errors["receive_frame"]

    def decode(self, packet: Any) -> list[Any]:
        """Frames from one packet (``None`` drains the decoder at end of stream)."""
        import av

        if packet is not None and packet.is_corrupt:
            self.packets_corrupt += 1
        try:
            frames = self.codec_context.decode(packet)
        except av.EOFError:
            return []
        except av.FFmpegError as exc:
            # PyAV raises from send_packet, or from receive_frame before any frame of this
            # packet came out (later receive errors it swallows, keeping the frames).
            cause = "receive_frame" if "receive_frame" in str(exc) else "send_packet"
            self.errors[cause] += 1
            if self.xerror:
                raise from_av_error(exc, file=self.file) from exc
            log.error(
                "Error submitting %s to decoder: %s",
                "packet" if packet is not None else "EOF",
                getattr(exc, "strerror", None) or exc,
            )
            return []
        out = []
        for frame in frames:
            if frame.is_corrupt:
                if self.xerror:
                    self.errors["corrupt_frame"] += 1
                    raise InvalidDataError("corrupt decoded frame", file=self.file, pts=frame.pts)
                log.warning("corrupt decoded frame")
                self.frames_concealed += 1
                self.errors["corrupt_frame"] += 1
            if frame.time_base is None:  # frames drained at EOF: PyAV takes the time base from the packet
                frame.time_base = self.time_base
            self.frames_decoded += 1
            out.append(frame)
        return out

    def flush(self) -> list[Any]:
        """Drain the frames the decoder still holds (end of input)."""
        return self.decode(None)

    def reset(self) -> None:
        """Forget all state after a seek or loop, as avcodec_flush_buffers does."""
        self.codec_context.flush_buffers()

    def error_rate(self) -> float:
        total = self.frames_decoded + self.decode_errors
        return self.decode_errors / total if total else 0.0

    def check_error_rate(self, max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> None:
        """Raise ffmpeg's "Decode error rate %g exceeds maximum %g" when the decode is done."""
        rate = self.error_rate()
        if rate > max_error_rate:
            raise ErrorRateExceededError(
                f"Decode error rate {rate:g} exceeds maximum {max_error_rate:g}",
                file=self.file,
            )


#: ffmpeg's -discard values (AVDiscard constants) by PyAV's names for them.
_DISCARD = {
    "none": "none",
    "default": "default",
    "noref": "nonref",
    "bidir": "bidir",
    "nointra": "nonintra",
    "nokey": "nonkey",
    "all": "all",
}


def discard_value(value: str) -> Any:
    """ffmpeg's ``-discard VALUE`` as PyAV's AVDiscard constant."""
    import av.stream

    if value not in _DISCARD:
        raise InvalidArgumentError(f'Unable to parse option value "{value}"', option="discard")
    return av.stream.Discard[_DISCARD[value]]
