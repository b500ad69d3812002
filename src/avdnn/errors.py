"""One exception root carrying FFmpeg error codes.

Every error avdnn raises is an :class:`AvdnnError`. It carries ``code``, the negative
AVERROR value FFmpeg would return in the same situation, and context: the ``filter``
instance, the ``option``, the ``file`` (input, output or model path) and the frame ``pts``.
Leaves also subclass the natural built-in so that ``except ValueError`` and friends work::

    AvdnnError (Exception)
    ├── InvalidArgumentError (ValueError)          AVERROR(EINVAL)
    │   ├── OptionNotFoundError                    AVERROR_OPTION_NOT_FOUND
    │   ├── FilterNotFoundError                    AVERROR_FILTER_NOT_FOUND
    │   └── OutOfRangeError                        AVERROR(ERANGE)
    ├── NotFoundError (FileNotFoundError)          AVERROR(ENOENT)
    ├── PermissionDeniedError (PermissionError)    AVERROR(EPERM) / AVERROR(EACCES)
    ├── IOFailureError (OSError)                   AVERROR(EIO) and other errnos
    ├── OutOfMemoryError (MemoryError)             AVERROR(ENOMEM)
    ├── NotSupportedError (NotImplementedError)    AVERROR(ENOSYS), AVERROR_PATCHWELCOME
    ├── InvalidDataError (ValueError)              AVERROR_INVALIDDATA
    ├── ExternalError (RuntimeError)               AVERROR_EXTERNAL (a runtime's own failure)
    ├── ExitRequestedError                         AVERROR_EXIT: the run is stopping, stop waiting
    └── BackendUnavailableError (ImportError)      AVERROR(ENOSYS): an extra is not installed

Foreign exceptions (PyAV, onnxruntime, ...) are translated where they enter avdnn with
``raise ... from exc``; :func:`from_av_error` and :func:`from_errno` do the mapping.
"""

from __future__ import annotations

import contextlib
import difflib
import errno as _errno
import os
from collections.abc import Iterable
from typing import Any

from avdnn._util.redact import redact_text


def fferrtag(a: int | str, b: int | str, c: int | str, d: int | str) -> int:
    """FFmpeg's FFERRTAG: a negative four-character code."""
    vals = [ord(x) if isinstance(x, str) else x for x in (a, b, c, d)]
    return -(vals[0] | (vals[1] << 8) | (vals[2] << 16) | (vals[3] << 24))


def AVERROR(e: int) -> int:
    """FFmpeg's AVERROR(): a POSIX errno as a negative code."""
    return -e


AVERROR_EOF = fferrtag("E", "O", "F", " ")
AVERROR_EXTERNAL = fferrtag("E", "X", "T", " ")
AVERROR_EXIT = fferrtag("E", "X", "I", "T")
AVERROR_INVALIDDATA = fferrtag("I", "N", "D", "A")
AVERROR_BUG = fferrtag("B", "U", "G", "!")
AVERROR_UNKNOWN = fferrtag("U", "N", "K", "N")
AVERROR_PATCHWELCOME = fferrtag("P", "A", "W", "E")
AVERROR_OPTION_NOT_FOUND = fferrtag(0xF8, "O", "P", "T")
AVERROR_FILTER_NOT_FOUND = fferrtag(0xF8, "F", "I", "L")
AVERROR_ENCODER_NOT_FOUND = fferrtag(0xF8, "E", "N", "C")
AVERROR_DECODER_NOT_FOUND = fferrtag(0xF8, "D", "E", "C")
AVERROR_MUXER_NOT_FOUND = fferrtag(0xF8, "M", "U", "X")
AVERROR_DEMUXER_NOT_FOUND = fferrtag(0xF8, "D", "E", "M")
DNN_GENERIC_ERROR = fferrtag("D", "N", "N", "!")
#: fftools' FFMPEG_ERROR_RATE_EXCEEDED (-max_error_rate); ffmpeg's main() exits with 69 for it.
FFMPEG_ERROR_RATE_EXCEEDED = fferrtag("E", "R", "E", "D")

_TAG_TEXT = {
    AVERROR_EOF: "End of file",
    AVERROR_EXTERNAL: "Generic error in an external library",
    AVERROR_EXIT: "Immediate exit requested",
    AVERROR_INVALIDDATA: "Invalid data found when processing input",
    AVERROR_BUG: "Internal bug, should not have happened",
    AVERROR_UNKNOWN: "Unknown error occurred",
    AVERROR_PATCHWELCOME: "Not yet implemented in FFmpeg, patches welcome",
    AVERROR_OPTION_NOT_FOUND: "Option not found",
    AVERROR_FILTER_NOT_FOUND: "Filter not found",
    AVERROR_ENCODER_NOT_FOUND: "Encoder not found",
    AVERROR_DECODER_NOT_FOUND: "Decoder not found",
    AVERROR_MUXER_NOT_FOUND: "Muxer not found",
    AVERROR_DEMUXER_NOT_FOUND: "Demuxer not found",
    DNN_GENERIC_ERROR: "Generic DNN error",
    FFMPEG_ERROR_RATE_EXCEEDED: "Decode error rate exceeded",
}


def av_err2str(code: int) -> str:
    """The text FFmpeg's av_err2str() gives for ``code``."""
    if code in _TAG_TEXT:
        return _TAG_TEXT[code]
    if code < 0 and -code < 4096:
        return os.strerror(-code)
    return f"Error number {code} occurred"


class AvdnnError(Exception):
    """Root of every avdnn error: an FFmpeg error code plus where it happened."""

    default_code: int = AVERROR_UNKNOWN

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        filter: str | None = None,  # noqa: A002 - FFmpeg's noun
        option: str | None = None,
        file: str | None = None,
        pts: int | None = None,
    ) -> None:
        message = redact_text(message)  # a URL's credentials never reach a message (see _util.redact)
        super().__init__(message)
        self._message = message
        self.code = self.default_code if code is None else code
        self.filter = filter
        self.option = option
        self._file = redact_text(file) if file is not None else None
        self.pts = pts
        #: The run's frame accounting (RunStats) when the error ended a run.
        self.stats: Any = None

    @property
    def message(self) -> str:
        """The cause, without context. Set it (``err.message += " (after 3 attempts)"``) and
        ``str()``, ``repr()``, ``args`` and :meth:`oneline` all say the new text, redacted."""
        return self._message

    @message.setter
    def message(self, text: str) -> None:
        self._message = redact_text(text)
        self.args = (self._message, *self.args[1:])

    @property
    def file(self) -> str | None:
        """The input, output or model the error is about, as shown (credentials redacted)."""
        return self._file

    @file.setter
    def file(self, name: str | None) -> None:
        self._file = redact_text(name) if name is not None else None

    def with_context(self, **context: Any) -> AvdnnError:
        """Fill context fields that are still unset; returns self for ``raise e.with_context()``."""
        for key, value in context.items():
            if getattr(self, key, None) is None:
                setattr(self, key, value)  # a file is redacted by its setter
        return self

    def oneline(self) -> str:
        """``where: why`` in one line, the way the CLI prints it."""
        parts = [p for p in (self.filter,) if p]
        msg = self.message
        if self.file and self.file not in msg:
            msg = f"'{self.file}': {msg}"
        if self.option and f"'{self.option}'" not in msg:  # quoted: 'b' must not match "Unable"
            msg = f"option '{self.option}': {msg}"
        if self.pts is not None:
            msg = f"{msg} (frame pts {self.pts})"
        return ": ".join([*parts, msg])

    def __str__(self) -> str:
        return self.oneline()


class InvalidArgumentError(AvdnnError, ValueError):
    """A bad filter string, option, value or call: AVERROR(EINVAL)."""

    default_code = AVERROR(_errno.EINVAL)


class OptionNotFoundError(InvalidArgumentError):
    """An option the filter does not have: AVERROR_OPTION_NOT_FOUND."""

    default_code = AVERROR_OPTION_NOT_FOUND


class FilterNotFoundError(InvalidArgumentError):
    """A filter name neither avdnn nor libavfilter knows: AVERROR_FILTER_NOT_FOUND."""

    default_code = AVERROR_FILTER_NOT_FOUND


class OutOfRangeError(InvalidArgumentError):
    """An option value outside its range: AVERROR(ERANGE), as av_opt_set returns."""

    default_code = AVERROR(_errno.ERANGE)


class NotFoundError(AvdnnError, FileNotFoundError):
    """A missing input, model or labels file: AVERROR(ENOENT)."""

    default_code = AVERROR(_errno.ENOENT)


class PermissionDeniedError(AvdnnError, PermissionError):
    """AVERROR(EPERM) or AVERROR(EACCES)."""

    default_code = AVERROR(_errno.EPERM)


class IOFailureError(AvdnnError, OSError):
    """AVERROR(EIO) and errno codes without a more natural leaf."""

    default_code = AVERROR(_errno.EIO)


class OutOfMemoryError(AvdnnError, MemoryError):
    """AVERROR(ENOMEM)."""

    default_code = AVERROR(_errno.ENOMEM)


class NotSupportedError(AvdnnError, NotImplementedError):
    """A combination FFmpeg (or avdnn) does not implement: AVERROR(ENOSYS)."""

    default_code = AVERROR(_errno.ENOSYS)


class InvalidDataError(AvdnnError, ValueError):
    """Corrupt input or a model output that cannot be interpreted: AVERROR_INVALIDDATA."""

    default_code = AVERROR_INVALIDDATA


class ExternalError(AvdnnError, RuntimeError):
    """A failure inside an external library (a DNN runtime): AVERROR_EXTERNAL."""

    default_code = AVERROR_EXTERNAL


class ExitRequestedError(AvdnnError):
    """The run is stopping (its frame limit was reached): a wait was cut short. AVERROR_EXIT.

    Not a failure: the pipeline ends normally when it caused it, and no frame counts as failed.
    """

    default_code = AVERROR_EXIT


class BackendUnavailableError(AvdnnError, ImportError):
    """An optional runtime is not installed; the message names the pip command."""

    default_code = AVERROR(_errno.ENOSYS)


_ERRNO_LEAF: dict[int, type[AvdnnError]] = {
    _errno.EINVAL: InvalidArgumentError,
    _errno.ERANGE: OutOfRangeError,
    _errno.ENOENT: NotFoundError,
    _errno.EPERM: PermissionDeniedError,
    _errno.EACCES: PermissionDeniedError,
    _errno.ENOMEM: OutOfMemoryError,
    _errno.ENOSYS: NotSupportedError,
}
_TAG_LEAF: dict[int, type[AvdnnError]] = {
    AVERROR_EXTERNAL: ExternalError,
    AVERROR_EXIT: ExitRequestedError,
    AVERROR_INVALIDDATA: InvalidDataError,
    AVERROR_OPTION_NOT_FOUND: OptionNotFoundError,
    AVERROR_FILTER_NOT_FOUND: FilterNotFoundError,
    AVERROR_PATCHWELCOME: NotSupportedError,
    AVERROR_ENCODER_NOT_FOUND: NotFoundError,
    AVERROR_DECODER_NOT_FOUND: NotFoundError,
    AVERROR_MUXER_NOT_FOUND: NotFoundError,
    AVERROR_DEMUXER_NOT_FOUND: NotFoundError,
}


def error_class(code: int) -> type[AvdnnError]:
    """The leaf class for an AVERROR code."""
    if code in _TAG_LEAF:
        return _TAG_LEAF[code]
    if code < 0 and -code in _ERRNO_LEAF:
        return _ERRNO_LEAF[-code]
    if code < 0 and -code < 4096:
        return IOFailureError
    return AvdnnError


def from_code(code: int, message: str | None = None, **context: Any) -> AvdnnError:
    """An error of the right leaf for ``code``; the message defaults to av_err2str."""
    return error_class(code)(message or av_err2str(code), code=code, **context)


def from_errno(err: int, message: str | None = None, **context: Any) -> AvdnnError:
    """A positive errno (from a thread start, an OS call) as AVERROR(err)."""
    return from_code(AVERROR(err), message or os.strerror(err), **context)


def from_av_error(exc: BaseException, **context: Any) -> AvdnnError:
    """Translate a PyAV ``av.error.FFmpegError`` (or an OSError) into avdnn's tree."""
    if isinstance(exc, AvdnnError):  # ours already (our leaves are OSErrors too): keep its code
        return exc
    _scrub(exc)  # it stays chained (__cause__): a traceback must not show the URL's credentials either
    err = getattr(exc, "errno", None)
    text = getattr(exc, "strerror", None) or str(exc)
    filename = getattr(exc, "filename", None)
    if filename and "file" not in context:
        context["file"] = str(filename)
    if isinstance(err, int) and err != 0:
        code = err if err < 0 else AVERROR(err)
        return from_code(code, str(text), **context)
    return ExternalError(str(text), **context)


def _scrub(exc: BaseException) -> None:
    """The foreign error's URL (``filename``, its text and args) with credentials redacted, in place."""
    with contextlib.suppress(AttributeError, TypeError):  # a read-only attribute: leave it
        if isinstance(getattr(exc, "filename", None), str):
            exc.filename = redact_text(exc.filename)  # type: ignore[attr-defined]
    exc.args = _redacted(exc.args)
    log = getattr(exc, "log", None)  # PyAV keeps libav's last error line, URL included, for its str()
    if isinstance(log, tuple):
        with contextlib.suppress(AttributeError, TypeError):
            exc.log = _redacted(log)  # type: ignore[attr-defined]


def _redacted(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(redact_text(v) if isinstance(v, str) else _redacted(v) if isinstance(v, tuple) else v for v in values)


def closest(name: str, candidates: Iterable[str]) -> list[str]:
    """Up to three candidates closest to ``name``, for "did you mean" messages.

    Without repeats (a name may be both avdnn's and libavfilter's) and never ``name`` itself.
    """
    unique = [c for c in dict.fromkeys(candidates) if c != name]
    return difflib.get_close_matches(name, unique, n=3, cutoff=0.5)


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'a', 'b'?)`` or an empty string."""
    near = closest(name, candidates)
    return f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""
