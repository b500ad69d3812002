"""Where an output goes: a file, a pipe, or a URL opened through libavformat's protocols.

ffmpeg opens an output's URL with ``avio_open2`` and the output's options (tcp, udp, rtmp, http
PUT/POST, ...: the protocol takes its AVOptions, the muxer the rest), once its streams are known
and before any frame is encoded. PyAV opens one with ``avio_open`` and no options when the
header is written, so avdnn opens a network URL itself (:class:`NetworkTarget`, over
:class:`~avdnn.media.libav.avio.AvioWriter`) and hands PyAV the connection as its file.

A network output is live: nothing waits on it for ever. Each write, and the open (a connect, an
RTMP handshake), is bounded by ``-rw_timeout`` (microseconds, as ffmpeg's; 0: no bound) or
:data:`DEFAULT_RW_TIMEOUT`, through libavformat's interrupt callback, which every protocol
asks while it waits (a nested one too: rtmp's tcp). A listening output (``tcp://...?listen=1``,
``-listen 1``) waits for its peer until the run stops. A write that fails or times out ends the
output with its cause (``Connection reset by peer``, ``Broken pipe``, ``Connection timed out``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from avdnn.errors import AVERROR_EXIT, AvdnnError, InvalidArgumentError, IOFailureError, NotFoundError, from_code
from avdnn.media.input.live import listens
from avdnn.media.libav.avio import AvioWriter, protocol_name

__all__ = [
    "DEFAULT_RW_TIMEOUT",
    "NetworkTarget",
    "check_file_target",
    "check_not_an_input",
    "is_network_target",
    "rw_timeout",
]

#: Seconds one write (or the open) of a network output may wait without ``-rw_timeout``
#: (ffmpeg's default is no bound: a peer that stops reading stalls it for ever).
DEFAULT_RW_TIMEOUT = 10.0
#: AVFMT_NOFILE: the muxer opens its files itself (image2, segment, hls, dash, tee, rtsp, null).
AVFMT_NOFILE = 0x1
#: The muxers that open network connections themselves, and their option bounding socket I/O
#: (rtsp: microseconds; hls, dash: a duration), set to the output's bound when not given.
NOFILE_TIMEOUTS: dict[str, tuple[str, Callable[[float], str]]] = {
    "rtsp": ("timeout", lambda s: str(round(s * 1_000_000))),
    "hls": ("timeout", lambda s: f"{s:g}"),
    "dash": ("timeout", lambda s: f"{s:g}"),
}
_LOCAL = frozenset({"file", "pipe", "fd"})


def is_network_target(url: str) -> bool:
    """Whether ``url`` is opened through a protocol other than a file or a pipe (``tcp``, ``rtmp``
    ...; also a scheme libavformat lacks, such as ``srt`` here, so its error is libavformat's)."""
    if url == "-":
        return False
    name = protocol_name(url)
    return name not in _LOCAL if name is not None else "://" in url


def rw_timeout(options: Mapping[str, str]) -> float | None:
    """The bound (s) of each wait of a network output: ``-rw_timeout`` (µs, 0: none) or the default."""
    given = options.get("rw_timeout")
    if given is None:
        return DEFAULT_RW_TIMEOUT
    try:
        micros = int(given)
    except ValueError:
        return DEFAULT_RW_TIMEOUT  # libavformat refuses the value itself, naming it
    return micros / 1_000_000 if micros > 0 else None


def check_file_target(path: str, overwrite: bool | None) -> None:
    """ffmpeg's assert_file_overwrite for a file output, and the missing folder avio_open would give."""
    if path.startswith("file:"):
        path = path[5:]
    if os.path.exists(path) and not overwrite:
        raise IOFailureError(
            f"File '{path}' already exists. " + ("Exiting." if overwrite is False else "Use -y to overwrite."),
            code=-errno.EEXIST,
            file=path,
        )
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise NotFoundError("No such file or directory", file=path)


def check_not_an_input(output: str, inputs: Sequence[tuple[str, str | None]]) -> None:
    """ffmpeg's refusal to write over an input (``-y`` or not): the output's file name is one of
    the ``(url, format)`` inputs as given, and that input is read from a file (not lavfi, not an
    image2 pattern: those open no file of that name). ffmpeg: "Output x same as Input #0 - exiting"."""
    if protocol_name(output) != "file":
        return
    for k, (url, fmt) in enumerate(inputs):
        if url == output and not (fmt is not None and _demuxer_opens_no_file(fmt)):
            raise InvalidArgumentError(
                f"Output {output} same as Input #{k} - exiting (ffmpeg cannot edit existing files in-place)",
                file=output,
            )


def _demuxer_opens_no_file(name: str) -> bool:
    """Whether the demuxer ``name`` has AVFMT_NOFILE (lavfi, image2, devices); unknown: no."""
    import av

    try:
        return bool(int(av.ContainerFormat(name, "r").flags) & AVFMT_NOFILE)
    except ValueError:
        return False


class NetworkTarget:
    """A network output's connection, as PyAV's file: ``write``, ``flush``, ``close``; no seek.

    ``options`` are the output's AVOptions (the protocol consumes its own: :attr:`unused` are the
    muxer's); ``stopped()`` says the run is stopping, which ends a wait for a listening output's
    peer. :meth:`reopen` connects again (a server's restart; the caller writes a new header).
    """

    def __init__(self, url: str, name: str, options: Mapping[str, str], *, stopped: Callable[[], bool]) -> None:
        self.url = url
        #: The URL as shown (credentials redacted).
        self.name = name
        self._options = dict(options)
        self._stopped = stopped
        self.bound = rw_timeout(options)
        self._listening = listens(url, {k: str(v) for k, v in options.items()})
        self._deadline: float | None = None
        self._opening = False
        self._sigint = False
        self.unused: dict[str, str] = {}
        self.max_packet_size = 0
        self._writer: AvioWriter | None = None
        self._open()

    # -- libavformat's interrupt callback -------------------------------------------------

    def _interrupt(self) -> bool:
        if self._sigint or (self._opening and self._stopped()):
            return True
        return self._deadline is not None and time.monotonic() > self._deadline

    @contextlib.contextmanager
    def _ctrl_c(self) -> Iterator[None]:
        """Ctrl-C on the main thread while libavformat waits: it ends the wait, then is raised.

        Python would raise it inside the interrupt callback, where ctypes can only print it; for
        the wait SIGINT only says "interrupt", and KeyboardInterrupt is raised once libavformat
        returned. Another handler than Python's default is left alone."""
        if threading.current_thread() is not threading.main_thread() or (
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        ):
            yield
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            if self._sigint:
                self._sigint = False
                raise KeyboardInterrupt  # it replaces libavformat's "Immediate exit requested"

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self._sigint = True

    def _arm(self, listen: bool = False) -> None:
        self._deadline = None if self.bound is None or listen else time.monotonic() + self.bound

    def _failure(self, exc: AvdnnError, doing: str) -> AvdnnError:
        """libavformat's error of a wait we cut short, as the bound's; any other as it is."""
        if exc.code == AVERROR_EXIT and not self._sigint and not (self._opening and self._stopped()):
            exc = from_code(
                -errno.ETIMEDOUT,
                f"Connection timed out: {doing} waited {self.bound:g} s (-rw_timeout)",
            )
        exc.with_context(file=self.name)
        return exc

    # -- the connection -------------------------------------------------------------------

    def _open(self) -> None:
        self._opening = True
        self._arm(listen=self._listening)
        try:
            with self._ctrl_c():
                self._writer = AvioWriter(self.url, self._options, interrupt=self._interrupt)
        except AvdnnError as exc:
            err = self._failure(exc, "the connection")
            err.message = f"Error opening output {self.name}: {err.message}"
            raise err from None
        finally:
            self._opening = False
            self._deadline = None
        self.unused = self._writer.unused
        self.max_packet_size = self._writer.max_packet_size

    def reopen(self) -> None:
        """Close the connection (its error ignored: it is the one being replaced) and open it again."""
        old, self._writer = self._writer, None
        if old is not None:
            try:
                self._arm()
                old.close()
            except AvdnnError:
                pass
            finally:
                self._deadline = None
        self._open()

    def writable(self) -> bool:
        return True

    def _call(self, fn: Callable[[], Any], doing: str) -> Any:
        if self._writer is None:
            raise IOFailureError("the output's connection is closed", file=self.name)
        self._arm()
        try:
            if self.bound is not None:
                return fn()
            with self._ctrl_c():  # no bound: Ctrl-C is what ends a write to a peer that stopped reading
                return fn()
        except AvdnnError as exc:
            raise self._failure(exc, doing) from None
        finally:
            self._deadline = None

    def write(self, data: bytes) -> int:
        writer = self._writer
        return int(self._call(lambda: writer.write(data) if writer is not None else 0, "a write"))

    def flush(self) -> None:
        writer = self._writer
        self._call(lambda: writer.flush() if writer is not None else None, "a write")

    @property
    def closed(self) -> bool:
        return self._writer is None

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        self._writer = writer  # _call needs it; cleared whatever the close does
        try:
            self._call(writer.close, "the close")
        finally:
            self._writer = None
