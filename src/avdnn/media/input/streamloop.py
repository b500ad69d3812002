"""An input's timeline across its -stream_loop rounds (and a live input's reopened sessions).

ffmpeg's demuxer tracks the extent of every stream's packets (``max_pts``/``min_pts``); at a
rewind (``seek_to_start``) the round's duration becomes the shift added to every timestamp
of the next round, so the output's timestamps go on instead of starting over. A reopened live
input continues the same way (:meth:`StreamLoop.continue_session`), its shift chosen by
``-dts_delta_threshold``. Timestamps are kept as (ts, time base) pairs, as ffmpeg keeps them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from avdnn.media.input.live import continue_timeline
from avdnn.media.timing import AV_TIME_BASE, rescale

__all__ = ["DTS_DELTA_THRESHOLD", "StreamLoop"]

_US = Fraction(1, AV_TIME_BASE)
#: ffmpeg's -dts_delta_threshold (seconds): a larger jump forward is a discontinuity.
DTS_DELTA_THRESHOLD = 10

Stamp = tuple[int, Fraction]


def _later(a: Stamp, b: Stamp) -> bool:
    return a[0] * a[1] > b[0] * b[1]


class StreamLoop:
    """ffmpeg's max_pts/min_pts over all streams' packets and the looped duration (d->duration)."""

    def __init__(self) -> None:
        self.max_pts: Stamp | None = None
        self.min_pts: Stamp | None = None
        #: The rounds looped so far (and reopened sessions' shift), added to every timestamp.
        self.duration: Stamp = (0, _US)
        #: An audio stream is decoded: its decoder's end, not packet durations, extends a round.
        self.audio_decoded = False

    @property
    def seen(self) -> bool:
        """Whether any packet with a timestamp was read (a round has an extent)."""
        return self.max_pts is not None

    def shift(self, tb: Fraction) -> int:
        """The rounds looped so far, in time base ``tb``."""
        return rescale(self.duration[0], self.duration[1], tb) if self.duration[0] else 0

    def track(self, packet: Any, tb: Fraction) -> None:
        """A packet read (its pts already moved by the rounds): the round's extent grows."""
        if packet.pts is None:
            return
        end = packet.pts + (0 if self.audio_decoded else (packet.duration or 0))
        if self.max_pts is None or _later((end, tb), self.max_pts):
            self.max_pts = (end, tb)
        if self.min_pts is None or _later(self.min_pts, (packet.pts, tb)):
            self.min_pts = (packet.pts, tb)

    def extend(self, end: Stamp | None) -> None:
        """A side stream's decoder ended later than its packets said (an audio stream's last frame)."""
        if end is not None and (self.max_pts is None or _later(end, self.max_pts)):
            self.max_pts = end

    def rewound(self) -> None:
        """The input was rewound: the next round starts where this one ended."""
        assert self.max_pts is not None
        min_ts, min_tb = self.min_pts if self.min_pts is not None else (0, self.max_pts[1])
        self.duration = (self.max_pts[0] - rescale(min_ts, min_tb, self.max_pts[1]), self.max_pts[1])

    def continue_session(self, start: int) -> int | None:
        """A reopened input's new session starts at ``start`` (raw, microseconds): shift it past the
        old one. Returns the hole the timestamps show (microseconds; None: none known)."""
        if self.max_pts is None:
            return None
        end = rescale(self.max_pts[0], self.max_pts[1], _US)
        shift = rescale(self.duration[0], self.duration[1], _US) if self.duration[0] else 0
        new_shift, hole = continue_timeline(end, shift, start, threshold=DTS_DELTA_THRESHOLD * AV_TIME_BASE)
        self.duration = (new_shift, _US)
        return hole
