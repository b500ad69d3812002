"""The output keywords of :func:`avdnn.run`, checked and folded before anything is opened.

Checking here gives avdnn's errors (naming ffmpeg's option) rather than Python's, and folds the
keyword shortcuts (``map``, ``an``, ``audio_codec`` ...) into one :class:`StreamOptions`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from avdnn.errors import InvalidArgumentError
from avdnn.run.selection import StreamOptions

__all__ = ["check_output_options", "fold_stream_options", "output_size"]


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


#: The keywords of ``avdnn.run`` that only an output consumes, with their defaults.
OUTPUT_ONLY: dict[str, Any] = {
    "map": None,
    "more_inputs": (),
    "more_source_options": None,
    "vn": False,
    "an": False,
    "sn": False,
    "dn": False,
    "format": None,
    "codec": None,
    "pix_fmt": None,
    "rate": None,
    "overwrite": None,
    "bitexact": False,
    "codec_options": None,
    "fps_mode": "auto",
    "progress": None,
    "audio_codec": None,
    "subtitle_codec": None,
    "audio_bitrate": None,
    "audio_rate": None,
    "audio_channels": None,
    "audio_filters": "",
    "metadata": None,
    "stream_options": None,
    "start_time": None,
    "recording_time": None,
    "stop_time": None,
    "format_options": None,
    "size": None,
}


def refuse_output_only(given: dict[str, Any], *, graph: bool | None) -> None:
    """Output keywords given to a run whose frames are iterated: an error naming them (never ignored).

    ``graph``: None without -filter_complex; else whether the graph is one chain (a graph with
    several inputs reads ``more_inputs``, and any graph has its own ``map``).
    """
    skip = set() if graph is None else {"map"} if graph else {"map", "more_inputs", "more_source_options"}
    unset: tuple[Any, ...] = (None, False, "", (), [], {})
    names = [k for k, default in OUTPUT_ONLY.items() if k not in skip and given.get(k) not in (default, *unset)]
    if names:
        raise InvalidArgumentError(
            f"{', '.join(names)}: output options, but the run has no output (its frames are iterated); "
            "give output=... or leave them out",
            option=names[0],
        )
