"""The ffmpeg-shaped command line, parsed: argv to :class:`Args` (and :func:`run_kwargs` for the API).

ffmpeg's argument order: options apply to the next ``-i`` (input) or output path. Options are
avdnn's own (ffmpeg_opt.c names, booleans negated with ``no``) or AVOptions of libavcodec,
libavformat, libswscale or libswresample, looked up as ffmpeg's cmdutils does; any other name is
ffmpeg's "Unrecognized option", and an option after the output is an error. :mod:`avdnn.cli`
runs what this module parses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .api import RunOptions, StreamOptions
from .errors import (
    AVERROR_OPTION_NOT_FOUND,
    InvalidArgumentError,
    NotSupportedError,
    OptionNotFoundError,
)

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
_NUMERIC_LEVELS = {
    -8: "quiet",
    0: "panic",
    8: "fatal",
    16: "error",
    24: "warning",
    32: "info",
    40: "verbose",
    48: "debug",
    56: "trace",
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
    #: -c:v / -vcodec, -c:a / -acodec before -i, by media type
    input_codecs: dict[str, str] = field(default_factory=dict)


#: ffmpeg's boolean options (``-an``; ``-noNAME`` negates), by where they apply.
_LISTINGS = {"encoders", "decoders", "codecs", "formats", "muxers", "demuxers", "pix_fmts", "protocols"}
_GLOBAL_BOOLS = {"y", "n", "hide_banner", "stats", "filters", "version", "stdin", *_LISTINGS}
#: Global options of fftools for the tools that drive ffmpeg (issue 16).
_TOOL_VALUES = {"progress", "stats_period", "filter_complex", "lavfi", "filter_complex_script", "/filter_complex"}
#: Input options that are demuxer AVOptions under another name, as ffmpeg_demux.c passes them.
_INPUT_ALIASES = {
    "s": "video_size",
    "r": "framerate",
    "pix_fmt": "pixel_format",
    "ar": "sample_rate",
    "ac": "ch_layout",
}
_FILE_BOOLS = {"bitexact", "vn", "an", "sn", "dn"}
#: Options that take a value and are avdnn's own (ffmpeg_opt.c names); the rest are AVOptions.
_GLOBAL_VALUES = {"loglevel", "v"}
_OUTPUT_VALUES = {
    "vf",
    "filter",
    "af",
    "frames",
    "vframes",
    "c",
    "codec",
    "vcodec",
    "acodec",
    "scodec",
    "pix_fmt",
    "r",
    "f",
    "fps_mode",
    "vsync",
    "map",
    "metadata",
    "b",
    "ar",
    "ac",
    "ss",
    "t",
    "to",
    "map_metadata",
    "map_chapters",
    "s",
}


def _split(tok: str) -> tuple[str, str]:
    """``-c:a:1`` -> ("c", "a:1"); ``-vf`` -> ("vf", "")."""
    name, _, spec = tok[1:].partition(":")
    return name, spec


def parse_args(argv: Sequence[str]) -> Args:
    """ffmpeg's argument order: options apply to the next -i (input) or output path.

    Options are avdnn's own (ffmpeg_opt.c names, booleans negated with ``no``), or AVOptions of
    libavcodec, libavformat, libswscale or libswresample (looked up as ffmpeg's cmdutils does):
    before ``-i`` they go to the demuxer and decoder, after it to the encoder and muxer. Any
    other name is an error naming it, and so is an option after the last output.
    """
    a = Args()
    pending_fmt: str | None = None
    pending_in: dict[str, str] = {}
    pending_src: dict[str, Any] = {}
    pending_disabled: set[str] = set()
    i = 0
    # options before the last -i belong to the inputs (ffmpeg: to the next -i), after it to the output
    last_input = max((k for k, tok in enumerate(argv[:-1]) if tok == "-i"), default=-1)

    def value(opt: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            raise InvalidArgumentError(f"Missing argument for option '{opt.lstrip('-')}'.")
        i += 1
        return argv[i]

    while i < len(argv):
        tok = argv[i]
        name, spec = _split(tok) if tok.startswith("-") and tok != "-" else ("", "")
        negated = name[2:] if name.startswith("no") and name[2:] in _GLOBAL_BOOLS | _FILE_BOOLS else None
        if not name:
            if a.output is not None:
                raise InvalidArgumentError(f"avdnn writes one output: '{a.output}' and '{tok}' given")
            a.output = tok
        elif name in _GLOBAL_BOOLS or negated in _GLOBAL_BOOLS:
            _global_flag(a, negated or name, on=negated is None)
        elif name in _GLOBAL_VALUES:
            a.loglevel = _loglevel(value(tok))
        elif name in _TOOL_VALUES:
            _tool_option(a, name, value(tok))
        elif name in ("h", "help", "-help", "?"):
            a.help_topic = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else ""
            i += 1 if a.help_topic else 0
        elif name == "i":
            if a.input is not None:  # a second input: its streams go around the chain (moviepy's audio)
                if pending_src:
                    raise NotSupportedError(
                        f"input options {', '.join(sorted(pending_src))} on a second input "
                        "are not supported yet (they apply to the first input)",
                        option="i",
                    )
                a.more_inputs.append((value(tok), pending_fmt, pending_in))
            else:
                a.input, a.input_format, a.input_options = value(tok), pending_fmt, pending_in
                a.source_options.update(pending_src)
            if pending_disabled:
                a.streams.input_disabled[len(a.more_inputs)] = pending_disabled
            pending_fmt, pending_in, pending_src, pending_disabled = None, {}, {}, set()
        elif tok in _SOURCE_GLOBAL or ((a.input is None or i < last_input) and tok in _SOURCE_INPUT):
            _source_option(a.source_options if tok in _SOURCE_GLOBAL else pending_src, pending_in, tok, value)
        elif a.output is not None:
            # after the output: ffmpeg warns that trailing options may be ignored; avdnn never ignores one
            raise InvalidArgumentError(
                f"Trailing option(s) found in the command line: {tok} (options go before the output they apply to)",
                option=tok[1:],
            )
        elif a.input is None or i < last_input:
            if name == "f":
                pending_fmt = value(tok)
            elif (negated or name) in ("vn", "an", "sn", "dn") and negated is None:
                pending_disabled.add(name)  # that input's streams of the type are disabled (ffmpeg's discard)
            elif name in _FILE_BOOLS or negated in _FILE_BOOLS:
                pass  # -bitexact before -i: a decoder flag with no effect on decoding here
            elif name in _INPUT_ALIASES and spec in ("", "v", "a"):
                val = value(tok)  # -ac N: the demuxer's ch_layout, N channels in the default order
                pending_in[_INPUT_ALIASES[name]] = _default_layout(val) if name == "ac" else val
            elif (name in ("c", "codec") and spec in ("v", "v:0", "a", "a:0")) or name in ("vcodec", "acodec"):
                kind = "audio" if name == "acodec" or spec.startswith("a") else "video"
                a.input_codecs[kind] = value(tok)
            else:
                _check_av_option(tok)
                pending_in[tok[1:]] = value(tok)  # demuxer and decoder options: -framerate, -video_size, ...
        elif name in _FILE_BOOLS or negated in _FILE_BOOLS:
            flag = negated or name
            if flag == "bitexact":
                a.bitexact = negated is None
            else:
                setattr(a.streams, flag, negated is None)
        elif name in _OUTPUT_VALUES:
            _output_option(a, name, spec, value(tok))
        else:
            owner = _check_av_option(tok)
            (a.format_options if owner == "avformat" else a.codec_options)[tok[1:]] = value(tok)
        i += 1
    return a


def _global_flag(a: Args, name: str, *, on: bool) -> None:
    if name in ("y", "n"):
        a.overwrite = (name == "y") == on
    elif name == "hide_banner":
        a.hide_banner = on
    elif name == "stats":
        a.stats = on
    elif name == "filters":
        a.list_filters = True
    elif name == "version":
        a.show_version = True
    elif name in _LISTINGS:
        a.listing = name


def _default_layout(channels: str) -> str:
    """ffmpeg's guess for N channels of a raw input (av_channel_layout_default): 2 is stereo."""
    if not channels.isdigit():
        return channels
    from .media.libav import default_channel_layout

    return default_channel_layout(int(channels))


def _tool_option(a: Args, name: str, val: str) -> None:
    """-progress, -stats_period, -filter_complex / -lavfi and their FILE forms."""
    if name == "progress":
        a.progress = val
    elif name == "stats_period":
        from .media.timing import parse_time

        a.stats_period = (parse_time(val, "stats_period") or 0) / 1_000_000
        if a.stats_period <= 0:
            raise InvalidArgumentError(f"Invalid stats_period value: {val}", option="stats_period")
    else:
        if name in ("filter_complex_script", "/filter_complex"):
            try:
                with open(val, encoding="utf-8") as fh:
                    val = fh.read()
            except OSError as exc:
                from .errors import from_av_error

                raise from_av_error(exc, file=val) from exc
        if a.filter_complex is not None:
            raise NotSupportedError("several -filter_complex graphs are not supported yet", option=name)
        a.filter_complex = val


def _check_av_option(tok: str) -> str:
    """The library whose AVOptions know the name; ffmpeg's "Unrecognized option" when none does."""
    from .media.libav import av_option_owner

    owner = av_option_owner(tok[1:])
    if owner is None:
        raise OptionNotFoundError(f"Unrecognized option '{tok[1:]}'.", code=AVERROR_OPTION_NOT_FOUND)
    return owner


#: Input options Source takes, by flag: the keyword, and its type (bool: a flag without a value).
_SOURCE_INPUT: dict[str, Any] = {
    "-ss": str,
    "-t": str,
    "-to": str,
    "-itsoffset": str,
    "-stream_loop": int,
    "-re": bool,
    "-readrate": float,
    "-readrate_initial_burst": float,
    "-autorotate": bool,
    "-noautorotate": bool,
    "-display_rotation": float,
    "-display_hflip": bool,
    "-display_vflip": bool,
    "-accurate_seek": bool,
    "-noaccurate_seek": bool,
    "-threads": str,
    "-err_detect": str,
    "-discard": str,
    # live inputs (avdnn's own, docs/live.md; none of them is an AVOption, http's -reconnect* pass through)
    "-reconnect_attempts": int,
    "-reconnect_delay": float,
    "-live_timeout": float,
    "-live_drop": str,
    "-live_queue": int,
}
_SOURCE_GLOBAL: dict[str, Any] = {"-xerror": bool, "-max_error_rate": float}
_SOURCE_KEYS = {
    "-ss": "seek",
    "-t": "duration",
    "-re": "realtime",
    "-itsoffset": "itsoffset",
    "-to": "to",
    "-stream_loop": "stream_loop",
    "-noautorotate": "autorotate",
    "-noaccurate_seek": "accurate_seek",
}


def _source_option(dest: dict[str, Any], demuxer: dict[str, str], tok: str, value: Callable[[str], str]) -> None:
    """One input option (or -xerror/-max_error_rate) as a Source keyword, typed as ffmpeg parses it."""
    kind = _SOURCE_INPUT[tok] if tok in _SOURCE_INPUT else _SOURCE_GLOBAL[tok]
    key = _SOURCE_KEYS.get(tok, tok[1:])
    if kind is bool:
        dest[key] = not tok.startswith("-no")
        return
    val = value(tok)
    if tok == "-err_detect":  # ffmpeg hands a key both the demuxer and the decoder know to both
        demuxer["err_detect"] = val
        dest.setdefault("decoder_options", {})["err_detect"] = val
        return
    try:
        dest[key] = kind(val)
    except ValueError:
        raise InvalidArgumentError(f"Failed to set value '{val}' for option '{tok[1:]}'", option=tok[1:]) from None


def _output_option(a: Args, name: str, spec: str, val: str) -> None:
    st = a.streams
    if name in ("vf", "filter") and spec in ("", "v"):
        a.filters = val
    elif name == "af" or (name == "filter" and spec == "a"):
        st.audio_filters = val
    elif name in ("frames", "vframes") and spec in ("", "v"):
        try:
            a.frames = int(val)
        except ValueError:
            raise InvalidArgumentError(f"Invalid frame count '{val}'", option="frames:v") from None
    elif name in ("c", "codec", "vcodec", "acodec", "scodec"):
        key = {"vcodec": "v", "acodec": "a", "scodec": "s"}.get(name, spec)
        st.codecs[key] = val
        if key in ("v", "v:0") or (key == "" and val != "copy"):
            a.codec = val
    elif name == "map":
        st.maps.append(val)
    elif name in ("ss", "t", "to"):
        from .media.timing import parse_time

        parse_time(val, name)  # checked here, so the error names the option before anything opens
        if name == "ss":
            a.start_time = val
        elif name == "t":
            a.recording_time = val
        else:
            a.stop_time = val
    elif name == "metadata":
        key, sep, v = val.partition("=")
        if not sep:
            raise InvalidArgumentError(f"Invalid metadata '{val}': expected key=value", option="metadata")
        if not spec or spec == "g":
            a.metadata[key] = v
        elif spec.startswith("s"):  # -metadata:s:a:0, -metadata:s:v, -metadata:s:1
            st.stream_metadata.setdefault(spec[2:], {})[key] = v
        else:
            raise NotSupportedError(
                f"-metadata:{spec}: chapter and program metadata are not supported yet", option=f"metadata:{spec}"
            )
    elif name in ("map_metadata", "map_chapters"):
        setattr(st, name, val)
    elif name == "s" and spec in ("", "v"):
        from .media.values import parse_size

        a.size = parse_size(val)
    elif name in ("b", "ar", "ac"):
        if name == "b" and spec in ("", "v", "v:0"):
            a.codec_options["b"] = val
        else:
            st.per_stream[(name, spec or "a")] = val
    elif name == "pix_fmt":
        from .media.pixfmt import canonical, is_known

        if not is_known(val):
            raise InvalidArgumentError(f"Unknown pixel format requested: {val}.", option="pix_fmt")
        a.pix_fmt = canonical(val)
    elif name == "r":
        try:
            a.rate = Fraction(val)
        except (ValueError, ZeroDivisionError):
            raise InvalidArgumentError(f"Invalid framerate value: {val}", option="r") from None
    elif name == "f":
        a.format = val
    elif name in ("fps_mode", "vsync"):
        modes = {"0": "passthrough", "1": "cfr", "2": "vfr", "-1": "auto"}
        a.fps_mode = modes.get(val, val)
        if a.fps_mode not in ("passthrough", "cfr", "vfr", "auto"):
            raise InvalidArgumentError(f"Invalid value {val} for fps_mode", option="fps_mode")
    else:
        raise OptionNotFoundError(f"Unrecognized option '{name}:{spec}'.", code=AVERROR_OPTION_NOT_FOUND)


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
    }


def _loglevel(text: str) -> str:
    name = text.split("+")[-1]
    if name.lstrip("-").isdigit():
        n = int(name)
        name = min(_NUMERIC_LEVELS.items(), key=lambda kv: abs(kv[0] - n))[1]
    if name not in LOG_LEVELS:
        raise InvalidArgumentError(f'Invalid loglevel "{text}". Possible levels are: {", ".join(LOG_LEVELS)}')
    return name
