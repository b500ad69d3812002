"""ffmpeg's bound on what an output stream holds before the output's header is written.

The header waits for every stream's encoder, and the video's opens on the chain's first frame:
a chain that emits late (a DNN filter's warm-up, ``select`` dropping the start) keeps the
output headerless while the side streams read on, their packets (copied) or decoded frames
(transcoded audio) held. ffmpeg holds them in each output stream's muxing queue
(fftools/ffmpeg_mux.c ``queue_packet``): a FIFO of 8 that doubles when full, past
``-max_muxing_queue_size`` packets (128) only while the data held is under
``-muxing_queue_data_threshold`` bytes (50 MB); one more is "Too many packets buffered for
output stream", AVERROR(ENOSPC). :class:`MuxingQueue` counts the same (a transcoded stream's
held input packets stand for the packets ffmpeg would have queued), so memory stays bounded.
"""

from __future__ import annotations

import errno
import sys

from avdnn.errors import AvdnnError, from_errno

__all__ = ["MAX_MUXING_QUEUE_SIZE", "MUXING_QUEUE_DATA_THRESHOLD", "MuxingQueue"]

#: ffmpeg's -max_muxing_queue_size default (packets).
MAX_MUXING_QUEUE_SIZE = 128
#: ffmpeg's -muxing_queue_data_threshold default (bytes).
MUXING_QUEUE_DATA_THRESHOLD = 50 * 1024 * 1024
_FIRST_SIZE = 8  # the FIFO's first allocation (ffmpeg_mux_init.c)


class MuxingQueue:
    """What one output stream holds before the header, bounded as ffmpeg's muxing queue is."""

    def __init__(
        self, max_packets: int = MAX_MUXING_QUEUE_SIZE, data_threshold: int = MUXING_QUEUE_DATA_THRESHOLD
    ) -> None:
        self.max_packets = max_packets
        self.data_threshold = data_threshold
        self.size = _FIRST_SIZE
        self.packets = 0
        self.bytes = 0
        #: the most packets held at once
        self.peak = 0

    def _grown(self, nbytes: int) -> int:
        """The FIFO's size once a packet of ``nbytes`` is in (ffmpeg's growth rule)."""
        if self.packets < self.size:
            return self.size
        over = self.bytes + nbytes > self.data_threshold
        return min(2 * self.size, self.max_packets if over else sys.maxsize)

    def full_for(self, nbytes: int) -> bool:
        """Whether one more packet of ``nbytes`` would overflow the queue."""
        return self.packets >= self.size and self._grown(nbytes) <= self.size

    def hold(self, nbytes: int, stream: str) -> None:
        """One more packet of ``nbytes`` held (``stream``: the output stream, for the error)."""
        if self.full_for(nbytes):
            raise self.overflow(stream)
        self.size = self._grown(nbytes)
        self.packets += 1
        self.bytes += nbytes
        self.peak = max(self.peak, self.packets)

    def release(self) -> None:
        """The header is written: what was held goes to the muxer."""
        self.packets = self.bytes = 0

    def overflow(self, stream: str) -> AvdnnError:
        return from_errno(
            errno.ENOSPC,
            f"Too many packets buffered for output stream {stream} (held before the output's header, "
            f"which waits for the chain's first frame: {self.packets} packets, {self.bytes} bytes; "
            "-max_muxing_queue_size and -muxing_queue_data_threshold raise the bound)",
        )
