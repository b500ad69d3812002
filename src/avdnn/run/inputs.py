"""A run's inputs: opening one, ffmpeg's ``Input #N`` block, the input's ``-c:v``/``-c:a``, a probe.

Every input of a run is opened here, with its demuxer options and its :class:`Source` keywords;
``avdnn -i FILE`` without an output is :func:`probe_input`: the input opened (its errors are the
run's) and described, nothing read.
"""

from __future__ import annotations

from typing import Any

from avdnn.errors import NotSupportedError
from avdnn.media.input.source import Source

__all__ = ["check_input_codecs", "dump_input", "open_source", "probe_input"]


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


def dump_input(source: Source, index: int = 0) -> bool:
    """ffmpeg's ``Input #index, FORMAT, from 'URL':`` block of an open source, on stderr."""
    from avdnn.media.libav.banner import dump_format

    return dump_format(source.container, index, "pipe:" if source.url == "-" else source.name, output=False)


def probe_input(
    input: str,  # noqa: A002 - ffmpeg's -i
    *,
    input_format: str | None = None,
    input_options: dict[str, str] | None = None,
    show: bool = True,
) -> None:
    """``ffmpeg -i FILE`` without an output: open the input (raising what opening it raises) and,
    with ``show``, print its ``Input #0`` block; the input is closed again, nothing is decoded."""
    with open_source(input, input_format=input_format, input_options=input_options, video=False) as source:
        if show:
            dump_input(source)


def check_input_codecs(source: Source, names: dict[str, str]) -> None:
    """The input's ``-c:v``/``-c:a``: avdnn decodes with each stream's own decoder, so it must be that one."""
    for kind, name in names.items():
        stream = next((s for s in source.streams if s.type == kind), None)
        have = stream.codec_context.name if stream is not None and stream.codec_context is not None else "none"
        if have != name:
            raise NotSupportedError(
                f"input -c:{kind[0]} {name}: avdnn decodes the stream with its own decoder "
                f"({have}); forcing another decoder is not supported yet",
                option=f"c:{kind[0]}",
            )
