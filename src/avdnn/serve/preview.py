"""A source's live view: the latest frame its chain gave, for MJPEG viewers and snapshots.

The run hands every frame it writes to :meth:`PreviewFeed.offer` (its progress callback, on
the output's writer thread, on the node that runs it): one reference kept, nothing encoded, no
lock, so a preview never slows a pipeline. A viewer asks the source's agent for the latest frame
when it is ready for one, at its own capped rate, and gets it as a JPEG encoded on the asking
thread (:class:`~avdnn.api.JpegEncoder`); the head counts, in the source's
:class:`PreviewCounts`, the frames shown and those a viewer never showed (skipped), apart from
the run's accounting.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["PreviewCounts", "PreviewFeed"]


class PreviewFeed:
    """The latest frame of one source (on the node that runs it)."""

    def __init__(self) -> None:
        #: (sequence number, frame): replaced whole, so a reader never sees a half-updated pair
        self._latest: tuple[int, Any] = (0, None)

    def offer(self, frame: Any) -> None:
        """A frame left the chain (the run's thread: one assignment, nothing else)."""
        self._latest = (self._latest[0] + 1, frame)

    def latest(self) -> tuple[int, Any]:
        """(sequence number, frame) of the newest frame; (0, None) before the first."""
        return self._latest


class PreviewCounts:
    """What the viewers of one source did with its frames (kept by the head, across its moves)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = 0
        self.skipped = 0
        self.viewers = 0
        #: set when the source is gone: viewers end their streams
        self.closed = threading.Event()

    def shown(self, seq: int, last: int) -> None:
        """A viewer showed frame ``seq`` after ``last``: the frames between are skipped."""
        with self._lock:
            self.sent += 1
            if last:
                self.skipped += max(0, seq - last - 1)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"sent": self.sent, "skipped": self.skipped, "viewers": self.viewers}

    def viewer(self, delta: int) -> None:
        with self._lock:
            self.viewers += delta
