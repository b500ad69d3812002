"""The output keywords of :func:`avdnn.run`, checked and folded before anything is opened.

Checking here gives avdnn's errors (naming ffmpeg's option) rather than Python's, and folds the
keyword shortcuts (``map``, ``an``, ``audio_codec`` ...) into one :class:`StreamOptions`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from fractions import Fraction

from ..errors import InvalidArgumentError
from .plan import StreamOptions

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
        from ..media.pixfmt import is_known

        if not is_known(pix_fmt):
            raise InvalidArgumentError(f"Unknown pixel format requested: {pix_fmt}.", option="pix_fmt")
    if frames is not None and (not isinstance(frames, int) or frames < 0):
        raise InvalidArgumentError(f"Invalid frame count '{frames}'", option="frames:v")
    return out


def output_size(size: tuple[int, int] | str | None) -> tuple[int, int] | None:
    if size is None or isinstance(size, tuple):
        return size
    from ..media.values import parse_size

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
