"""Reopening a lost live network input in the middle of a run, its timeline continued.

:class:`~avdnn.media.input.source.Source` reads a live network input through :func:`live_packets`:
a demuxer error or a stall (PyAV's read timeout, ``-live_timeout``) ends the pass as
:class:`InputLost`; the Source drains its decoder and calls :func:`reopen`, which opens the
URL again (``-reconnect_attempts`` times, ``-reconnect_delay`` apart: :func:`.live.open_input`),
decodes the new session's video with the same decoder (its counters go on) and shifts the new
timestamps so that the output never sees them go back (:func:`.live.continue_timeline`). The
end of the stream is a loss too (the sender went away): reopened the same way, and when that
fails the input simply ends. A loss that cannot be reopened ends the run with its error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from avdnn.errors import AvdnnError
from avdnn.media.input.live import StallError, _listens, continue_timeline, open_input, protocol, translate
from avdnn.media.timing import AV_TIME_BASE, rescale

if TYPE_CHECKING:
    from avdnn.media.input.source import Source

log = logging.getLogger("avdnn")

_US = Fraction(1, AV_TIME_BASE)
#: ffmpeg's -dts_delta_threshold (seconds): a larger jump forward is a discontinuity.
DTS_DELTA_THRESHOLD = 10


class InputLost(AvdnnError):
    """A live input failed or stalled mid-stream (internal: the Source reopens it)."""

    def __init__(self, error: AvdnnError) -> None:
        super().__init__(error.message, code=error.code, file=error.file)
        self.error = error


def live_packets(packets: Iterator[Any], name: str, timeout: float, arrived: list[float]) -> Iterator[Any]:
    """The demuxer's packets; its failure (a stall included) raised as :class:`InputLost`.

    ``arrived[0]`` is set to the time of each packet (the gap after a loss is counted from there).
    """
    import av

    while True:
        try:
            packet = next(packets)
        except StopIteration:
            return
        except (av.FFmpegError, OSError) as exc:
            raise InputLost(translate(exc, name, timeout)) from exc
        arrived[0] = time.monotonic()
        yield packet


def reopen(source: Source, cause: AvdnnError | None) -> bool:
    """Open ``source``'s URL again after a loss (``cause``; None: the stream ended).

    Returns False when an ended stream could not be reopened (the input ends normally);
    raises ``cause`` (with why it was not reopened) when a failed one could not.
    """
    name = source.name
    live = source.live_options
    # a session counts as healthy when it gave frames for at least -reconnect_delay: only then is
    # the budget of reopenings restored (a server that ends every session at once uses it up)
    healthy = (
        source.frames_decoded > source._frames_at_reopen
        and time.monotonic() - source._reopened_at >= live.reconnect_delay
    )
    source._idle_reopens = 0 if healthy else source._idle_reopens + 1
    source._frames_at_reopen = source.frames_decoded
    ended_for_good = cause is None and _ends_at_eof(source)
    spent = live.reconnect_attempts != -1 and source._idle_reopens > live.reconnect_attempts
    if source._stop.is_set() or live.reconnect_attempts == 0 or ended_for_good or spent:
        # ending; never reopened; a stream that ends as ffmpeg ends it (a listening input's sender
        # finished, an http stream ended: http's own -reconnect_at_eof covers that); or reopenings
        # in a row that gave nothing (a server that ends every session at once) used the budget
        if cause is not None:
            raise cause
        if spent:
            log.warning("%s: ended (%d reopening(s) in a row gave no lasting stream)", name, source._idle_reopens - 1)
        return False
    if source._idle_reopens > 0 and source._stop.wait(live.reconnect_delay):
        # the last session gave no frame: wait as between attempts (never reopen in a tight loop)
        if cause is not None:
            raise cause
        return False
    lost_at = time.monotonic()
    # the gap starts at the last packet, or for a stall -live_timeout before now (the demuxer hands out
    # the packet it was assembling when its read fails, so the last packet can come at the failure)
    since = lost_at - cause.seconds if isinstance(cause, StallError) else lost_at
    since = min(source._last_in[0] or since, since)
    if cause is not None:
        log.warning("%s: %s; reopening", name, cause.message)
    else:
        log.log(logging.INFO - 1, "%s: end of stream; reopening", name)
    try:
        container = open_input(source.url, **source._open_args, reconnect=cause is not None, stop=source._stop)
    except AvdnnError as exc:
        if cause is None:
            log.info("%s: ended (not reopened: %s)", name, exc.message)
            return False
        cause.message = f"{cause.message}; not reopened: {exc.message}"
        raise cause from exc
    index = source._stream.index if source._stream is not None else None  # read before its container goes
    old, source._container = source._container, container
    if source.side_handlers:  # the side paths keep the old streams' parameters: free it with the Source
        source._retired.append(old)
    else:
        old.close()
    source.live_stats.reconnects += 1
    source._reopened_at = time.monotonic()
    if source._gap_from is None:  # two losses without a frame between them: one gap, from the first
        source._gap_from = since
    _rebind(source, container, index)
    _continue(source, container)
    log.warning(
        "%s: reopened after %.1f s%s", name, time.monotonic() - lost_at, "" if cause else " (after end of stream)"
    )
    return True


def _ends_at_eof(source: Source) -> bool:
    """Whether the end of this input's stream ends it, as in ffmpeg: a listening input (its sender
    finished: listening again would wait for ever) and http(s), which has its own reconnect options."""
    options = source._open_args.get("options") or {}
    return _listens(source.url, options) or protocol(source.url) in ("http", "https")


def _rebind(source: Source, container: Any, index: int | None) -> None:
    """The new session's video stream to the same decoder; the side streams by index, as before."""
    missing = [i for i in source.side_handlers if i >= len(container.streams)]
    if missing:  # another stream layout: the side paths cannot follow (an error line, not a traceback)
        raise AvdnnError(
            f"reopened with {len(container.streams)} stream(s), without stream #{missing[0]} that an "
            "output takes: a new stream layout is not supported",
            file=source.name,
        )
    if index is None:
        return
    streams = container.streams
    new = streams[index] if index < len(streams) and streams[index].type == "video" else None
    if new is None and streams.video:
        new = streams.video[0]
    if new is None:
        raise AvdnnError("reopened without a video stream", file=source.name)
    source._stream = new
    if source._discard is not None:  # -discard applies to every session's video stream
        from avdnn.media.input.decode import discard_value

        new.discard = discard_value(source._discard)
    if source.decoder is not None:
        source.decoder.rebind(new)


def _continue(source: Source, container: Any) -> None:
    """Shift the new session's timestamps past the old ones (and count the frames lost in a hole)."""
    if source._max_pts is None:
        return
    end = rescale(source._max_pts[0], source._max_pts[1], _US)
    shift = rescale(source._duration[0], source._duration[1], _US) if source._duration[0] else 0
    start = container.start_time if container.start_time is not None else 0  # raw, as _max_pts
    new_shift, hole = continue_timeline(end, shift, start, threshold=DTS_DELTA_THRESHOLD * AV_TIME_BASE)
    source._duration = (new_shift, _US)
    stream = source._stream
    rate = (stream.guessed_rate or stream.average_rate) if stream is not None else None
    if hole and rate:
        source.live_stats.frames_lost += round(hole / AV_TIME_BASE * float(rate))
