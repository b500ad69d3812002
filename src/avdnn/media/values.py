"""ffmpeg's value syntaxes on the command line: durations and video sizes.

Durations (``-ss``, ``-t``, ``-to``) as libavutil's av_parse_time reads them:
``[-][HH:]MM:SS[.m...]`` or ``[-]S+[.m...][s|ms|us]``, in integer microseconds as ffmpeg keeps
them (AV_TIME_BASE), so trims and offsets are exact and match its arithmetic. Sizes (``-s``) by
libavutil's own av_parse_video_size (``WxH``, ``hd720``, ``vga``...).
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..errors import InvalidArgumentError

_CLOCK = re.compile(r"^(-)?(?:(\d+):)?(\d+):(\d+)(?:\.(\d+))?$")
_SECONDS = re.compile(r"^(-)?(\d+)?(?:\.(\d*))?(s|ms|us)?$")


def parse_duration(text: str, option: str = "") -> int:
    """``text`` as av_parse_time(duration=1) reads it, in microseconds."""
    s = text.strip()
    m = _CLOCK.match(s)
    if m is not None:
        sign, hh, mm, ss, frac = m.groups()
        if int(ss) >= 60 or (hh is not None and int(mm) >= 60):
            raise InvalidArgumentError(f"Invalid duration specification for {option}: {text}", option=option)
        value = (int(hh or 0) * 3600 + int(mm) * 60 + int(ss)) * 1_000_000 + _micros(frac)
        return -value if sign else value
    m = _SECONDS.match(s)
    if m is None or (m.group(2) is None and not m.group(3)):
        raise InvalidArgumentError(f"Invalid duration specification for {option}: {text}", option=option)
    sign, whole, frac, unit = m.groups()
    value = int(whole or 0) * 1_000_000 + _micros(frac)
    value = {None: value, "s": value, "ms": value // 1000, "us": value // 1_000_000}[unit]
    return -value if sign else value


def _micros(frac: str | None) -> int:
    """Digits after the point as microseconds (av_parse_time keeps six, truncating)."""
    return int((frac or "").ljust(6, "0")[:6])


def seconds(us: int) -> Fraction:
    return Fraction(us, 1_000_000)


def parse_size(text: str, option: str = "s") -> tuple[int, int]:
    """``-s`` as av_parse_video_size reads it (``WxH`` or a name such as ``hd720``)."""
    from .libav import parse_video_size

    size = parse_video_size(text)
    if size is None:
        raise InvalidArgumentError(f"Invalid frame size: {text}.", option=option)
    return size
