"""The values of the command line's input (Source) and output options, as :mod:`avdnn.cli.parser` parses them.

Input options become :class:`~avdnn.media.input.source.Source` keywords, typed as ffmpeg parses them;
output options go into the :class:`~avdnn.cli.args.Args` of the output being parsed.
"""

from __future__ import annotations

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

__all__ = ["SOURCE_GLOBAL", "SOURCE_INPUT", "output_option", "source_option"]


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
    try:
        dest[key] = kind(val)
    except ValueError:
        raise InvalidArgumentError(f"Failed to set value '{val}' for option '{tok[1:]}'", option=tok[1:]) from None


def output_option(a: Args, name: str, spec: str, val: str) -> None:
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
        if name == "b" and spec in ("", "v", "v:0"):
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
