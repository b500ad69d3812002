"""Where an output's side streams meet its video: one interleaver, the video's progress, ffmpeg's sync queue.

Every packet of the output (the video encoder's, and the side streams' from their demuxer
threads) goes through one :class:`~.interleave.Interleaver`, whose lock is the output's lock.
The video's progress (the end time of the last frame encoded) is what the other streams wait
on: with a frame limit (``-frames:v``) a side stream holds what lies past the video's head
(ffmpeg's sync queue before the encoders), and a stream of another input, demuxed on its own
thread, does not run ahead of the video (:meth:`SideSync.wait_for_video`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from avdnn.media.output.interleave import Interleaver, WriteFn

__all__ = ["SideSync"]


def _times(packet: Any, tb: Fraction) -> tuple[Fraction | None, Fraction | None]:
    """A packet's dts (pts without one) and end, in seconds."""
    ts = packet.dts if packet.dts is not None else packet.pts
    if ts is None:
        return None, None
    return ts * tb, (ts + (packet.duration or 0)) * tb


class SideSync:
    """The ``n`` output streams' meeting point; ``video`` says whether one of them is the chain's.

    ``on_video`` are called (under the lock) whenever the video advances or ends; ``on_drop``
    with a stream's index when the sync queue drops one of its packets at a frame limit.
    """

    def __init__(
        self,
        n: int,
        write: WriteFn,
        *,
        video: bool,
        on_video: Sequence[Callable[[], None]] = (),
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        self._interleaver = Interleaver(n, write, on_drop=on_drop)
        #: Held by every thread that encodes or muxes into this output.
        self.lock: threading.RLock = self._interleaver.lock
        self._on_video = list(on_video)
        #: Notified whenever the video advances (streams of other inputs pace themselves on it).
        self._video_cond = threading.Condition(self.lock)
        #: End time (s) of the last video frame handed to the encoder.
        self.video_head: Fraction | None = Fraction(-1) if video else None
        self._video_done = not video
        self.closed = False

    # -- packets --------------------------------------------------------------------------

    def start(self) -> None:
        """The header is written: packets may leave."""
        self._interleaver.start()

    def push(self, index: int, packet: Any, tb: Fraction) -> None:
        """A packet of stream ``index`` (``tb``: its time base), into the interleaver."""
        time, end = _times(packet, tb)
        self._interleaver.push(index, packet, time, end)

    def finish_at(self, index: int, end: Fraction) -> None:
        """Stream ``index`` reached its frame limit, ending at ``end`` (s): the others end there too."""
        self._interleaver.finish_at(index, end)

    def end(self, index: int) -> None:
        self._interleaver.end(index)

    def ended(self, index: int) -> bool:
        """Whether stream ``index`` takes no more packets (ended, or past a frame limit's end)."""
        return self._interleaver.ended(index)

    def flush(self) -> None:
        """End of the output: every packet left, in order."""
        self._interleaver.flush()

    def discard(self) -> None:
        """End of an output that never wrote its header: the packets held are dropped."""
        self._interleaver.discard()

    @property
    def peak(self) -> int:
        """The most packets the interleaver ever held at once (bounded by the video pipeline's depth)."""
        return self._interleaver.peak

    # -- the video's progress -------------------------------------------------------------

    def past_cut(self, end: Fraction) -> bool:
        """Whether something ending at ``end`` (s) lies past where a frame limit ended the output."""
        return self._interleaver.past_cut(end)

    def sync_hold(self, end: Fraction, *, limited: bool) -> bool:
        """ffmpeg's sync queue: with a frame limit (``limited``), other streams wait for the video."""
        if not limited or self._video_done or self.video_head is None:
            return False
        return self.video_head < end

    def video_progress(self, end: Fraction | None) -> None:
        """The video reached ``end`` (s); None: it ended. Lets waiting side streams go on."""
        with self.lock:
            if end is None:
                self._video_done = True
            else:
                self.video_head = end
            for notify in self._on_video:
                notify()
            self._video_cond.notify_all()

    def wait_for_video(self, time: Fraction, stopped: Callable[[], bool], lead: Fraction = Fraction(1)) -> None:
        """Block until the video has got within ``lead`` seconds of ``time`` (or ended, or the
        output closed, or ``stopped()``).

        A stream of another input is demuxed on its own thread; this keeps it from running ahead
        of the video and piling up in the interleaver, as ffmpeg's reading of the input whose
        output stream is furthest behind does.
        """
        with self._video_cond:
            self._video_cond.wait_for(
                lambda: (
                    self._video_done
                    or self.video_head is None
                    or self.closed
                    or self.video_head >= time - lead
                    or stopped()
                )
            )

    def wake(self) -> None:
        """Wake every :meth:`wait_for_video` (to re-check its ``stopped``)."""
        with self._video_cond:
            self._video_cond.notify_all()
