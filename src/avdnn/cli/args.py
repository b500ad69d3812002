"""The parsed command line: :class:`Args`, one per output, and what it asks of the API.

:mod:`avdnn.cli.parser` fills it from argv (ffmpeg's argument order), :mod:`avdnn.cli.options`
the values of its input and output options; :func:`run_kwargs` gives an output's
:func:`avdnn.run` keywords.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from avdnn.api import RunOptions, StreamOptions

#: -loglevel NAME as a level of Python's logging
LOG_LEVELS = {
    "quiet": logging.CRITICAL + 10,
    "panic": logging.CRITICAL,
    "fatal": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "verbose": logging.INFO - 1,
    "debug": logging.DEBUG,
    "trace": logging.DEBUG - 1,
}


@dataclass
class Args:
    """The parsed command line."""

    overwrite: bool | None = None
    hide_banner: bool = False
    loglevel: str = "info"
    stats: bool | None = None
    help_topic: str | None = None
    list_filters: bool = False
    show_version: bool = False
    input: str | None = None
    input_format: str | None = None
    input_options: dict[str, str] = field(default_factory=dict)
    #: Source keywords from input options (-ss, -t, -re, -noautorotate, ...) and -xerror/-max_error_rate
    source_options: dict[str, Any] = field(default_factory=dict)
    filters: str = ""
    frames: int | None = None
    codec: str | None = None
    pix_fmt: str | None = None
    rate: Fraction | None = None
    format: str | None = None
    fps_mode: str = "auto"
    bitexact: bool = False
    codec_options: dict[str, str] = field(default_factory=dict)
    format_options: dict[str, str] = field(default_factory=dict)
    streams: StreamOptions = field(default_factory=StreamOptions)
    metadata: dict[str, str] = field(default_factory=dict)
    #: output -ss, -t, -to as given (ffmpeg's duration syntax)
    start_time: str | None = None
    recording_time: str | None = None
    stop_time: str | None = None
    size: tuple[int, int] | None = None
    output: str | None = None
    #: ffmpeg's listing asked for (-encoders, -codecs, -formats, ...), see help.listing_text
    listing: str | None = None
    #: -progress URL and -stats_period seconds
    progress: str | None = None
    stats_period: float = 0.5
    filter_complex: str | None = None
    #: inputs 1, 2, ...: (url, -f, options before their -i)
    more_inputs: list[tuple[str, str | None, dict[str, str]]] = field(default_factory=list)
    #: inputs 1, 2, ...: their Source keywords (-ss, -t, -re ...; -xerror/-max_error_rate are in all), by index
    more_source_options: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: -c:v / -vcodec, -c:a / -acodec before -i, by media type
    input_codecs: dict[str, str] = field(default_factory=dict)
    #: Every output in command-line order, each an Args of its own: the global and input options
    #: are the same in all, the output options (``OUTPUT_FIELDS``) are that output's. The
    #: output fields of this Args itself are the first output's (with one output: the output).
    outputs: list[Args] = field(default_factory=list)


#: The fields of Args that an output path takes and resets (ffmpeg: per-output options).
OUTPUT_FIELDS = (
    "filters",
    "frames",
    "codec",
    "pix_fmt",
    "rate",
    "format",
    "fps_mode",
    "bitexact",
    "codec_options",
    "format_options",
    "streams",
    "metadata",
    "start_time",
    "recording_time",
    "stop_time",
    "size",
    "output",
)


def run_kwargs(args: Args) -> RunOptions:
    """The :func:`avdnn.run` keywords of a parsed command line's output options."""
    return {
        "input_format": args.input_format,
        "input_options": args.input_options,
        "source_options": args.source_options,
        "frames": args.frames,
        "format": args.format,
        "codec": args.codec,
        "pix_fmt": args.pix_fmt,
        "rate": args.rate,
        "overwrite": args.overwrite,
        "bitexact": args.bitexact,
        "codec_options": args.codec_options,
        "format_options": args.format_options,
        "fps_mode": args.fps_mode,
        "stream_options": args.streams,
        "metadata": args.metadata or None,
        "start_time": args.start_time,
        "recording_time": args.recording_time,
        "stop_time": args.stop_time,
        "size": args.size,
        "filter_complex": args.filter_complex,
        "input_codecs": args.input_codecs or None,
        "more_inputs": args.more_inputs,
        "more_source_options": args.more_source_options or None,
    }
