"""Input timing as the ffmpeg CLI does it: time values, timestamp rescaling and -re pacing.

ffmpeg keeps every input time in microseconds (AV_TIME_BASE) and moves timestamps between
time bases with av_rescale_q's round-to-nearest; doing the same integer arithmetic here is
what makes a shifted pts equal ffmpeg's to the tick. Pacing (``-re``, ``-readrate``) follows
fftools/ffmpeg_demux.c's readrate_sleep: a packet may leave once the wall clock since the
first packet, times the rate, has reached its dts, less an initial burst.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction

from avdnn.errors import InvalidArgumentError

AV_TIME_BASE = 1_000_000


def parse_time(value: float | int | str | None, option: str) -> int | None:
    """A time option as microseconds: seconds as a number, or ffmpeg's duration syntax.

    Strings are read by libavutil's own av_parse_time (as ffmpeg reads -ss/-t/-to):
    ``[-][HH:]MM:SS[.m...]`` or ``[-]S+[.m...][s|ms|us]``; ``60:00``, ``.5`` and ``5 `` are refused.
    """
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return round(Fraction(value) * AV_TIME_BASE)
        except (ValueError, OverflowError):  # nan, inf
            raise InvalidArgumentError(f"Invalid duration for {option}: {value}", option=option) from None
    from avdnn.media.libav.codecs import parse_duration

    us = parse_duration(str(value))
    if us is None:
        raise InvalidArgumentError(f"Invalid duration specification for {option}: {value}", option=option)
    return us


def rescale(value: int, src: Fraction, dst: Fraction, rnd: str = "near") -> int:
    """av_rescale_q_rnd(value, src, dst): ``near`` is av_rescale_q's AV_ROUND_NEAR_INF (halves away
    from zero), ``up`` and ``down`` round toward +inf and -inf."""
    num = value * src.numerator * dst.denominator
    den = src.denominator * dst.numerator
    if rnd == "up":
        return -((-num) // den)
    if rnd == "down":
        return num // den
    q, r = divmod(abs(num), den)
    if 2 * r >= den:
        q += 1
    return q if num >= 0 else -q


def check_readrate(rate: float | None, burst: float) -> None:
    """ffmpeg_demux.c's checks of -readrate and -readrate_initial_burst, in its words."""
    for name, value in (("readrate", rate or 0.0), ("readrate_initial_burst", burst)):
        if value < 0:
            raise InvalidArgumentError(f"Option -{name} is {value:0.3f}; it must be non-negative.", option=name)


class Pacer:
    """``-re``/``-readrate``: hold each packet until the wall clock reaches its timestamp.

    ``rate`` is ffmpeg's readrate (``-re`` is 1); ``burst`` is -readrate_initial_burst (0.5 s by
    default), the stretch read at full speed first. The clock and the sleep are injectable so
    the policy is tested without waiting.
    """

    def __init__(
        self,
        rate: float = 1.0,
        burst: float = 0.5,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        check_readrate(rate, burst)
        if rate == 0:
            raise InvalidArgumentError("-readrate 0 reads at full speed: no Pacer is needed", option="readrate")
        self.rate, self.burst = rate, burst
        self._clock, self._sleep = clock, sleep
        self._start: float | None = None
        self._first: float | None = None

    def wait(self, ts: float | None) -> None:
        """Block until a packet with timestamp ``ts`` (seconds) may be read."""
        if ts is None:
            return
        now = self._clock()
        if self._start is None or self._first is None:
            self._start, self._first = now, ts
            return
        allowed = self._first + self.rate * (now - self._start) + self.burst
        if ts > allowed:
            self._sleep(ts - allowed)  # as readrate_sleep: the lead in media time, slept once


def recording_time(seek: int | None, duration: int | None, to: int | None) -> int | None:
    """ffmpeg's input recording_time: -t, else -to less -ss; -to before -ss is refused."""
    if duration is not None:
        return duration
    if to is None:
        return None
    start = seek or 0
    if to <= start:
        raise InvalidArgumentError("-to value smaller than -ss; aborting.", option="to")
    return to - start
