"""The Python API: iterate the frames of a chain, or run a chain from an input to an output.

>>> for frame in avdnn.run("in.mp4", "scale=320:-2,format=rgb24"):   # doctest: +SKIP
...     print(frame.pts, frame.to_ndarray().shape)
>>> stats = avdnn.run("in.mp4", "format=gray", output="out.mkv")   # doctest: +SKIP
>>> report = avdnn.batch(["a.mp4", "b.mp4"], "scale=320:-2", output="out/{stem}.mkv")  # doctest: +SKIP

All take the same options as the CLI, by keyword. Errors raise :class:`avdnn.AvdnnError`
after the output (if any) has been finished cleanly with the frames before the error.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any, BinaryIO, TypedDict, Unpack, overload

from avdnn.dnn.keep import ModelKeeper
from avdnn.errors import InvalidArgumentError, NotSupportedError
from avdnn.media.frame import Frame
from avdnn.media.input.source import Source
from avdnn.media.output.sink import Sink
from avdnn.run.complex import apply_complex, check_reopenable, graph_mapping
from avdnn.run.complexgraph import complex_pipeline
from avdnn.run.outputopts import check_output_options, fold_stream_options, output_size, refuse_output_only
from avdnn.run.pipeline import Pipeline, ProgressFn
from avdnn.run.selection import StreamOptions
from avdnn.run.stats import RunStats
from avdnn.run.wiring import check_input_codecs, plan_output, referenced_inputs

__all__ = ["FrameStream", "RunOptions", "StreamOptions", "dump_input", "keep_models", "open", "open_source", "run"]


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
        self._pipeline.stats.output_in += 1
        if frame.side_data.arrival is not None:  # end-to-end latency: input to the caller's hands
            self._pipeline.stats.latency.add(time.monotonic() - frame.side_data.arrival)
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
    video: bool = True,
) -> Source:
    """Open an input file, URL or (with ``input_format="lavfi"``) a lavfi source graph.

    ``source_options`` are :class:`Source`'s keywords: ``seek``, ``duration``, ``to``,
    ``itsoffset``, ``stream_loop``, ``realtime``, ``autorotate``, ``display_rotation``,
    ``xerror``, ``max_error_rate``, ``threads`` ... (docs/media.md). ``video=False`` also opens
    an input without video (an audio file for an audio-only output).
    """
    return Source(input, format=input_format, options=input_options, video=video, **(source_options or {}))


class RunOptions(TypedDict, total=False):
    """The keywords of :func:`run` besides the input, the chain and the output (the CLI's options)."""

    input_format: str | None
    input_options: dict[str, str] | None
    source_options: dict[str, Any] | None
    frames: int | None
    format: str | None
    codec: str | None
    pix_fmt: str | None
    rate: Fraction | float | str | None
    overwrite: bool | None
    bitexact: bool
    codec_options: dict[str, str] | None
    fps_mode: str
    progress: ProgressFn | None
    map: Sequence[str] | None
    vn: bool
    an: bool
    sn: bool
    dn: bool
    audio_codec: str | None
    subtitle_codec: str | None
    audio_bitrate: str | int | None
    audio_rate: int | None
    audio_channels: int | None
    audio_filters: str
    metadata: dict[str, str] | None
    stream_options: StreamOptions | None
    start_time: int | float | str | None
    recording_time: int | float | str | None
    stop_time: int | float | str | None
    format_options: dict[str, str] | None
    size: tuple[int, int] | str | None
    filter_complex: str | None
    input_codecs: dict[str, str] | None
    banner: bool
    more_inputs: Sequence[tuple[str, str | None, dict[str, str]]]
    more_source_options: dict[int, dict[str, Any]] | None


@overload
def run(input: str, filters: str = "", *, output: None = None, **options: Unpack[RunOptions]) -> FrameStream: ...


@overload
def run(input: str, filters: str = "", *, output: str | BinaryIO, **options: Unpack[RunOptions]) -> RunStats: ...


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
    overwrite: bool | None = None,
    bitexact: bool = False,
    codec_options: dict[str, str] | None = None,
    fps_mode: str = "auto",
    progress: ProgressFn | None = None,
    map: Sequence[str] | None = None,  # noqa: A002 - ffmpeg's -map
    vn: bool = False,
    an: bool = False,
    sn: bool = False,
    dn: bool = False,
    audio_codec: str | None = None,
    subtitle_codec: str | None = None,
    audio_bitrate: str | int | None = None,
    audio_rate: int | None = None,
    audio_channels: int | None = None,
    audio_filters: str = "",
    metadata: dict[str, str] | None = None,
    stream_options: StreamOptions | None = None,
    start_time: int | float | str | None = None,
    recording_time: int | float | str | None = None,
    stop_time: int | float | str | None = None,
    format_options: dict[str, str] | None = None,
    size: tuple[int, int] | str | None = None,
    filter_complex: str | None = None,
    input_codecs: dict[str, str] | None = None,
    banner: bool = False,
    more_inputs: Sequence[tuple[str, str | None, dict[str, str]]] = (),
    more_source_options: dict[int, dict[str, Any]] | None = None,
) -> FrameStream | RunStats:
    """Run ``filters`` (an FFmpeg filter string) over ``input``.

    Without ``output``: returns an iterator of :class:`Frame` (``frames`` caps how many).
    With ``output`` (a path, ``"-"`` or a binary file object): encodes there and returns
    the :class:`RunStats` frame accounting. ``format``, ``codec``, ``pix_fmt``, ``rate``
    mirror ffmpeg's ``-f``, ``-c:v``, ``-pix_fmt`` and ``-r`` of the output; ``source_options``
    the input's ``-ss``/``-t``/``-re``/``-xerror``... as :class:`Source` keywords.

    The output keeps the input's other streams as ffmpeg does (the best audio, a subtitle
    stream the muxer takes): ``map`` (``["0:v", "0:a:1", "-0:s"]``), ``vn``/``an``/``sn``/``dn``,
    ``audio_codec`` (``"copy"`` or an encoder), ``audio_bitrate`` (``"128k"``), ``audio_rate``,
    ``audio_channels``, ``audio_filters`` (``-af``) and ``subtitle_codec`` select and shape them;
    ``stream_options`` takes all of them (and per-stream specifiers) at once, as the CLI does.
    ``start_time``, ``recording_time`` and ``stop_time`` are the output's ``-ss``, ``-t`` and
    ``-to`` (seconds, or ffmpeg's duration text such as ``"00:01:02.5"``).
    ``filter_complex`` takes a ``-filter_complex`` graph in place of ``filters``: one chain (what
    ffmpeg-python writes) or multi-input filters over ``input`` and ``more_inputs``
    (``[0:v][1:v]overlay[o]``); its output label is mapped with ``map=["[o]"]``.
    ``input_codecs`` are the input's ``-c:v``/``-c:a`` by media type ("video", "audio"), checked
    against the streams' own decoders.
    ``banner`` prints ffmpeg's ``Input #0``, ``Stream mapping:`` and ``Output #0`` blocks on stderr.
    ``more_inputs`` are inputs 1, 2, ... as (url, format, options): their streams are mapped as
    ffmpeg maps them (``map=["0:v:0", "1:a:0"]``, or automatically). The chain's video may come
    from any input (``map=["1:v", "0:a"]``); the other streams go around the chain. Only the
    inputs the maps name are opened (all of them without ``map``). ``more_source_options`` are
    the Source keywords of inputs 1, 2, ... by index (``{1: {"seek": 2}}``); timing ones (``seek``,
    ``duration``, ``realtime`` ...) act on the input whose video the output filters.
    """
    from avdnn.media.timing import parse_time

    filters, map, stream_options, graph = apply_complex(  # noqa: A001
        filter_complex, filters, map, stream_options, n_inputs=1 + len(more_inputs)
    )
    start_us = parse_time(start_time, "ss")
    rec_us = parse_time(recording_time, "t")
    stop_us = parse_time(stop_time, "to")
    if rec_us is None and stop_us is not None:
        rec_us = stop_us - (start_us or 0)
        if rec_us <= 0:
            raise InvalidArgumentError("-to value smaller than -ss; aborting.", option="to")
    rate = check_output_options(rate=rate, fps_mode=fps_mode, pix_fmt=pix_fmt, frames=frames)

    def open_input(k: int) -> Source:
        """Input ``k`` once more, for a core input of the graph (its own decoder)."""
        url, fmt, options = (input, input_format, input_options) if k == 0 else more_inputs[k - 1]
        check_reopenable(url, fmt, k)
        own = source_options if k == 0 else (more_source_options or {}).get(k)
        return open_source(url, input_format=fmt, input_options=options, source_options=own)

    if output is None:
        # every keyword is consumed or refused: frames handed to the caller come from input 0
        # through the chain (or from the graph's inputs), so the output's options have no use
        refuse_output_only(dict(locals()), graph=None if graph is None else graph.linear)
        source = open_source(
            input, input_format=input_format, input_options=input_options, source_options=source_options
        )
        try:
            check_input_codecs(source, input_codecs or {})
            if banner:
                dump_input(source)
            pipeline = (
                complex_pipeline(graph, source, open_input=open_input, max_frames=frames)
                if graph is not None and not graph.linear
                else Pipeline(source, filters, max_frames=frames)
            )
        except BaseException:
            source.close()
            raise
        stream = FrameStream(pipeline)
        return _Limited(stream, frames) if frames is not None else stream
    opts = fold_stream_options(
        stream_options,
        map=map,
        vn=vn,
        an=an,
        sn=sn,
        dn=dn,
        codec=codec,
        audio_codec=audio_codec,
        subtitle_codec=subtitle_codec,
        audio_bitrate=audio_bitrate,
        audio_rate=audio_rate,
        audio_channels=audio_channels,
        audio_filters=audio_filters,
    )
    used = referenced_inputs(opts.maps, 1 + len(more_inputs))
    inputs: list[Source | None] = [None] * (1 + len(more_inputs))
    if 0 in used:
        inputs[0] = open_source(
            input, input_format=input_format, input_options=input_options, source_options=source_options, video=False
        )
    try:
        if inputs[0] is not None:
            check_input_codecs(inputs[0], input_codecs or {})
            if banner:
                dump_input(inputs[0])
        video_codec = opts.lookup(opts.codecs, "video", 0)
        sink = Sink(
            output,
            format=format,
            codec=None if video_codec == "copy" else video_codec,
            pix_fmt=pix_fmt,
            rate=rate,
            overwrite=overwrite,
            bitexact=bitexact,
            codec_options=codec_options,
            fps_mode=fps_mode,
            metadata=metadata,
            start_time=start_us,
            recording_time=rec_us,
            format_options=format_options,
            size=output_size(size),
        )
    except BaseException:
        _close_all(inputs)
        raise
    companions: list[Any] = []
    try:
        for k, (url, fmt, options) in enumerate(more_inputs, start=1):
            if k in used:
                own = (more_source_options or {}).get(k)
                inputs[k] = more = open_source(
                    url, input_format=fmt, input_options=options, source_options=own, video=False
                )
                if banner:
                    dump_input(more, k)
        driver, companions = plan_output(inputs, sink, opts, filters, bitexact=sink.bitexact)
        picked = inputs[driver]
        assert picked is not None
        source = picked
        for companion in companions:  # an input feeding streams around the chain is read as is
            k = next(k for k, src in enumerate(inputs) if src is companion.source)
            timing = set((source_options if k == 0 else (more_source_options or {}).get(k)) or {}) & _TIMING_OPTIONS
            if timing:
                raise NotSupportedError(
                    f"input options {', '.join(sorted(timing))} of input #{k}, whose streams go around "
                    f"the chain of input #{driver}'s video, are not supported yet",
                    option="i",
                )
        others = [src for k, src in enumerate(inputs) if src is not None and k != driver]
    except BaseException:
        _close_all(inputs)
        sink.abort()
        raise
    if banner:
        from avdnn.media.libav.banner import announce_output

        announce_output(source, sink, None if graph is None else graph_mapping(graph, [source, *others]))
    try:
        if graph is not None and not graph.linear:
            pipeline = complex_pipeline(graph, source, open_input=open_input, sink=sink, max_frames=frames)
        else:
            pipeline = Pipeline(source, filters, sink=sink, max_frames=frames)
    except BaseException:
        _close_all(inputs)
        sink.abort()
        raise
    try:
        for companion in companions:
            companion.start()
        return pipeline.run(progress)
    finally:
        for companion in companions:
            companion.close()
        for other in others:
            other.close()


#: Source keywords that shift or cut the input's timeline (they act on the driving input only).
_TIMING_OPTIONS = {"seek", "duration", "to", "itsoffset", "stream_loop", "realtime", "readrate"}


def _close_all(inputs: Sequence[Source | None]) -> None:
    for src in inputs:
        if src is not None:
            src.close()


def dump_input(source: Source, index: int = 0) -> bool:
    """ffmpeg's ``Input #index, FORMAT, from 'URL':`` block of an open source, on stderr."""
    from avdnn.media.libav.banner import dump_format

    return dump_format(source.container, index, "pipe:" if source.url == "-" else source.name, output=False)


def open(  # noqa: A001 - avdnn.open, as av.open: the iterating half of run()
    input: str,  # noqa: A002 - ffmpeg's -i
    filters: str = "",
    **options: Unpack[RunOptions],
) -> FrameStream:
    """Open ``input`` through ``filters`` and iterate its frames (``run()`` without an output).

    >>> with avdnn.open("in.mp4", "dnn_detect=model=zoo:blazeface") as frames:   # doctest: +SKIP
    ...     for frame in frames:
    ...         print(frame.pts, frame.detections)
    """
    if "output" in options:
        raise InvalidArgumentError(
            "avdnn.open() iterates frames; use avdnn.run(..., output=...) to write a file", option="output"
        )
    return run(input, filters, output=None, **options)


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
