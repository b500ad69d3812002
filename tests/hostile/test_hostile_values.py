"""The time and size parsers (media/timing.py, media/values.py) under hostile text.

Both are libavutil's own functions (av_parse_time, av_parse_video_size), so each answer is the
one ffmpeg gives; what is checked here is what avdnn makes of them: the answer for every string
(NUL, undecodable argv bytes, Unicode digits included) is a value or one InvalidArgumentError
naming the option, never another exception, and the syntax ffmpeg documents round-trips. The
hand-written duration parser these replaced took ``60:00``, ``1:60``, ``.5``, ``5 `` and Arabic
digits, which ffmpeg refuses, and refused ``+5``.
"""

from __future__ import annotations

import ctypes
import math

import pytest
from hostile_util import HOSTILE
from hypothesis import example, given
from hypothesis import strategies as st

from avdnn.errors import InvalidArgumentError
from avdnn.media.libav.bindings import _find
from avdnn.media.timing import parse_time
from avdnn.media.values import parse_size

_any_text = st.text(st.characters(exclude_categories=["Cs"]) | st.sampled_from(["\x00", "\udcff"]), max_size=16)
_time_text = st.text(st.sampled_from("0123456789:.-+ smu\u0665"), max_size=12)


def _av_parse_time(text: str) -> int | None:
    """The oracle: libavutil's av_parse_time(duration=1), called straight."""
    avu = ctypes.CDLL(_find("avutil"))
    fn = avu.av_parse_time
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int]
    out = ctypes.c_int64(0)
    return out.value if fn(ctypes.byref(out), text.encode("utf-8"), 1) >= 0 else None


@HOSTILE
@given(st.one_of(_time_text, _any_text))
@example("60:00")
@example("1:60")
@example(".5")
@example("5 ")
@example("+5")
@example("\u0665")  # an Arabic-Indic five: a digit to Python, not to av_parse_time
@example("99999999999999999999")
def test_a_duration_is_read_as_ffmpeg_reads_it(text: str) -> None:
    try:
        ours: int | None = parse_time(text, "t")
    except InvalidArgumentError as exc:
        assert exc.option == "t" and "Invalid duration" in exc.message
        ours = None
    if "\x00" not in text and "\udcff" not in text:
        assert ours == _av_parse_time(text)


@HOSTILE
@given(st.integers(-9999, 9999), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999_999))  # %J: 4 digits
def test_the_documented_syntax_round_trips(h: int, m: int, s: int, us: int) -> None:
    sign = "-" if h < 0 else ""
    total = (abs(h) * 3600 + m * 60 + s) * 1_000_000 + us
    assert parse_time(f"{sign}{abs(h)}:{m:02d}:{s:02d}.{us:06d}", "ss") == (-total if sign else total)
    assert parse_time(f"{sign}{abs(h) * 3600 + m * 60 + s}.{us:06d}s", "ss") == (-total if sign else total)
    assert parse_time(f"{us}us", "ss") == us and parse_time(f"{us}ms", "ss") == us * 1000


@HOSTILE
@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**12), 10**12))
def test_numbers_are_seconds_or_one_error(value: float) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        with pytest.raises(InvalidArgumentError, match="Invalid duration"):
            parse_time(value, "ss")
    else:
        assert isinstance(parse_time(value, "ss"), int)


@HOSTILE
@given(_any_text)
@example("\udcff")  # an undecodable argv byte, as Python hands it over
@example("32x\x0032")
def test_a_size_is_a_size_or_one_error(text: str) -> None:
    try:
        w, h = parse_size(text)
    except InvalidArgumentError as exc:
        assert exc.option == "s" and exc.message.startswith("Invalid frame size")
        return
    assert w > 0 and h > 0


@HOSTILE
@given(st.integers(1, 16384), st.integers(1, 16384))
def test_sizes_round_trip(w: int, h: int) -> None:
    assert parse_size(f"{w}x{h}") == (w, h)


def test_size_names_are_libavutils() -> None:
    assert parse_size("hd720") == (1280, 720) and parse_size("qcif") == (176, 144)
