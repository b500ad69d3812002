"""The service's own refusals, each with its HTTP status; any other avdnn error of a request is a 400.

They are :class:`~avdnn.AvdnnError` s (one exception root), so the one-line message and the
FFmpeg-style code reach the client as every other error does::

    AvdnnError
    └── ServeError                 status
        ├── UnknownError           404  no such pipeline or source
        ├── ConflictError          409  the name is taken, the pipeline has ended ...
        ├── LimitError             409  max_pipelines / max_sources reached
        └── UnavailableError       503  the service is stopping
"""

from __future__ import annotations

import errno

from avdnn.errors import AVERROR, AvdnnError

__all__ = ["ConflictError", "LimitError", "ServeError", "UnavailableError", "UnknownError"]


class ServeError(AvdnnError):
    """A request the service refuses; ``status`` is its HTTP status."""

    status = 400


class UnknownError(ServeError):
    status = 404
    default_code = AVERROR(errno.ENOENT)


class ConflictError(ServeError):
    status = 409
    default_code = AVERROR(errno.EEXIST)


class LimitError(ServeError):
    status = 409
    default_code = AVERROR(errno.ENOSPC)


class UnavailableError(ServeError):
    status = 503
    default_code = AVERROR(errno.EAGAIN)
