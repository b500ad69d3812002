"""ffmpeg's status line on stderr: ``frame=  120 fps= 50 time=00:00:04.80 speed=1.9x``, redrawn in place."""

from __future__ import annotations

import threading
import time
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """ffmpeg's stderr status line: frame, fps, time, speed.

    With several outputs, one part per output on the same line:
    ``out#0 frame=  120 fps= 50 time=00:00:04.80 speed=1.9x | out#1 frame= ... elapsed=2.51s``.
    The outputs call it from their own threads; a lock keeps the line whole.
    """

    def __init__(self, stream: TextIO, outputs: int = 1) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False
        self._latest: list[tuple[Any, Any] | None] = [None] * outputs
        self._lock = threading.Lock()

    def __call__(self, stats: Any, frame: Any, final: bool = False, index: int = 0) -> None:
        with self._lock:
            self._latest[index] = (stats, frame)
            now = time.monotonic()
            if not final and now - self.last < 0.5:
                return
            self.last = now
            elapsed = max(now - self.start, 1e-9)
            several = len(self._latest) > 1
            parts = [
                (f"out#{k} " if several else "") + self._part(*latest, elapsed)
                for k, latest in enumerate(self._latest)
                if latest is not None
            ]
            self.stream.write(" | ".join(parts) + f" elapsed={elapsed:.2f}s" + ("\n" if final else "\r"))
            self.stream.flush()
            self.shown = True

    @staticmethod
    def _part(stats: Any, frame: Any, elapsed: float) -> str:
        t = frame.time if frame is not None and frame.time is not None else 0.0
        hh, rem = divmod(max(t, 0.0), 3600)
        mm, ss = divmod(rem, 60)
        frames = stats.frames_written or sum(s.packets_written for s in stats.streams if s.media_type == "video")
        fps = frames / elapsed
        clock = f"{int(hh):02d}:{int(mm):02d}:{ss:05.2f}"
        return f"frame={frames:5d} fps={fps:5.3g} time={clock} speed={t / elapsed:5.3g}x{_live_fields(stats)}"


def _live_fields(stats: Any) -> str:
    """A live input's `` drop=N latency=Xms`` (RunStats.input_dropped, RunStats.latency.current)."""
    if not getattr(stats, "input_live", False):
        return ""
    current = stats.latency.current
    latency = f"{current * 1000:.0f}ms" if current is not None else "N/A"
    return f" drop={sum(stats.input_dropped.values())} latency={latency}"
