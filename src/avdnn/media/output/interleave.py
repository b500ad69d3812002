"""The muxer's packet order: libavformat's interleaving by dts, and ffmpeg's end of a limited stream.

Every output stream's packets meet here before they are written, whichever thread made them
(the video encoder's, the demuxer's for copied and transcoded side streams). The order is
libavformat's ``ff_interleave_packet_per_dts``: a packet leaves only once every stream that
has not ended has a packet waiting, and packets leave sorted by dts across time bases
(``av_compare_ts``; equal times by stream index, one stream's equal dts in arrival order). A
buffer spanning more than ``max_interleave_delta`` (libavformat's 10 s) is flushed from the
head, as libavformat does, so a stream that stops sending (a chain that drops every frame)
never makes the others' packets pile up without bound.

It is written here rather than left to libavformat because the hash muxers are avdnn's own
(:mod:`.hashmux`) and must print ffmpeg's order, and because one place must also know where
ffmpeg's sync queue ends the other streams when one reaches its frame limit (``-frames:v``):
at the limited stream's end time, keeping what ends no later than that.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

#: libavformat's default max_interleave_delta (AVFormatContext, in AV_TIME_BASE units).
MAX_INTERLEAVE_DELTA = Fraction(10)

WriteFn = Callable[[int, Any], None]


@dataclass(order=True)
class _Entry:
    time: Fraction
    index: int
    seq: int
    end: Fraction = field(compare=False)
    packet: Any = field(compare=False)


class Interleaver:
    """Orders the packets of ``n`` output streams by dts and hands them to ``write`` in that order.

    ``push`` may be called from any thread; ``write`` runs under the interleaver's lock, so
    the writer sees one packet at a time. Writes wait until :meth:`start` (the output's
    header is written once every stream's encoder is open).
    """

    def __init__(
        self,
        n: int,
        write: WriteFn,
        *,
        max_delta: Fraction = MAX_INTERLEAVE_DELTA,
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        self._write = write
        self._on_drop = on_drop
        self._max_delta = max_delta
        #: Held while a packet is queued or written (the output's lock: encoders and muxer share it).
        self.lock = threading.RLock()
        self._buf: list[_Entry] = []
        self._queued = [0] * n
        self._ended = [False] * n
        self._seq = 0
        self._started = False
        #: The end time of a stream that reached its frame limit: the others stop there.
        self.cut: Fraction | None = None
        self._limited: set[int] = set()
        #: The most packets ever waiting here at once (what a slow chain makes the other streams hold).
        self.peak = 0

    def start(self) -> None:
        """The header is written: packets may leave."""
        with self.lock:
            self._started = True
            self._release(False)

    def push(self, index: int, packet: Any, time: Fraction | None, end: Fraction | None = None) -> None:
        """Queue one packet of stream ``index``: ``time`` its dts and ``end`` its end, in seconds."""
        with self.lock:
            if self._ended[index]:
                self._drop(index)
                return
            if time is None:  # no dts: it leaves right after what is already queued
                time = self._buf[-1].time if self._buf else Fraction(0)
            end = time if end is None else end
            if self.cut is not None and index not in self._limited and end > self.cut:
                # past where a limited stream ended: this stream ends too
                self._drop(index)
                self._ended[index] = True
                self._release(False)
                return
            self._seq += 1
            bisect.insort(self._buf, _Entry(time, index, self._seq, end, packet))
            self._queued[index] += 1
            self.peak = max(self.peak, len(self._buf))
            self._release(False)

    def end(self, index: int) -> None:
        """Stream ``index`` sends no more packets (it no longer holds the others back)."""
        with self.lock:
            self._ended[index] = True
            self._release(False)

    def _drop(self, index: int) -> None:
        if self._on_drop is not None:
            self._on_drop(index)

    def ended(self, index: int) -> bool:
        with self.lock:
            return self._ended[index]

    def past_cut(self, end_time: Fraction) -> bool:
        """Whether something ending at ``end_time`` lies after a limited stream's end (ffmpeg's sync queue)."""
        return self.cut is not None and end_time > self.cut

    def finish_at(self, index: int, end_time: Fraction) -> None:
        """Stream ``index`` reached its frame limit, ending at ``end_time``: the others end there too.

        The limited stream itself still sends what its encoder holds, and ends with :meth:`end`.

        Packets of the other streams that end later are dropped, and so is everything they send
        after one such packet (ffmpeg's sync queue: ``finish_stream``, ``stream_update_ts``).
        """
        with self.lock:
            if self.cut is None or end_time < self.cut:
                self.cut = end_time
            self._limited.add(index)
            keep = []
            for entry in self._buf:
                if entry.index not in self._limited and entry.end > self.cut:
                    self._queued[entry.index] -= 1
                    self._drop(entry.index)
                    self._ended[entry.index] = True
                else:
                    keep.append(entry)
            self._buf = keep
            self._release(False)

    def flush(self) -> None:
        """End of the output: everything left, in order."""
        with self.lock:
            self._ended = [True] * len(self._ended)
            self._started = True
            self._release(True)

    def discard(self) -> None:
        """End of an output whose header was never written: what is held cannot be written (each
        packet goes to ``on_drop``), and nothing more is taken."""
        with self.lock:
            self._ended = [True] * len(self._ended)
            for entry in self._buf:
                self._drop(entry.index)
            self._buf = []
            self._queued = [0] * len(self._queued)

    def _release(self, flush: bool) -> None:
        if not self._started:
            return
        while self._buf:
            waiting = all(q > 0 or e for q, e in zip(self._queued, self._ended, strict=True))
            if not (flush or waiting) and self._buf[-1].time - self._buf[0].time <= self._max_delta:
                return
            entry = self._buf.pop(0)
            self._queued[entry.index] -= 1
            self._write(entry.index, entry.packet)
