"""Video sources: anything PyAV can demux and decode, and lavfi source graphs.

``-f lavfi -i "testsrc=s=64x64:d=0.4"`` opens libavformat's own lavfi device through PyAV,
so frames and timestamps are the ones ffmpeg's lavfi input produces, bit for bit. Files and
URLs are decoded with frame threading, and timestamps are shifted by the input's start time
as the ffmpeg CLI does (without ``-copyts``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import AvdnnError, InvalidArgumentError, NotFoundError, from_av_error
from .frame import Frame


@dataclass(frozen=True)
class StreamInfo:
    """What the chain needs to know about the input before the first frame."""

    width: int
    height: int
    pix_fmt: str
    time_base: Fraction
    frame_rate: Fraction | None
    sample_aspect_ratio: Fraction | None
    duration: float | None


class Source:
    """Decoded video frames of one input, in presentation order, as avdnn Frames."""

    def __init__(
        self,
        url: str,
        *,
        format: str | None = None,  # noqa: A002 - ffmpeg's -f
        options: dict[str, str] | None = None,
        threads: int | str = "auto",
        video: bool = True,
    ) -> None:
        import av

        self.url = url
        self.format = format
        if url == "-" or url.startswith("pipe:"):  # ffmpeg's stdin alias; libavformat opens pipe:N itself
            url = "pipe:" if url == "-" else url
        elif format is None and "://" not in url and not os.path.exists(url) and "%" not in url:
            raise NotFoundError("No such file or directory", file=url)
        try:
            self._container: Any = av.open(url, "r", format=format, options=options or {})
        except AvdnnError:
            raise
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=url) from exc
        except ValueError as exc:  # PyAV: unknown format name
            raise InvalidArgumentError(f"Unknown input format: '{format}'", file=url) from exc
        #: Packets of the streams that go around the chain, by input stream index (see media.sidepath).
        self.side_handlers: dict[int, Callable[[Any], None]] = {}
        #: Called once the demuxer is at its end (the side streams flush their decoders).
        self.side_ends: list[Callable[[], None]] = []
        self.frames_read = 0
        self.video = video and bool(self._container.streams.video)
        if video and not self._container.streams.video:
            self._container.close()
            raise InvalidArgumentError("no video stream", file=url)
        start = self._container.start_time
        self._offset_us = -start if start is not None and self.format != "lavfi" else 0
        if not self.video:
            self._stream: Any = None
            return
        self._stream = self._container.streams.video[0]
        ctx = self._stream.codec_context
        if threads == "auto" or int(threads) != 1:
            ctx.thread_type = "AUTO"
            if threads != "auto":
                ctx.thread_count = int(threads)

    def use_video(self, index: int | None) -> None:
        """Decode input stream ``index`` for the chain (None: no video is decoded, e.g. -c:v copy)."""
        if index is None:
            self._stream = None
            self.video = False
            return
        stream = self._container.streams[index]
        if stream is not self._stream:
            ctx = stream.codec_context
            ctx.thread_type = self._stream.codec_context.thread_type if self._stream is not None else "AUTO"
            self._stream = stream
        self.video = True

    @property
    def video_stream(self) -> Any:
        """The PyAV stream decoded for the chain (None when no video is decoded)."""
        return self._stream if self.video else None

    @property
    def container(self) -> Any:
        """PyAV's input container (its global metadata and chapters are copied to outputs)."""
        return self._container

    @property
    def streams(self) -> Any:
        """PyAV's streams of the input, for stream selection and the side streams."""
        return self._container.streams

    @property
    def offset(self) -> Fraction:
        """Seconds added to every timestamp (ffmpeg's ts_offset: minus the input's start time)."""
        return Fraction(self._offset_us, 1_000_000)

    @property
    def info(self) -> StreamInfo:
        s = self._stream
        rate = s.guessed_rate or s.average_rate
        sar = s.sample_aspect_ratio
        fmt = s.codec_context.format
        dur = float(s.duration * s.time_base) if s.duration and s.time_base else None
        return StreamInfo(
            width=s.codec_context.width,
            height=s.codec_context.height,
            pix_fmt=fmt.name if fmt is not None else "",
            time_base=Fraction(s.time_base),
            frame_rate=Fraction(rate) if rate else None,
            sample_aspect_ratio=Fraction(sar) if sar else None,
            duration=dur if dur is not None and dur > 0 else None,
        )

    def __iter__(self) -> Iterator[Frame]:
        import av

        stream = self._stream
        sides = [self._container.streams[i] for i in sorted(self.side_handlers)]
        if stream is None:
            yield from self._demux_sides(sides)
            return
        offset = None
        if self._offset_us:
            offset = int(round(Fraction(self._offset_us, 1_000_000) / stream.time_base))
        sar = stream.sample_aspect_ratio
        try:
            for packet in self._container.demux(stream, *sides):
                if packet.stream.index != stream.index:
                    self.side_handlers[packet.stream.index](packet)
                    continue
                for av_frame in packet.decode():
                    yield self._wrap(av_frame, offset, sar)
            self._end_sides()
        except AvdnnError:
            raise
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.url).with_context(pts=None) from exc

    def _demux_sides(self, sides: list[Any]) -> Iterator[Frame]:
        """No video to decode: the demuxer feeds the side streams only (an audio-only output)."""
        import av

        try:
            for packet in self._container.demux(*sides):
                self.side_handlers[packet.stream.index](packet)
            self._end_sides()
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.url) from exc
        yield from ()

    def drain_sides(self, done: Callable[[], bool]) -> None:
        """After the video stopped early: keep demuxing the side streams until ``done()`` says so.

        ffmpeg reads on until every output stream is finished, so with ``-frames:v`` the audio
        still reaches the point where the video ended although the file interleaves it later.
        """
        import av

        sides = [self._container.streams[i] for i in sorted(self.side_handlers)]
        if not sides or done():
            return
        try:
            for packet in self._container.demux(*sides):
                self.side_handlers[packet.stream.index](packet)
                if done():
                    return
            self._end_sides()
        except (av.FFmpegError, OSError) as exc:
            raise from_av_error(exc, file=self.url) from exc

    def _end_sides(self) -> None:
        ends, self.side_ends = self.side_ends, []
        for end in ends:
            end()

    def _wrap(self, av_frame: Any, offset: int | None, sar: Any) -> Frame:
        if av_frame.pts is None:
            av_frame.pts = getattr(av_frame, "best_effort_timestamp", None) or av_frame.dts
        if offset is not None and av_frame.pts is not None:
            av_frame.pts += offset
        frame = Frame.from_av(av_frame)
        frame.sample_aspect_ratio = Fraction(sar) if sar else None
        self.frames_read += 1
        return frame

    def close(self) -> None:
        # Park the decoder's frame threads first, with the GIL released (flush_buffers is nogil):
        # freeing a frame-threaded decoder from a dealloc holds the GIL while it joins workers,
        # and a worker logging through PyAV's Python log callback then deadlocks (seen with
        # h264 stopped early by -frames:v while the CLI forwards FFmpeg's log lines).
        try:
            if self._stream is not None:
                self._stream.codec_context.flush_buffers()
        except Exception:  # noqa: BLE001 - closing must not fail on a decoder that never opened
            pass
        self._container.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
