"""What one run is asked to do: :func:`avdnn.run`'s keywords as one value, checked before anything opens.

:class:`RunOptions` are the keywords (the CLI's options) by name; :class:`RunRequest` holds them
with the input, the chain and the output, as every layer below the API takes them. Checking
here gives avdnn's errors (naming ffmpeg's option) rather than Python's, and folds the keyword
shortcuts (``map``, ``an``, ``audio_codec`` ...) into one :class:`StreamOptions`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, BinaryIO, TypedDict

from avdnn.errors import InvalidArgumentError
from avdnn.media.timing import parse_time
from avdnn.run.pipeline import ProgressFn
from avdnn.run.selection import StreamOptions, referenced_inputs

__all__ = [
    "RunOptions",
    "RunRequest",
    "check_output_options",
    "fold_stream_options",
    "output_size",
    "output_window",
    "refuse_output_only",
]


class RunOptions(TypedDict, total=False):
    """The keywords of :func:`avdnn.run` besides the input, the chain and the output (the CLI's options)."""

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


@dataclass
class RunRequest:
    """One run: its input, chain and output (None: the frames are iterated), and every :class:`RunOptions`
    keyword with :func:`avdnn.run`'s default (the same names, so ``RunRequest(**options)`` takes them)."""

    input: str
    filters: str = ""
    output: str | BinaryIO | None = None
    input_format: str | None = None
    input_options: dict[str, str] | None = None
    source_options: dict[str, Any] | None = None
    frames: int | None = None
    format: str | None = None
    codec: str | None = None
    pix_fmt: str | None = None
    rate: Fraction | float | str | None = None
    overwrite: bool | None = None
    bitexact: bool = False
    codec_options: dict[str, str] | None = None
    fps_mode: str = "auto"
    progress: ProgressFn | None = None
    map: Sequence[str] | None = None
    vn: bool = False
    an: bool = False
    sn: bool = False
    dn: bool = False
    audio_codec: str | None = None
    subtitle_codec: str | None = None
    audio_bitrate: str | int | None = None
    audio_rate: int | None = None
    audio_channels: int | None = None
    audio_filters: str = ""
    metadata: dict[str, str] | None = None
    stream_options: StreamOptions | None = None
    start_time: int | float | str | None = None
    recording_time: int | float | str | None = None
    stop_time: int | float | str | None = None
    format_options: dict[str, str] | None = None
    size: tuple[int, int] | str | None = None
    filter_complex: str | None = None
    input_codecs: dict[str, str] | None = None
    banner: bool = False
    more_inputs: Sequence[tuple[str, str | None, dict[str, str]]] = ()
    more_source_options: dict[int, dict[str, Any]] | None = None

    @property
    def n_inputs(self) -> int:
        return 1 + len(self.more_inputs)

    def input_of(self, k: int) -> tuple[str, str | None, dict[str, str] | None]:
        """Input ``k`` (0: ``input``, then ``more_inputs``) as (url, format, demuxer options)."""
        return (self.input, self.input_format, self.input_options) if k == 0 else self.more_inputs[k - 1]

    def source_options_of(self, k: int) -> dict[str, Any] | None:
        """The Source keywords of input ``k``."""
        return self.source_options if k == 0 else (self.more_source_options or {}).get(k)

    def given_maps(self) -> list[str]:
        """The output's ``-map`` arguments (``stream_options``'s first, as the run folds them)."""
        given = self.stream_options
        return list(given.maps) if given is not None and given.maps else list(self.map or [])

    def inputs_read(self) -> list[tuple[int, str]]:
        """The inputs this output opens (those its maps name; all without maps), as (index, URL)."""
        urls = [self.input, *(url for url, _, _ in self.more_inputs)]
        return [(k, urls[k]) for k in sorted(referenced_inputs(self.given_maps(), len(urls)))]

    @property
    def output_name(self) -> str:
        """The output as ffmpeg names it: its path, ``pipe:`` for stdout, a file object's name."""
        if isinstance(self.output, str):
            return "pipe:" if self.output == "-" else self.output
        return str(getattr(self.output, "name", "<file object>"))

    def writes_file(self) -> str | None:
        """The file (absolute path, or ``pipe:``) the output writes; None for a file object or ``-f null``."""
        if not isinstance(self.output, str) or self.format == "null":
            return None
        return os.path.abspath(self.output) if self.output_name != "pipe:" else "pipe:"

    def keywords(self) -> dict[str, Any]:
        """Every keyword by name, as given (the objects themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def output_window(
    start_time: int | float | str | None,
    recording_time: int | float | str | None,
    stop_time: int | float | str | None,
) -> tuple[int | None, int | None]:
    """The output's ``-ss`` and ``-t`` in microseconds (``-to`` without ``-t``: the time up to it)."""
    start_us = parse_time(start_time, "ss")
    rec_us = parse_time(recording_time, "t")
    stop_us = parse_time(stop_time, "to")
    if rec_us is None and stop_us is not None:
        rec_us = stop_us - (start_us or 0)
        if rec_us <= 0:
            raise InvalidArgumentError("-to value smaller than -ss; aborting.", option="to")
    return start_us, rec_us


def check_output_options(
    *, rate: Fraction | float | str | None, fps_mode: str, pix_fmt: str | None, frames: int | None
) -> Fraction | None:
    """The output options as values, checked before anything is opened (avdnn's errors, not Python's)."""
    out: Fraction | None = None
    if rate is not None:
        try:
            out = Fraction(rate)
        except (ValueError, ZeroDivisionError, TypeError):
            raise InvalidArgumentError(f"Invalid framerate value: {rate}", option="r") from None
        if out <= 0:
            raise InvalidArgumentError(f"Invalid framerate value: {rate}", option="r")
    if fps_mode not in ("auto", "passthrough", "cfr", "vfr"):
        raise InvalidArgumentError(
            f"Invalid value {fps_mode} for fps_mode: auto, passthrough, cfr or vfr", option="fps_mode"
        )
    if pix_fmt is not None:
        from avdnn.media.pixfmt import is_known

        if not is_known(pix_fmt):
            raise InvalidArgumentError(f"Unknown pixel format requested: {pix_fmt}.", option="pix_fmt")
    if frames is not None and (not isinstance(frames, int) or frames < 0):
        raise InvalidArgumentError(f"Invalid frame count '{frames}'", option="frames:v")
    return out


def output_size(size: tuple[int, int] | str | None) -> tuple[int, int] | None:
    if size is None or isinstance(size, tuple):
        return size
    from avdnn.media.values import parse_size

    return parse_size(size)


def fold_stream_options(
    given: StreamOptions | None,
    *,
    map: Sequence[str] | None,  # noqa: A002 - ffmpeg's -map
    vn: bool,
    an: bool,
    sn: bool,
    dn: bool,
    codec: str | None,
    audio_codec: str | None,
    subtitle_codec: str | None,
    audio_bitrate: str | int | None,
    audio_rate: int | None,
    audio_channels: int | None,
    audio_filters: str,
) -> StreamOptions:
    """The keyword shortcuts folded into one StreamOptions (explicit ``stream_options`` first)."""
    opts = copy.deepcopy(given) if given is not None else StreamOptions()  # the caller's object stays as it was
    opts.maps = opts.maps or list(map or [])
    opts.vn, opts.an, opts.sn, opts.dn = opts.vn or vn, opts.an or an, opts.sn or sn, opts.dn or dn
    for spec, name in (("v", codec), ("a", audio_codec), ("s", subtitle_codec)):
        if name is not None:
            opts.codecs.setdefault(spec, name)
    for key, number in (("b", audio_bitrate), ("ar", audio_rate), ("ac", audio_channels)):
        if number is not None:
            opts.per_stream.setdefault((key, "a"), str(number))
    opts.audio_filters = opts.audio_filters or audio_filters
    return opts


#: The keywords of ``avdnn.run`` that only an output consumes (their defaults: RunRequest's).
OUTPUT_ONLY = (
    "map",
    "more_inputs",
    "more_source_options",
    "vn",
    "an",
    "sn",
    "dn",
    "format",
    "codec",
    "pix_fmt",
    "rate",
    "overwrite",
    "bitexact",
    "codec_options",
    "fps_mode",
    "progress",
    "audio_codec",
    "subtitle_codec",
    "audio_bitrate",
    "audio_rate",
    "audio_channels",
    "audio_filters",
    "metadata",
    "stream_options",
    "start_time",
    "recording_time",
    "stop_time",
    "format_options",
    "size",
)


def refuse_output_only(given: dict[str, Any], *, graph: bool | None) -> None:
    """Output keywords given to a run whose frames are iterated: an error naming them (never ignored).

    ``graph``: None without -filter_complex; else whether the graph is one chain (a graph with
    several inputs reads ``more_inputs``, and any graph has its own ``map``).
    """
    skip = set() if graph is None else {"map"} if graph else {"map", "more_inputs", "more_source_options"}
    unset: tuple[Any, ...] = (None, False, "", (), [], {})
    defaults = {f.name: f.default for f in fields(RunRequest)}
    names = [k for k in OUTPUT_ONLY if k not in skip and given.get(k) not in (defaults[k], *unset)]
    if names:
        raise InvalidArgumentError(
            f"{', '.join(names)}: output options, but the run has no output (its frames are iterated); "
            "give output=... or leave them out",
            option=names[0],
        )
