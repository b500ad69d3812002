"""Reopening a lost live network input in the middle of a run, its timeline continued.

:class:`~avdnn.media.input.source.Source` owns a :class:`Reopener` for a live network input and
reads the input through :meth:`Reopener.packets`: a demuxer error or a stall (PyAV's read
timeout, ``-live_timeout``) ends the pass as :class:`InputLost`; the Source drains its decoder
and calls :meth:`Reopener.reopen`, which decides whether to try, opens the URL again
(``-reconnect_attempts`` times, ``-reconnect_delay`` apart: :func:`.live.open_input`) and hands
the new session to the Source, which decodes its video with the same decoder (the counters go
on) and shifts its timestamps so that the output never sees them go back
(:meth:`.streamloop.StreamLoop.continue_session`). The end of the stream is a loss too (the
sender went away): reopened the same way, and when that fails the input simply ends. A loss
that cannot be reopened ends the run with its error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from avdnn.errors import AvdnnError
from avdnn.media.input.live import LiveOptions, LiveStats, StallError, listens, open_input, protocol, translate

__all__ = ["InputLost", "Reopener"]

log = logging.getLogger("avdnn")


class InputLost(AvdnnError):
    """A live input failed or stalled mid-stream (internal: the Source reopens it)."""

    def __init__(self, error: AvdnnError) -> None:
        super().__init__(error.message, code=error.code, file=error.file)
        self.error = error


class Reopener:
    """When and how a live network input is reopened, and what its losses cost (``stats``).

    ``open_args`` are :func:`.live.open_input`'s keywords of the first open; ``stop`` is set when
    the run ends (a wait to reopen ends with it).
    """

    def __init__(self, url: str, name: str, open_args: dict[str, Any], stats: LiveStats, stop: threading.Event) -> None:
        self.url = url
        self.name = name
        self._open_args = open_args
        self._live: LiveOptions = open_args["live"]
        self.stats = stats
        self.stop = stop
        #: reopenings in a row whose session gave no lasting stream, and the frame count at the last
        self._idle_reopens = 0
        self._frames_at_reopen = 0
        self._reopened_at = float("-inf")
        self._last_packet = 0.0  # when the last packet arrived (the gap starts there)
        self._gap_from: float | None = None

    def packets(self, packets: Iterator[Any]) -> Iterator[Any]:
        """The demuxer's packets; its failure (a stall included) raised as :class:`InputLost`."""
        import av

        while True:
            try:
                packet = next(packets)
            except StopIteration:
                return
            except (av.FFmpegError, OSError) as exc:
                raise InputLost(translate(exc, self.name, self._live.live_timeout)) from exc
            self._last_packet = time.monotonic()
            yield packet

    def frame_arrived(self) -> None:
        """A frame reached the chain: a gap after a reopening ends here."""
        if self._gap_from is not None:
            self.stats.gap_seconds += time.monotonic() - self._gap_from
            self._gap_from = None

    def reopen(self, cause: AvdnnError | None, frames_decoded: int, adopt: Callable[[Any], None]) -> bool:
        """Open the URL again after a loss (``cause``; None: the stream ended), ``adopt`` the new
        container (the Source takes it over), having decoded ``frames_decoded`` frames so far.

        Returns False when an ended stream could not be reopened (the input ends normally);
        raises ``cause`` (with why it was not reopened) when a failed one could not.
        """
        name, live = self.name, self._live
        # a session counts as healthy when it gave frames for at least -reconnect_delay: only then is
        # the budget of reopenings restored (a server that ends every session at once uses it up)
        healthy = (
            frames_decoded > self._frames_at_reopen and time.monotonic() - self._reopened_at >= live.reconnect_delay
        )
        self._idle_reopens = 0 if healthy else self._idle_reopens + 1
        self._frames_at_reopen = frames_decoded
        ended_for_good = cause is None and self._ends_at_eof()
        spent = live.reconnect_attempts != -1 and self._idle_reopens > live.reconnect_attempts
        if self.stop.is_set() or live.reconnect_attempts == 0 or ended_for_good or spent:
            # ending; never reopened; a stream that ends as ffmpeg ends it (a listening input's sender
            # finished, an http stream ended: http's own -reconnect_at_eof covers that); or reopenings
            # in a row that gave nothing (a server that ends every session at once) used the budget
            if cause is not None:
                raise cause
            if spent:
                log.warning("%s: ended (%d reopening(s) in a row gave no lasting stream)", name, self._idle_reopens - 1)
            return False
        if self._idle_reopens > 0 and self.stop.wait(live.reconnect_delay):
            # the last session gave no frame: wait as between attempts (never reopen in a tight loop)
            if cause is not None:
                raise cause
            return False
        lost_at = time.monotonic()
        # the gap starts at the last packet, or for a stall -live_timeout before now (the demuxer hands out
        # the packet it was assembling when its read fails, so the last packet can come at the failure)
        since = lost_at - cause.seconds if isinstance(cause, StallError) else lost_at
        since = min(self._last_packet or since, since)
        if cause is not None:
            log.warning("%s: %s; reopening", name, cause.message)
        else:
            log.log(logging.INFO - 1, "%s: end of stream; reopening", name)
        try:
            container = open_input(self.url, **self._open_args, reconnect=cause is not None, stop=self.stop)
        except AvdnnError as exc:
            if cause is None:
                log.info("%s: ended (not reopened: %s)", name, exc.message)
                return False
            cause.message = f"{cause.message}; not reopened: {exc.message}"
            raise cause from exc
        self.stats.reconnects += 1
        self._reopened_at = time.monotonic()
        if self._gap_from is None:  # two losses without a frame between them: one gap, from the first
            self._gap_from = since
        adopt(container)
        log.warning(
            "%s: reopened after %.1f s%s", name, time.monotonic() - lost_at, "" if cause else " (after end of stream)"
        )
        return True

    def _ends_at_eof(self) -> bool:
        """Whether the end of this input's stream ends it, as in ffmpeg: a listening input (its sender
        finished: listening again would wait for ever) and http(s), which has its own reconnect options."""
        options = self._open_args.get("options") or {}
        return listens(self.url, options) or protocol(self.url) in ("http", "https")
