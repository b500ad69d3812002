"""The Python API: iterate the frames of a chain, or run a chain from an input to an output.

>>> for frame in avdnn.run("in.mp4", "scale=320:-2,format=rgb24"):   # doctest: +SKIP
...     print(frame.pts, frame.to_ndarray().shape)
>>> stats = avdnn.run("in.mp4", "format=gray", output="out.mkv")   # doctest: +SKIP

Both take the same options as the CLI, by keyword. Errors raise :class:`avdnn.AvdnnError`
after the output (if any) has been finished cleanly with the frames before the error.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, BinaryIO, overload

from .graph.pipeline import Pipeline, ProgressFn
from .graph.stats import RunStats
from .media.frame import Frame
from .media.sink import Sink
from .media.source import Source


class FrameStream:
    """The frames leaving a chain, in order. ``stats`` is complete once iteration ends."""

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        self._it = pipeline.frames()

    @property
    def stats(self) -> RunStats:
        return self._pipeline.stats

    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        frame = next(self._it)
        self._pipeline.stats.frames_written += 1  # handed to the caller counts as written
        return frame

    def close(self) -> None:
        """Stop early: closes the chain and the input."""
        self._it.close()
        self._pipeline.stats.stopped_early = True

    def __enter__(self) -> FrameStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_source(
    input: str,  # noqa: A002 - ffmpeg's -i
    *,
    input_format: str | None = None,
    input_options: dict[str, str] | None = None,
    source_options: dict[str, Any] | None = None,
) -> Source:
    """Open an input file, URL or (with ``input_format="lavfi"``) a lavfi source graph.

    ``source_options`` are :class:`Source`'s keywords: ``seek``, ``duration``, ``to``,
    ``itsoffset``, ``stream_loop``, ``realtime``, ``autorotate``, ``display_rotation``,
    ``xerror``, ``max_error_rate``, ``threads`` ... (docs/media.md).
    """
    return Source(input, format=input_format, options=input_options, **(source_options or {}))


@overload
def run(
    input: str, filters: str = "", *, output: None = None, input_format: str | None = None,  # noqa: A002
    input_options: dict[str, str] | None = None, frames: int | None = None, **output_options: Any,
) -> FrameStream: ...


@overload
def run(
    input: str, filters: str = "", *, output: str | BinaryIO, input_format: str | None = None,  # noqa: A002
    input_options: dict[str, str] | None = None, frames: int | None = None, **output_options: Any,
) -> RunStats: ...


def run(
    input: str,  # noqa: A002 - ffmpeg's -i
    filters: str = "",
    *,
    output: str | BinaryIO | None = None,
    input_format: str | None = None,
    input_options: dict[str, str] | None = None,
    source_options: dict[str, Any] | None = None,
    frames: int | None = None,
    format: str | None = None,  # noqa: A002 - ffmpeg's -f
    codec: str | None = None,
    pix_fmt: str | None = None,
    rate: Fraction | float | str | None = None,
    overwrite: bool | None = True,
    bitexact: bool = False,
    codec_options: dict[str, str] | None = None,
    fps_mode: str = "auto",
    progress: ProgressFn | None = None,
) -> FrameStream | RunStats:
    """Run ``filters`` (an FFmpeg filter string) over ``input``.

    Without ``output``: returns an iterator of :class:`Frame` (``frames`` caps how many).
    With ``output`` (a path, ``"-"`` or a binary file object): encodes there and returns
    the :class:`RunStats` frame accounting. ``format``, ``codec``, ``pix_fmt``, ``rate``
    mirror ffmpeg's ``-f``, ``-c:v``, ``-pix_fmt`` and ``-r`` of the output; ``source_options``
    the input's ``-ss``/``-t``/``-re``/``-xerror``... as :class:`Source` keywords.
    """
    source = open_source(input, input_format=input_format, input_options=input_options,
                         source_options=source_options)
    try:
        if output is None:
            pipeline = Pipeline(source, filters, max_frames=frames)
            stream = FrameStream(pipeline)
            if frames is not None:
                return _Limited(stream, frames)
            return stream
        sink = Sink(output, format=format, codec=codec, pix_fmt=pix_fmt,
                    rate=Fraction(rate) if rate is not None else None, overwrite=overwrite,
                    bitexact=bitexact, codec_options=codec_options, fps_mode=fps_mode)
    except BaseException:
        source.close()
        raise
    try:
        pipeline = Pipeline(source, filters, sink=sink, max_frames=frames)
    except BaseException:
        source.close()
        sink.abort()
        raise
    return pipeline.run(progress)


class _Limited(FrameStream):
    """A FrameStream that stops after ``limit`` frames, closing the chain (like -frames:v)."""

    def __init__(self, stream: FrameStream, limit: int) -> None:
        self.__dict__.update(stream.__dict__)
        self._limit = limit

    def __next__(self) -> Frame:
        if self.stats.frames_written >= self._limit:
            self.close()
            raise StopIteration
        return super().__next__()
