"""Live inputs: which inputs are live, opening them with a bound on every wait, reopening them.

An input is *live* when it arrives at its own pace whether or not avdnn keeps up: a network
protocol (udp, rtp, tcp, srt, rtsp, rtmp, ...; http/https and HLS when the stream has no known
duration), a capture device (v4l2, x11grab, alsa, ...), or a file read with ``-re`` /
``-readrate``. For a live input the run puts one bounded queue with a drop policy before the
chain (``-live_drop``, ``-live_queue``: :mod:`avdnn.run.livequeue`).

A *network* input is also opened and read with a bound on every wait, and reopened when it is
lost. PyAV's interrupt callback aborts any libavformat wait longer than ``-live_timeout``
seconds (the open, and each read: "no packet for N seconds" is a stall); an error, a stall or
the end of the stream (the sender went away) is followed by up to ``-reconnect_attempts``
reopenings, ``-reconnect_delay`` seconds apart. The first open is retried the same way (a
camera that is not up yet). None of these names is an AVOption (http's own ``-reconnect``,
``-reconnect_streamed``, ``-reconnect_delay_max``, ``-timeout``, ``-rw_timeout`` ... still
reach http and the other protocols untouched). A listening input (``tcp://...?listen=1``)
waits for its peer without the open bound, as ffmpeg does (``-listen_timeout`` bounds it), and
so does the first open of a UDP/RTP receiver, which waits for a sender that may start later
(udp's own ``?timeout=`` bounds it); its reopenings keep the bound.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from avdnn._util.redact import redact_url
from avdnn.errors import AvdnnError, InvalidArgumentError, IOFailureError, from_av_error
from avdnn.media.tags import METADATA_ENCODING, METADATA_ERRORS

log = logging.getLogger("avdnn")

__all__ = [
    "DROP_POLICIES",
    "LiveOptions",
    "LiveStats",
    "is_network",
    "open_input",
    "redact_url",
    "stop_waiting",
]

_local = threading.local()


@contextlib.contextmanager
def stop_waiting(event: threading.Event) -> Iterator[None]:
    """Opens on this thread inside the block stop trying again once ``event`` is set (the run's stop):
    a first open that failed, or a listening one whose socket was shut (media.input.unblock), ends."""
    before = getattr(_local, "stop", None)
    _local.stop = event
    try:
        yield
    finally:
        _local.stop = before


#: Protocols whose data arrives at the sender's pace (scheme of the URL).
NETWORK_PROTOCOLS = frozenset(
    {
        "udp",
        "udplite",
        "rtp",
        "srtp",
        "tcp",
        "tls",
        "dtls",
        "unix",
        "srt",
        "rist",
        "zmq",
        "sctp",
        "rtsp",
        "rtsps",
        "rtmp",
        "rtmpe",
        "rtmps",
        "rtmpt",
        "rtmpte",
        "rtmpts",
        "ffrtmphttp",
        "mmsh",
        "mmst",
        "http",
        "https",
        "httpproxy",
    }
)
#: Of those, the ones that can also carry a finite file: live only without a known duration.
_PULL_PROTOCOLS = frozenset({"http", "https", "httpproxy"})
#: Demuxers that are live whatever the URL (an RTSP/SDP session).
_LIVE_FORMATS = frozenset({"rtsp", "sdp", "rtp"})
#: libavdevice's capture devices (input formats).
DEVICE_FORMATS = frozenset(
    {
        "video4linux2,v4l2",
        "video4linux2",
        "v4l2",
        "x11grab",
        "xcbgrab",
        "fbdev",
        "kmsgrab",
        "alsa",
        "pulse",
        "oss",
        "jack",
        "sndio",
        "openal",
        "dshow",
        "gdigrab",
        "vfwcap",
        "avfoundation",
        "decklink",
        "android_camera",
        "iec61883",
        "dv1394",
    }
)

DROP_POLICIES = ("oldest", "newest", "none")
#: -live_queue's default: 8 frames (ffmpeg's -thread_queue_size default, in frames), 0.27 s at 30 fps.
DEFAULT_LIVE_QUEUE = 8


@dataclass(frozen=True)
class LiveOptions:
    """The live-input options of one input (ffmpeg-style names; docs/live.md).

    ``reconnect_attempts``: reopenings after a loss (and retries of the first open), -1 for
    ever; ``reconnect_delay``: seconds between them; ``live_timeout``: seconds any open or
    read of a network input may wait (0 disables the bound); ``live_drop`` / ``live_queue``:
    the policy and depth of the queue before the chain (None: the input's default, ``oldest``
    and 8 for a live input, lossless for a file).
    """

    reconnect_attempts: int = 3
    reconnect_delay: float = 1.0
    live_timeout: float = 5.0
    live_drop: str | None = None
    live_queue: int | None = None

    def __post_init__(self) -> None:
        if self.reconnect_attempts < -1:
            raise InvalidArgumentError(
                f"Invalid reconnect_attempts {self.reconnect_attempts}: -1 (for ever) or more",
                option="reconnect_attempts",
            )
        if not self.reconnect_delay >= 0:
            raise InvalidArgumentError(f"Invalid reconnect_delay {self.reconnect_delay}", option="reconnect_delay")
        if not self.live_timeout >= 0:
            raise InvalidArgumentError(f"Invalid live_timeout {self.live_timeout}", option="live_timeout")
        if self.live_drop is not None and self.live_drop not in DROP_POLICIES:
            raise InvalidArgumentError(
                f"Invalid live_drop '{self.live_drop}': {', '.join(DROP_POLICIES)}", option="live_drop"
            )
        if self.live_queue is not None and self.live_queue < 1:
            raise InvalidArgumentError(f"Invalid live_queue {self.live_queue}: 1 or more", option="live_queue")


@dataclass
class LiveStats:
    """What a live input lost: reopenings, wall seconds without frames, frames lost by timestamps."""

    reconnects: int = 0
    gap_seconds: float = 0.0
    frames_lost: int = 0

    def counters(self) -> dict[str, int]:
        """As the run's input counters: ``reconnects``, ``gap_ms``, ``frames_lost``."""
        return {
            "reconnects": self.reconnects,
            "gap_ms": round(self.gap_seconds * 1000),
            "frames_lost": self.frames_lost,
        }


def protocol(url: str) -> str | None:
    """The URL's scheme, lower-cased (None for a plain path)."""
    scheme, sep, _ = url.partition("://")
    return scheme.lower() if sep else None


def is_network(url: str, format: str | None) -> bool:  # noqa: A002 - ffmpeg's -f
    """Whether the input comes over a network protocol (opened with bounds, reopened when lost)."""
    return protocol(url) in NETWORK_PROTOCOLS or (format or "") in _LIVE_FORMATS


def is_live(url: str, format: str | None, container: Any, *, paced: bool) -> bool:  # noqa: A002
    """Whether the input is live: paced (-re/-readrate), a device, or network data at the sender's pace."""
    if paced or (format or "") in DEVICE_FORMATS:
        return True
    if not is_network(url, format):
        return False
    if protocol(url) in _PULL_PROTOCOLS:  # a file served over http is not live; HLS live / a TS stream is
        return container.duration is None
    return True


def listens(url: str, options: dict[str, str]) -> bool:
    """A listening input (tcp/rtmp/http ``listen``, srt ``mode=listener``, rtsp ``-rtsp_flags listen``)."""
    _, _, query = url.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    params.update(options)
    return (
        params.get("listen", "0") not in ("0", "")
        or params.get("mode") == "listener"
        or "listen" in params.get("rtsp_flags", "")
    )


#: Protocols whose input binds a socket and waits for datagrams from a sender (no connection).
_RECEIVER_PROTOCOLS = frozenset({"udp", "udplite", "rtp", "srtp"})


def receives(url: str, format: str | None) -> bool:  # noqa: A002 - ffmpeg's -f
    """A datagram receiver (``udp://``, ``rtp://``, an SDP session): it waits for a sender that may start later."""
    return protocol(url) in _RECEIVER_PROTOCOLS or (format or "") == "sdp"


class StallError(IOFailureError):
    """A network input gave no data for ``seconds`` (-live_timeout): AVERROR(ETIMEDOUT)."""

    def __init__(self, seconds: float, name: str) -> None:
        super().__init__(f"no data for {seconds:g} s (-live_timeout)", code=-errno.ETIMEDOUT, file=name)
        self.seconds = seconds


def translate(exc: BaseException, name: str, timeout: float | None) -> AvdnnError:
    """A PyAV/OS error of a network input as avdnn's; PyAV's interrupt (our timeout) is a stall."""
    import av

    if isinstance(exc, av.ExitError) and timeout:
        return StallError(timeout, name)
    return from_av_error(exc, file=name)


def check_format(format: str, name: str) -> None:  # noqa: A002 - ffmpeg's -f
    """``-f NAME`` must name an input format, as ffmpeg's av_find_input_format finds them.

    Checked before PyAV opens anything: PyAV also takes an output-only name (``-f webm``) and then
    probes the file instead, and its ValueError for an unknown one is no different from others.
    """
    import av

    try:
        av.ContainerFormat(format, "r")
    except ValueError as exc:
        raise InvalidArgumentError(f"Unknown input format: '{format}'", file=name) from exc


def _open_once(url: str, name: str, format: str | None, options: dict[str, str], timeout: Any) -> Any:  # noqa: A002
    """One av.open of the input; tags that are not UTF-8 keep their bytes (:mod:`avdnn.media.tags`).

    Only PyAV's FFmpegError and the OSError of its file are the input's errors (their errno is
    ffmpeg's cause and exit status); anything else is a bug and passes through as it is.
    """
    import av

    if format is not None:
        check_format(format, name)
    try:
        return av.open(
            url,
            "r",
            format=format,
            options=options,
            timeout=timeout,
            metadata_encoding=METADATA_ENCODING,
            metadata_errors=METADATA_ERRORS,
        )
    except AvdnnError:
        raise
    except (av.FFmpegError, OSError) as exc:
        seconds = timeout[1] if isinstance(timeout, tuple) else timeout
        raise translate(exc, name, seconds) from exc


def open_input(
    url: str,
    *,
    format: str | None,  # noqa: A002 - ffmpeg's -f
    options: dict[str, str] | None,
    live: LiveOptions,
    reconnect: bool = False,
    stop: threading.Event | None = None,
) -> Any:
    """The input's PyAV container; a network input with its bounds and retries (module docstring).

    ``reconnect``: this is a reopening after a loss (each failed attempt is a warning; the first
    open logs them at verbose level, so a dead address ends with one line). ``stop`` cuts the
    delay between attempts short. libavformat's own lines of an attempt that failed are kept
    back (the error says why); those of the attempt that worked are logged as usual.
    """
    import av.logging

    name = redact_url(url)
    opts = dict(options or {})
    stop = stop if stop is not None else getattr(_local, "stop", None)
    if not is_network(url, format):
        return _open_once(url, name, format, opts, None)
    bound = live.live_timeout or None
    # the open of a listening input, and the first one of a UDP/RTP receiver, waits for its peer
    # without avdnn's bound, as ffmpeg's does (their own -listen_timeout / udp ?timeout= bound it):
    # -live_timeout on it made a receiver started ~23 s before its sender give up (5 s x 4 attempts
    # + 3 x 1 s); a reopening stays bounded, so a sender gone for good still ends the input
    waits = listens(url, opts) or (receives(url, format) and not reconnect)
    timeout = (None if waits else bound, bound)
    tries = -1 if live.reconnect_attempts == -1 else live.reconnect_attempts + (0 if reconnect else 1)
    attempt = 0
    while True:
        with av.logging.Capture() as lines:
            try:
                container = _open_once(url, name, format, opts, timeout)
            except AvdnnError as exc:
                failure: AvdnnError | None = exc
            else:
                failure = None
        if failure is None:
            _replay(lines, logging.NOTSET)
            return container
        _replay(lines, logging.INFO - 1)
        attempt += 1
        if (tries != -1 and attempt >= tries) or (stop is not None and stop.is_set()):
            if attempt > 1:
                failure.message += f" (after {attempt} attempts)"
            raise failure
        level = logging.WARNING if reconnect else logging.INFO - 1
        log.log(
            level,
            "%s: %s; trying again in %g s (attempt %d of %s)",
            name,
            failure.message,
            live.reconnect_delay,
            attempt + 1,
            "unlimited" if tries == -1 else tries,
        )
        if _wait(live.reconnect_delay, stop):
            raise failure


def _wait(seconds: float, stop: threading.Event | None) -> bool:
    """The bounded retry delay; True when ``stop`` was set meanwhile (the run is ending)."""
    if stop is not None:
        return stop.wait(seconds)
    time.sleep(seconds)  # the retry delay is the point of this wait
    return False


def _replay(lines: list[tuple[int, str, str]], level: int) -> None:
    """libavformat's lines caught during one open attempt, logged (at ``level``, or their own)."""
    import av.logging

    for lib_level, who, message in lines:
        py_level = level or av.logging.adapt_level(lib_level)
        logging.getLogger("libav." + who if who else "libav.generic").log(py_level, message.strip())


def continue_timeline(end: int, shift: int, start: int, *, threshold: int) -> tuple[int, int | None]:
    """The shift for a reopened input's timestamps, and the hole the timestamps show (None: unknown).

    All in one time base: ``end`` is the end of the last packet before the loss (already
    shifted), ``shift`` the shift so far, ``start`` the new session's first timestamp, and
    ``threshold`` ffmpeg's -dts_delta_threshold. When the new timestamps go on forward by less
    than the threshold (a camera whose clock kept running) they are kept and the hole is
    returned (the frames lost in it can be counted); otherwise (the sender restarted at 0) the
    session is placed right after the old one, as ffmpeg places a timestamp discontinuity.
    """
    ahead = start + shift - end
    if 0 <= ahead <= threshold:
        return shift, ahead
    return end - start, None
