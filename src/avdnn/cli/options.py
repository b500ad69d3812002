"""The values of the command line's input (Source) and output options, as :mod:`avdnn.cli.parser` parses them.

Input options become :class:`~avdnn.media.input.source.Source` keywords, typed as ffmpeg parses them;
output options go into the :class:`~avdnn.cli.args.Args` of the output being parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from avdnn.cli.args import Args
from avdnn.errors import (
    AVERROR_OPTION_NOT_FOUND,
    InvalidArgumentError,
    NotSupportedError,
    OptionNotFoundError,
)

__all__ = ["SOURCE_GLOBAL", "SOURCE_INPUT", "output_option", "parse_number", "source_option"]

#: av_strtod's C strtod prefix: white space, a sign, then a decimal or hex float, inf or nan.
_STRTOD = re.compile(
    r"[ \t\n\v\f\r]*[+-]?(?:0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?"
    r"|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf(?:inity)?|nan(?:\([0-9a-z_]*\))?)",
    re.IGNORECASE,
)
#: av_strtod's SI prefixes: exponent of ten (the binary value with an ``i`` after it: 2^(exp/0.3)).
_SI = {"y": -24, "z": -21, "a": -18, "f": -15, "p": -12, "n": -9, "u": -6, "m": -3, "c": -2, "d": -1, "h": 2}
_SI.update({"k": 3, "K": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18, "Z": 21, "Y": 24})
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "int64": (-(2.0**63), 2.0**63), "float": (-math.inf, math.inf)}


def _strtod(text: str) -> tuple[float, str]:
    """libavutil's av_strtod: the value and the unparsed tail (``1k`` is 1000, ``1Ki`` 1024, ``2B`` 16)."""
    if text[:1] == "0" and text[1:2] in ("x", "X"):  # strtoul(numstr, &next, 16)
        m = re.match(r"0[xX]([0-9a-fA-F]+)", text)
        value, rest = (float(int(m.group(1), 16)), text[m.end() :]) if m else (0.0, text[1:])
    else:
        m = _STRTOD.match(text)
        if m is None:
            return 0.0, text
        num = m.group(0).strip(" \t\n\v\f\r")
        bare = num.lstrip("+-")
        if bare[:2].lower() == "0x":
            value = float.fromhex(num if "p" in num.lower() else num + "p0")
        elif bare[:3].lower() == "nan":
            value = math.nan
        else:
            value = float(num)
        rest = text[m.end() :]
    if rest[:2] == "dB":
        value, rest = 10.0 ** (value / 20), rest[2:]
    elif rest[:1] in _SI:
        exp = _SI[rest[0]]
        if rest[1:2] == "i":
            value, rest = value * 2.0 ** (10 * exp / 3), rest[2:]
        else:
            value, rest = value * float(f"1e{exp}"), rest[1:]
    if rest[:1] == "B":
        value, rest = value * 8, rest[1:]
    return value, rest


def parse_number(option: str, text: str, kind: str) -> float:
    """An option's number as fftools' parse_number reads it (av_strtod, then range and int checks),
    with its messages: ``5``, ``5.0``, ``5e1``, ``1k``, ``0x10`` and `` 5`` are numbers, ``5 ``,
    ``5_0`` and ``1.5`` (for an integer) are not. ``kind``: "int", "int64" or "float"."""
    value, tail = _strtod(text)
    lo, hi = _INT_RANGE[kind]
    if tail:
        raise InvalidArgumentError(f"Expected number for {option} but found: {text}", option=option)
    if value < lo or value > hi:
        raise InvalidArgumentError(
            f"The value for {option} was {text} which is not within {lo:f} - {hi:f}", option=option
        )
    if kind != "float" and not value.is_integer():  # nan too
        raise InvalidArgumentError(f"Expected {kind} for {option} but found {text}", option=option)
    return value


#: Input options Source takes, by flag: the keyword, and its type (bool: a flag without a value).
SOURCE_INPUT: dict[str, Any] = {
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
SOURCE_GLOBAL: dict[str, Any] = {"-xerror": bool, "-max_error_rate": float}
SOURCE_KEYS = {
    "-ss": "seek",
    "-t": "duration",
    "-re": "realtime",
    "-itsoffset": "itsoffset",
    "-to": "to",
    "-stream_loop": "stream_loop",
    "-noautorotate": "autorotate",
    "-noaccurate_seek": "accurate_seek",
}


def source_option(dest: dict[str, Any], demuxer: dict[str, str], tok: str, value: Callable[[str], str]) -> None:
    """One input option (or -xerror/-max_error_rate) as a Source keyword, typed as ffmpeg parses it."""
    kind = SOURCE_INPUT[tok] if tok in SOURCE_INPUT else SOURCE_GLOBAL[tok]
    key = SOURCE_KEYS.get(tok, tok[1:])
    if kind is bool:
        dest[key] = not tok.startswith("-no")
        return
    val = value(tok)
    if tok == "-err_detect":  # ffmpeg hands a key both the demuxer and the decoder know to both
        demuxer["err_detect"] = val
        dest.setdefault("decoder_options", {})["err_detect"] = val
        return
    if kind is int:
        dest[key] = int(parse_number(tok[1:], val, "int"))
    elif kind is float:
        dest[key] = parse_number(tok[1:], val, "float")
    else:
        dest[key] = kind(val)


#: Output options that take a stream specifier for one video stream (``-s:v:1``, ``-filter:v:1``):
#: kept per stream (StreamOptions.per_stream), each video stream's own (run.wiring.lane_settings).
_PER_VIDEO_STREAM = {"vf": "filter", "filter": "filter", "s": "s", "pix_fmt": "pix_fmt", "r": "r"}


def output_option(a: Args, name: str, spec: str, val: str) -> None:
    st = a.streams
    if name in _PER_VIDEO_STREAM and spec.startswith("v:"):
        _per_video_stream(a, _PER_VIDEO_STREAM[name], spec, val)
    elif name in ("vf", "filter") and spec in ("", "v"):
        a.filters = val
    elif name == "af" or (name == "filter" and spec == "a"):
        st.audio_filters = val
    elif name in ("frames", "vframes") and spec in ("", "v"):
        count = int(parse_number(f"{name}:v" if spec else name, val, "int64"))
        a.frames = None if count < 0 else count  # ffmpeg: a negative -frames is no limit
    elif name in ("c", "codec", "vcodec", "acodec", "scodec"):
        key = {"vcodec": "v", "acodec": "a", "scodec": "s"}.get(name, spec)
        st.codecs[key] = val
        if key in ("v", "v:0") or (key == "" and val != "copy"):
            a.codec = val
    elif name == "map":
        st.maps.append(val)
    elif name in ("ss", "t", "to"):
        from avdnn.media.timing import parse_time

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
        from avdnn.media.values import parse_size

        a.size = parse_size(val)
    elif name in ("max_muxing_queue_size", "muxing_queue_data_threshold"):
        st.per_stream[(name, spec)] = val  # per stream, as ffmpeg's; no specifier: every stream
    elif name in ("b", "ar", "ac"):
        if name == "b" and spec in ("", "v"):
            a.codec_options["b"] = val
        else:
            st.per_stream[(name, spec or "a")] = val
    elif name == "pix_fmt":
        from avdnn.media.pixfmt import canonical, is_known

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


def _per_video_stream(a: Args, name: str, spec: str, val: str) -> None:
    """``-s:v:1 WxH``, ``-filter:v:1 CHAIN``, ``-pix_fmt:v:1``, ``-r:v:1``: one video stream's own."""
    if name == "s":
        from avdnn.media.values import parse_size

        parse_size(val)  # checked here, so the error names the option before anything opens
    elif name == "pix_fmt":
        from avdnn.media.pixfmt import canonical, is_known

        if not is_known(val):
            raise InvalidArgumentError(f"Unknown pixel format requested: {val}.", option="pix_fmt")
        val = canonical(val)
    elif name == "r":
        try:
            Fraction(val)
        except (ValueError, ZeroDivisionError):
            raise InvalidArgumentError(f"Invalid framerate value: {val}", option="r") from None
    a.streams.per_stream[(name, spec)] = val
