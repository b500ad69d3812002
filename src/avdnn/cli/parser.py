"""The ffmpeg-shaped command line, parsed: argv to :class:`~avdnn.cli.args.Args`.

ffmpeg's argument order: options apply to the next ``-i`` (input) or output path; each output's
options are its own (they reset after its path, as ffmpeg's OptionsContext does). Options are
avdnn's own (ffmpeg_opt.c names, booleans negated with ``no``) or AVOptions of libavcodec,
libavformat, libswscale or libswresample, looked up as ffmpeg's cmdutils does; any other name is
ffmpeg's "Unrecognized option", and an option after the output is an error. The option values
are read by :mod:`avdnn.cli.options`; :mod:`avdnn.cli.command` runs what this module parses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from avdnn.cli.args import LOG_LEVELS, OUTPUT_FIELDS, Args
from avdnn.cli.options import SOURCE_GLOBAL as _SOURCE_GLOBAL
from avdnn.cli.options import SOURCE_INPUT as _SOURCE_INPUT
from avdnn.cli.options import output_option, source_option
from avdnn.errors import (
    AVERROR_OPTION_NOT_FOUND,
    InvalidArgumentError,
    NotSupportedError,
    OptionNotFoundError,
)

#: -loglevel N: the nearest of ffmpeg's numeric levels
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
    "max_muxing_queue_size",
    "muxing_queue_data_threshold",
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
    last_input = _last_input(argv)

    def value(opt: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            if trailing is not None:
                raise _trailing(trailing)
            raise InvalidArgumentError(f"Missing argument for option '{opt.lstrip('-')}'.")
        i += 1
        return argv[i]

    trailing: str | None = None  # the first output option since the last output path
    while i < len(argv):
        tok = argv[i]
        name, spec = _split(tok) if tok.startswith("-") and tok != "-" else ("", "")
        if a.outputs and trailing is None and name and name not in _GLOBAL_NAMES:
            trailing = tok
        negated = name[2:] if name.startswith("no") and name[2:] in _GLOBAL_BOOLS | _FILE_BOOLS else None
        if not name:
            a.output = tok
            _end_output(a)
            trailing = None
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
            if a.outputs:
                raise NotSupportedError(
                    f"-i {argv[i + 1] if i + 1 < len(argv) else ''} after the output '{a.outputs[-1].output}': "
                    "give every input before the first output",
                    option="i",
                )
            if a.input is not None:  # a second input: its streams go around a chain, or feed one (-map 1:v)
                a.more_inputs.append((value(tok), pending_fmt, pending_in))
                if pending_src:
                    a.more_source_options[len(a.more_inputs)] = pending_src
            else:
                a.input, a.input_format, a.input_options = value(tok), pending_fmt, pending_in
                a.source_options.update(pending_src)
            if pending_disabled:
                a.streams.input_disabled[len(a.more_inputs)] = pending_disabled
            pending_fmt, pending_in, pending_src, pending_disabled = None, {}, {}, set()
        elif tok in _SOURCE_GLOBAL or ((a.input is None or i < last_input) and tok in _SOURCE_INPUT):
            source_option(a.source_options if tok in _SOURCE_GLOBAL else pending_src, pending_in, tok, value)
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
            output_option(a, name, spec, value(tok))
        else:
            owner = _check_av_option(tok)
            if owner == "avformat":
                a.format_options[name] = value(tok)
            elif spec:  # -crf:v:1 30, -preset:v fast: the streams the specifier names (run.wiring)
                a.streams.per_stream[(name, spec)] = value(tok)
            else:
                a.codec_options[name] = value(tok)
        i += 1
    if trailing is not None:
        raise _trailing(trailing)
    shared = {key: v for key, v in a.source_options.items() if f"-{key}" in _SOURCE_GLOBAL}
    for k in range(1, len(a.more_inputs) + 1) if shared else ():  # -xerror, -max_error_rate: every input's
        a.more_source_options.setdefault(k, {}).update(shared)
    if a.outputs:  # this Args's output fields are the first output's (one output: the output)
        for name in OUTPUT_FIELDS:
            setattr(a, name, getattr(a.outputs[0], name))
    return a


#: Options that may follow the last output: global ones (ffmpeg parses them anywhere).
_GLOBAL_NAMES = {*_GLOBAL_BOOLS, *(f"no{n}" for n in _GLOBAL_BOOLS), *_GLOBAL_VALUES, *_TOOL_VALUES}
_GLOBAL_NAMES |= {"h", "help", "-help", "?", "xerror", "max_error_rate"}


def _takes_value(tok: str, after: str | None) -> bool:
    """Whether option ``tok`` consumes the next argument (booleans and a bare -h do not)."""
    if not tok.startswith("-") or tok == "-":
        return False
    name, _ = _split(tok)
    negated = name[2:] if name.startswith("no") and name[2:] in _GLOBAL_BOOLS | _FILE_BOOLS else None
    if name in _GLOBAL_BOOLS | _FILE_BOOLS or negated is not None:
        return False
    if name in ("h", "help", "-help", "?"):
        return after is not None and not after.startswith("-")
    kind = _SOURCE_INPUT.get(tok, _SOURCE_GLOBAL.get(tok))
    return kind is not bool


def _last_input(argv: Sequence[str]) -> int:
    """The index of the last ``-i`` that is an option, not another option's value (``-vf -i`` is a
    chain named "-i", as ffmpeg's option table reads it); -1 when there is none."""
    last, i = -1, 0
    while i < len(argv):
        after = argv[i + 1] if i + 1 < len(argv) else None
        if argv[i] == "-i" and after is not None:
            last = i
        i += 2 if _takes_value(argv[i], after) else 1
    return last


def _trailing(tok: str) -> InvalidArgumentError:
    # after the last output: ffmpeg warns that trailing options may be ignored; avdnn never ignores one
    return InvalidArgumentError(
        f"Trailing option(s) found in the command line: {tok} (options go before the output they apply to)",
        option=tok[1:],
    )


def _end_output(a: Args) -> None:
    """An output path: its options become that output's, and the next output starts from the defaults."""
    a.outputs.append(dataclasses.replace(a, outputs=[]))
    fresh = Args()
    for name in OUTPUT_FIELDS:
        setattr(a, name, getattr(fresh, name))
    a.streams.input_disabled = a.outputs[-1].streams.input_disabled  # an input option: the same for all


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
    from avdnn.media.libav.codecs import default_channel_layout

    return default_channel_layout(int(channels))


def _tool_option(a: Args, name: str, val: str) -> None:
    """-progress, -stats_period, -filter_complex / -lavfi and their FILE forms."""
    if name == "progress":
        a.progress = val
    elif name == "stats_period":
        from avdnn.media.timing import parse_time

        a.stats_period = (parse_time(val, "stats_period") or 0) / 1_000_000
        if a.stats_period <= 0:
            raise InvalidArgumentError(f"Invalid stats_period value: {val}", option="stats_period")
    else:
        if name in ("filter_complex_script", "/filter_complex"):
            try:
                with open(val, encoding="utf-8") as fh:
                    val = fh.read()
            except OSError as exc:
                from avdnn.errors import from_av_error

                raise from_av_error(exc, file=val) from exc
        if a.filter_complex is not None:
            raise NotSupportedError("several -filter_complex graphs are not supported yet", option=name)
        a.filter_complex = val


def _check_av_option(tok: str) -> str:
    """The library whose AVOptions know the name; ffmpeg's "Unrecognized option" when none does."""
    from avdnn.media.libav.codecs import av_option_owner

    owner = av_option_owner(tok[1:])
    if owner is None:
        raise OptionNotFoundError(f"Unrecognized option '{tok[1:]}'.", code=AVERROR_OPTION_NOT_FOUND)
    return owner


def _loglevel(text: str) -> str:
    name = text.split("+")[-1]
    if name.lstrip("-").isdigit():
        n = int(name)
        name = min(_NUMERIC_LEVELS.items(), key=lambda kv: abs(kv[0] - n))[1]
    if name not in LOG_LEVELS:
        raise InvalidArgumentError(f'Invalid loglevel "{text}". Possible levels are: {", ".join(LOG_LEVELS)}')
    return name
