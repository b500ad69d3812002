"""The ffmpeg CLI's video sync: output timestamps, duplicates and drops (``-fps_mode``).

ffmpeg decides, frame by frame, what to hand the encoder: in ``cfr`` it duplicates or drops
frames to keep a constant rate (``-r``), in ``vfr`` it drops frames that would go back in
time, in ``passthrough`` it keeps every timestamp. This module reproduces
``video_sync_process`` of fftools/ffmpeg_filter.c, including its float arithmetic, the
"previous frame" duplicates and the median-of-three repeat count at end of stream, so
``-r`` and ``-fps_mode`` give ffmpeg's frames and timestamps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Generic, TypeVar

from avdnn.media.timing import rescale

T = TypeVar("T")
NOPTS = None


def _llrint(x: float) -> int:
    """C's llrint under the default rounding mode: half to even."""
    return round(x)


def _float_pts(pts: int, src: Fraction, dst: Fraction, start_us: int = 0) -> float:
    """adjust_frame_pts_to_encoder_tb: pts in the encoder time base with extra precision, minus
    the output's start time (``-ss`` as an output option)."""
    den_bits = dst.denominator.bit_length() - 1
    extra = min(max(29 - den_bits, 0), 16)
    fine = Fraction(dst.numerator, dst.denominator << extra)
    value = (rescale(pts, src, fine) - rescale(start_us, Fraction(1, 1_000_000), fine)) / (1 << extra)
    if value != _llrint(value):
        value += math.copysign(1.0 / (1 << 17), value)
    return value


class VideoSync(Generic[T]):
    """Feeds frames in; yields (frame, pts, duration) to encode, in the encoder time base."""

    def __init__(self, mode: str, tb_out: Fraction, start_us: int = 0) -> None:
        self.start_us = start_us
        if mode not in ("cfr", "vscfr", "vfr", "passthrough"):
            raise ValueError(mode)
        self.mode = mode
        self.tb = tb_out
        self.next_pts = 0
        self.frame_number = 0
        self.hist = [0, 0, 0]
        self.last: T | None = None
        self.dropped = 0
        self.duplicated = 0

    def push(
        self, frame: T, pts: int | None, time_base: Fraction | None, duration: int | None
    ) -> Iterator[tuple[T, int, int]]:
        """The frames to encode for one input frame (zero, one or several)."""
        dur = float(duration * time_base / self.tb) if duration and time_base else 0.0
        if pts is None or time_base is None:
            sync_ipts = float(self.next_pts)
        else:
            sync_ipts = _float_pts(pts, time_base, self.tb, self.start_us)
        delta0 = sync_ipts - self.next_pts
        delta = delta0 + dur
        nb_prev = 0
        nb = 1
        if delta0 < 0 < delta and self.mode != "passthrough":
            sync_ipts = float(self.next_pts)
            dur += delta0
            delta0 = 0.0
        out_dur = 1
        if self.mode in ("cfr", "vscfr"):
            if self.mode == "vscfr" and self.frame_number == 0 and delta0 >= 0.5:
                delta = dur
                delta0 = 0.0
                self.next_pts = _llrint(sync_ipts)
            if delta < -1.1:
                nb = 0
            elif delta > 1.1:
                nb = _llrint(delta)
                if delta0 > 1.1:
                    nb_prev = _llrint(delta0 - 0.6)
        elif self.mode == "vfr":
            if delta <= -0.6:
                nb = 0
            elif delta > 0.6:
                self.next_pts = _llrint(sync_ipts)
            out_dur = _llrint(dur)
        else:
            self.next_pts = _llrint(sync_ipts)
            out_dur = _llrint(dur)
        yield from self._emit(frame, nb, nb_prev, out_dur)

    def flush(self) -> Iterator[tuple[T, int, int]]:
        """End of stream: repeat the last frame as ffmpeg does (median of the last three)."""
        nb = sorted(self.hist)[1]
        if self.last is not None and self.mode in ("cfr", "vscfr"):
            for _ in range(nb):
                yield self.last, self.next_pts, 1
                self.next_pts += 1
                self.duplicated += 1

    def _emit(self, frame: T, nb: int, nb_prev: int, out_dur: int) -> Iterator[tuple[T, int, int]]:
        self.hist = [nb_prev, *self.hist[:2]]
        own = nb - nb_prev  # copies of this frame; the first nb_prev repeat the previous one
        if own <= 0:
            self.dropped += 1
        self.duplicated += nb_prev + max(own - 1, 0)
        for i in range(nb):
            src = self.last if (i < nb_prev and self.last is not None) else frame
            yield src, self.next_pts, out_dur
            self.next_pts += 1
            self.frame_number += 1
        self.last = frame
