"""End-to-end latency of a run: from a frame leaving the decoder to its write at the output.

Every frame is stamped when it leaves the input (``SideData.arrival``, which rides through
libavfilter segments and avdnn filters with the frame's other side data) and measured when the
output takes it. Samples go into log-spaced bins (2 % wide), so a run of any length keeps a
few hundred counters, not one float per frame, and its percentiles are within 2 %; ``current``
is the median of the last 32 samples, for the progress line. ``total`` and :meth:`Latency.buckets`
give it as a Prometheus histogram (avdnn serve's ``/metrics``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

__all__ = ["Latency"]

_RATIO = 1.02
_FLOOR = 1e-5  # seconds; anything faster lands in the first bin
_LOG = math.log(_RATIO)


class Latency:
    """Latency samples in seconds: count, max, percentiles and the current (recent median)."""

    def __init__(self) -> None:
        self.count = 0
        self.max = 0.0
        #: the sum of the samples, in seconds
        self.total = 0.0
        self._bins: dict[int, int] = {}
        self._recent: deque[float] = deque(maxlen=32)

    def add(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        self.count += 1
        self.total += seconds
        self.max = max(self.max, seconds)
        self._recent.append(seconds)
        k = 0 if seconds <= _FLOOR else int(math.log(seconds / _FLOOR) / _LOG) + 1
        self._bins[k] = self._bins.get(k, 0) + 1

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile (0-100) in seconds (the bin's upper edge, at most the max)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q / 100 * self.count))
        seen = 0
        for k in sorted(self._bins):
            seen += self._bins[k]
            if seen >= rank:
                return min(_FLOOR * _RATIO**k, self.max)
        return self.max

    def snapshot(self) -> dict[int, int]:
        """The bins now (a copy): :meth:`percentile_since` a later one gives a window's percentile."""
        return dict(self._bins)

    def percentile_since(self, before: dict[int, int] | None, q: float) -> float | None:
        """The ``q``-th percentile of the samples added since the :meth:`snapshot` ``before``
        (None: since the start); None when none were added. The window's own max is unknown: the
        bin's upper edge, at most the run's max."""
        now = self.snapshot()
        window = {k: n - (before or {}).get(k, 0) for k, n in now.items()}
        count = sum(n for n in window.values() if n > 0)
        if not count:
            return None
        rank, seen = max(1, math.ceil(q / 100 * count)), 0
        for k in sorted(window):
            seen += max(window[k], 0)
            if seen >= rank:
                return min(_FLOOR * _RATIO**k, self.max)
        return self.max

    def buckets(self, edges: Sequence[float]) -> list[int]:
        """How many samples are at most each of ``edges`` (seconds, ascending): a histogram's
        cumulative counts. A sample counts by its bin's upper edge, so within 2 % of an edge it may
        land in the next bucket; the last count is ``count`` when the last edge is infinite."""
        bins = sorted(self._bins.items())
        out, seen, k = [], 0, 0
        for edge in edges:
            while k < len(bins) and min(_FLOOR * _RATIO ** bins[k][0], self.max) <= edge:
                seen += bins[k][1]
                k += 1
            out.append(seen)
        return out

    @property
    def current(self) -> float | None:
        """The median of the last samples (None before the first)."""
        if not self._recent:
            return None
        recent = sorted(self._recent)
        return recent[len(recent) // 2]

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "count": self.count,
            "p50": self.percentile(50),
            "p95": self.percentile(95),
            "max": self.max if self.count else None,
        }
