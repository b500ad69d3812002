"""``-progress URL``: ffmpeg's machine-readable key=value progress blocks.

ffmpeg-progress-yield, better-ffmpeg-progress and many scripts run ffmpeg with ``-progress
pipe:1`` (or a file) and read ``out_time_us=`` against the input's duration. The block is
fftools/ffmpeg.c's print_report(): its keys, order and number formats, one block every
``-stats_period`` seconds (0.5 by default) and a last one with ``progress=end``, however the
run ended (an output's failure and Ctrl-C included, as ffmpeg's final report). Deliberate
differences: ``stream_0_0_q`` is ``-0.0`` (PyAV does not expose the encoder's quality), and
``total_size`` is the output file's size, ``N/A`` for a pipe or a hash muxer.
"""

from __future__ import annotations

import os
import time
from typing import Any, BinaryIO

from avdnn.errors import from_av_error

__all__ = ["ProgressWriter"]


def _open(url: str) -> tuple[BinaryIO, bool]:
    """ffmpeg's avio_open of the progress URL: pipe:N is that descriptor, anything else a file."""
    try:
        if url == "-" or url.startswith("pipe:"):
            fd = int(url[5:] or 1) if url != "-" else 1
            return open(fd, "wb", buffering=0, closefd=False), False
        return open(url.removeprefix("file:"), "wb", buffering=0), True
    except (OSError, ValueError) as exc:
        raise from_av_error(exc, file=url) from exc


class ProgressWriter:
    """Writes one progress block per ``period`` seconds of wall time, and one at the end."""

    def __init__(self, url: str, *, period: float = 0.5, output: str | None = None) -> None:
        self._file, self._owned = _open(url)
        self.period = period
        self.output = output
        self.start = time.monotonic()
        self.last: float | None = None
        self.out_us = 0

    def __call__(self, stats: Any, frame: Any, final: bool = False) -> None:
        now = time.monotonic()
        if frame is not None and frame.time is not None:
            dur = frame.duration * frame.time_base if frame.duration and frame.time_base else 0
            self.out_us = max(self.out_us, round((frame.time + float(dur)) * 1_000_000))
        if not final and self.last is not None and now - self.last < self.period:
            return
        self.last = now
        self._file.write(self.block(stats, now - self.start, final).encode())

    def block(self, stats: Any, elapsed: float, final: bool) -> str:
        """One block; ``stats`` None: the output never started (its counts are 0)."""
        frames = stats.frames_written if stats is not None else 0
        fps = frames / elapsed if elapsed > 1 else 0.0
        size = self._size()
        us = self.out_us
        secs = us / 1_000_000
        bitrate = f"{size * 8 / secs / 1000:6.1f}kbits/s" if size is not None and secs > 0 else "N/A"
        speed = f"{secs / elapsed:4.3g}x" if elapsed > 0 and secs > 0 else "N/A"
        hh, rem = divmod(us, 3_600_000_000)
        mm, rem = divmod(rem, 60_000_000)
        ss, frac = divmod(rem, 1_000_000)
        return (
            f"frame={frames}\nfps={fps:.2f}\nstream_0_0_q=-0.0\nbitrate={bitrate}\n"
            f"total_size={'N/A' if size is None else size}\nout_time_us={us}\nout_time_ms={us}\n"
            f"out_time={hh:02d}:{mm:02d}:{ss:02d}.{frac:06d}\n"
            f"dup_frames={getattr(stats, 'sink_duplicated', 0)}\ndrop_frames={getattr(stats, 'sink_dropped', 0)}\n"
            f"speed={speed}\n"
            f"progress={'end' if final else 'continue'}\n"
        )

    def _size(self) -> int | None:
        out = self.output
        if out is None or out == "-" or out.startswith("pipe:"):
            return None
        try:
            return os.path.getsize(out) if os.path.isfile(out) else None
        except OSError:
            return None

    def close(self) -> None:
        if self._owned:
            self._file.close()
