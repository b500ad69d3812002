"""The Python API: iterate the frames of a chain, or run a chain from an input to an output.

>>> for frame in avdnn.run("in.mp4", "scale=320:-2,format=rgb24"):   # doctest: +SKIP
...     print(frame.pts, frame.to_ndarray().shape)
>>> stats = avdnn.run("in.mp4", "format=gray", output="out.mkv")   # doctest: +SKIP
>>> report = avdnn.batch(["a.mp4", "b.mp4"], "scale=320:-2", output="out/{stem}.mkv")  # doctest: +SKIP

All take the same options as the CLI, by keyword. Errors raise :class:`avdnn.AvdnnError`
after the output (if any) has been finished cleanly with the frames before the error. This is
the typed front of :mod:`avdnn.run.builder`, which builds and runs what the keywords ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, BinaryIO, Unpack, overload

from avdnn.dnn.keep import ModelKeeper
from avdnn.errors import InvalidArgumentError
from avdnn.run.builder import RunBuilder
from avdnn.run.framestream import FrameStream
from avdnn.run.inputs import dump_input, open_source, probe_input
from avdnn.run.pipeline import ProgressFn
from avdnn.run.request import RunOptions, RunRequest
from avdnn.run.selection import StreamOptions
from avdnn.run.stats import RunStats

__all__ = [
    "FrameStream",
    "RunOptions",
    "StreamOptions",
    "dump_input",
    "keep_models",
    "open",
    "open_source",
    "probe",
    "run",
]


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
    request = RunRequest(
        input,
        filters,
        output=output,
        input_format=input_format,
        input_options=input_options,
        source_options=source_options,
        frames=frames,
        format=format,
        codec=codec,
        pix_fmt=pix_fmt,
        rate=rate,
        overwrite=overwrite,
        bitexact=bitexact,
        codec_options=codec_options,
        fps_mode=fps_mode,
        progress=progress,
        map=map,
        vn=vn,
        an=an,
        sn=sn,
        dn=dn,
        audio_codec=audio_codec,
        subtitle_codec=subtitle_codec,
        audio_bitrate=audio_bitrate,
        audio_rate=audio_rate,
        audio_channels=audio_channels,
        audio_filters=audio_filters,
        metadata=metadata,
        stream_options=stream_options,
        start_time=start_time,
        recording_time=recording_time,
        stop_time=stop_time,
        format_options=format_options,
        size=size,
        filter_complex=filter_complex,
        input_codecs=input_codecs,
        banner=banner,
        more_inputs=more_inputs,
        more_source_options=more_source_options,
    )
    built = RunBuilder(request)  # the keywords are checked here, before anything opens
    return built.frames() if output is None else built.run()


def probe(
    input: str,  # noqa: A002 - ffmpeg's -i
    *,
    input_format: str | None = None,
    input_options: dict[str, str] | None = None,
    banner: bool = True,
) -> None:
    """Open ``input`` only to describe it (``ffmpeg -i FILE`` without an output).

    Raises what opening it raises (a missing file, an unknown format); ``banner`` prints its
    ``Input #0`` block on stderr. Nothing is decoded.
    """
    probe_input(input, input_format=input_format, input_options=input_options, show=banner)


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


def keep_models() -> ModelKeeper:
    """Keep the models of this process's runs loaded until the returned keeper is closed.

    Every run started meanwhile takes an idle model already loaded with the same file and
    options instead of loading it again (what a worker running one chain over many files
    wants); ``with avdnn.api.keep_models() as kept: ...`` frees them at the end, and
    ``kept.loads`` counts the files actually loaded.
    """
    return ModelKeeper()
