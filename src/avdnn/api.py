"""The Python API: iterate the frames of a chain, or run a chain from an input to an output.

>>> for frame in avdnn.run("in.mp4", "scale=320:-2,format=rgb24"):   # doctest: +SKIP
...     print(frame.pts, frame.to_ndarray().shape)
>>> stats = avdnn.run("in.mp4", "format=gray", output="out.mkv")   # doctest: +SKIP
>>> report = avdnn.batch(["a.mp4", "b.mp4"], "scale=320:-2", output="out/{stem}.mkv")  # doctest: +SKIP

All take the same options as the CLI, by keyword. Errors raise :class:`avdnn.AvdnnError`
after the output (if any) has been finished cleanly with the frames before the error.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any, BinaryIO, overload

from .dnn.keep import ModelKeeper
from .graph.pipeline import Pipeline, ProgressFn
from .graph.stats import RunStats
from .media.frame import Frame
from .media.sink import Sink
from .media.source import Source

if TYPE_CHECKING:
    from .batch.report import BatchReport


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
) -> Source:
    """Open an input file, URL or (with ``input_format="lavfi"``) a lavfi source graph."""
    return Source(input, format=input_format, options=input_options)


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
    mirror ffmpeg's ``-f``, ``-c:v``, ``-pix_fmt`` and ``-r`` of the output.
    """
    source = open_source(input, input_format=input_format, input_options=input_options)
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


def keep_models() -> ModelKeeper:
    """Keep the models of this process's runs loaded until the returned keeper is closed.

    Every run started meanwhile takes an idle model already loaded with the same file and
    options instead of loading it again (what a worker running one chain over many files
    wants); ``with avdnn.api.keep_models() as kept: ...`` frees them at the end, and
    ``kept.loads`` counts the files actually loaded.
    """
    return ModelKeeper()


def batch(
    inputs: str | list[str],
    chain: str = "",
    *,
    output: str,
    workers: int = 2,
    address: str | None = None,
    resume: bool = False,
    retries: int = 3,
    report: str | None = None,
    num_cpus: float = 1.0,
    num_gpus: float = 0.0,
    progress_bar: bool | None = None,
    **run_options: Any,
) -> BatchReport:
    """Run ``chain`` over every input on Ray, one output per input named by the ``output`` template.

    ``inputs`` are paths or globs; ``output`` takes ``{stem}``, ``{name}``, ``{parent}`` and
    ``{index}``. ``run_options`` are :func:`run`'s keywords and go to it untouched. See
    :func:`avdnn.batch.batch` (and docs/batch.md) for workers, resources, retries and resume.
    """
    from .batch.runner import batch as run_batch  # layer 8: Ray and its extra, loaded on first use

    return run_batch(inputs, chain, output=output, workers=workers, address=address, resume=resume,
                     retries=retries, report=report, num_cpus=num_cpus, num_gpus=num_gpus,
                     progress_bar=progress_bar, **run_options)
