"""A source's last minutes, one sample a second: what the page's chart draws when it opens.

The service samples every source of its running pipelines on one thread of its own, once every
:data:`INTERVAL` seconds (never per frame, never on a pipeline's threads): its state, fps now,
the frames dropped since the sample before (all causes, and by cause), the latency p95 of the
frames written since then (the status's p95 is over the whole run), and its frames read and
written so far (the accounting's totals, so they never go back while its runs add up). Each
source keeps its samples in a :class:`History`, a deque holding at most ``history`` of them (the
service's setting); a source that leaves takes its history with it.
``GET /api/pipelines/{id}/sources/{source}/history`` answers with it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from avdnn._util.redact import redact_text

__all__ = ["INTERVAL", "History", "Sample"]

#: seconds between two samples of a source
INTERVAL = 1.0


@dataclass(frozen=True, slots=True)
class Sample:
    """One source at one moment (``t``: seconds since the epoch, as the browser's clock counts)."""

    t: float
    state: str
    fps: float
    #: latency p95 in seconds of the frames written since the sample before (None: none were)
    p95: float | None
    #: frames read and written so far, every run of the source
    read: int
    written: int
    #: frames dropped since the sample before, by cause
    dropped_by: dict[str, int] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(self.dropped_by.values())

    def as_dict(self) -> dict[str, Any]:
        """As a response carries it (a drop's cause is redacted text, as in ``/metrics``)."""
        return {
            "t": round(self.t, 3),
            "state": self.state,
            "fps": round(self.fps, 2),
            "dropped": self.dropped,
            "dropped_by": {redact_text(cause): n for cause, n in self.dropped_by.items()},
            "p95": self.p95,
            "read": self.read,
            "written": self.written,
        }


class History:
    """The samples of the last ``seconds`` seconds (at most ``seconds`` of them), oldest first."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._samples: deque[Sample] = deque(maxlen=seconds)
        self._dropped: dict[str, int] = {}  # the drops by cause counted up to the latest sample

    def add(
        self,
        t: float,
        *,
        state: str,
        fps: float,
        p95: float | None,
        read: int,
        written: int,
        dropped: dict[str, int],
    ) -> Sample:
        """One more sample at ``t``; ``dropped``: the source's drops by cause so far (totals)."""
        with self._lock:
            since = {c: n - self._dropped.get(c, 0) for c, n in dropped.items() if n > self._dropped.get(c, 0)}
            self._dropped = dict(dropped)
            sample = Sample(t, state, fps, p95, read, written, since)
            self._samples.append(sample)
            while self._samples and self._samples[0].t <= t - self.seconds:
                self._samples.popleft()  # older than the bound (the sampler was held up, a clock step)
            return sample

    def since(self, seconds: float | None, now: float) -> list[Sample]:
        """The samples of the last ``seconds`` before ``now`` (None: all of them)."""
        with self._lock:
            samples = list(self._samples)
        if seconds is None:
            return samples
        return [s for s in samples if s.t > now - seconds]

    def __len__(self) -> int:
        with self._lock:
            return len(self._samples)
