"""The streams an output takes from a second (third...) input: demuxed on a thread of their own.

moviepy and imageio-ffmpeg write video from a pipe and audio from a file as two inputs
(``-i - -i audio.mp3 -map 0:v:0 -map 1:a:0``). The video input's demuxer feeds the chain and its
own side streams (:class:`~.source.Source`); another input's streams only go around the chain
(copied or encoded, :mod:`avdnn.media.streams.sidepath`), so its demuxer runs on its own thread
and paces itself on the video (:meth:`avdnn.media.output.sink.Sink.wait_for_video`) instead of
piling its packets up in the interleaver. The thread is joined when the output closes, after the
video has ended, with a bound (:mod:`avdnn._util.joins`): one stuck in a read (a pipe nobody
writes to) is left behind, hands no packet on from then, and closes its input when it ends.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Sequence
from fractions import Fraction

from avdnn._util import joins
from avdnn._util.joins import OwnedThread
from avdnn.errors import AvdnnError, IOFailureError, from_av_error
from avdnn.media.input.source import Source
from avdnn.media.output.sink import Sink
from avdnn.media.streams.sidepath import SidePath

__all__ = ["CompanionInput"]


class CompanionInput:
    """Feeds ``sides`` from ``source``'s demuxer on a thread, paced on ``sink``'s video."""

    def __init__(self, source: Source, sides: Sequence[SidePath], sink: Sink) -> None:
        self.source = source
        self.sink = sink
        self.sides = list(sides)
        self.error: BaseException | None = None
        self._stop = False
        #: held while a packet is handed on: once ``_stop`` is set under it, no packet reaches the sides
        self._gate = threading.Lock()
        self._thread: OwnedThread | None = None
        for side in self.sides:
            source.attach_side(side.in_index, side.packet, side.end)
        sink.before_sides_end.append(self.finish)

    def start(self) -> None:
        self._thread = OwnedThread(self._run, name=f"avdnn-demux-{self.source.name}")
        self._thread.start()

    def _run(self) -> None:
        import av

        demux = self.source.demuxer
        streams = [demux.container.streams[side.in_index] for side in self.sides]
        offset = self.source.offset
        try:
            for packet in demux.container.demux(*streams):
                ts = packet.dts if packet.dts is not None else packet.pts
                if ts is not None and packet.time_base:
                    self.sink.wait_for_video(Fraction(ts) * Fraction(packet.time_base) + offset, lambda: self._stop)
                with self._gate:
                    if self._stop:
                        return
                    demux.to_side(packet)
            with self._gate:
                if not self._stop:
                    demux.end_sides()
        except AvdnnError as exc:
            self.error = exc
        except (av.FFmpegError, OSError) as exc:
            self.error = from_av_error(exc, file=self.source.name)
            self.error.__cause__ = exc
        except BaseException as exc:  # noqa: BLE001 - a bug: re-raised on the run's thread by finish()
            self.error = exc

    def _stop_feeding(self) -> None:
        """No packet reaches the sides from now on (waits for one being handed on)."""
        with self._gate:
            self._stop = True
        self.sink.wake()

    def finish(self) -> None:
        """Wait (bounded) for the demuxer to reach its end (the video has ended); raise what it failed with.

        A demuxer still reading after the bound is left behind: it hands nothing more on (the sides
        end with what they got) and the run fails with AVERROR(ETIMEDOUT) naming the input.
        """
        thread = self._thread
        if thread is not None and not thread.join(what=f"input '{self.source.name}' (streams around the chain)"):
            self._stop_feeding()
            raise IOFailureError(
                f"still reading after {joins.JOIN_TIMEOUT:g} s at the end of the output; its streams end here",
                code=-errno.ETIMEDOUT,
                file=self.source.name,
            )
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def close(self) -> None:
        """Stop early (an error elsewhere) and close the input (when the demuxer has ended: never under it)."""
        self._stop_feeding()
        thread = self._thread
        if thread is not None and not thread.join():
            thread.then(self.source.close)
            return
        self.source.close()
