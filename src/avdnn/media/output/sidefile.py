"""The files a filter writes beside the output (``metadata_jsonl=file=``, ``events=file=``): ffmpeg's overwrite rule.

ffmpeg refuses an existing output file unless ``-y`` (``assert_file_overwrite``); avdnn holds
the files its filters write to the same rule, so a run never truncates a JSONL it was not told
to replace: without ``-y`` (``overwrite=True``) an existing file is an error naming the filter,
``File 'x.jsonl' already exists. Use -y to overwrite.`` (with ``-n``: ``... Exiting.``), exit
status 239 (EEXIST) as for the output. A new file is created with ``O_EXCL``, so a file that
appears between the check and the open is refused too, never truncated.

The run says which rule holds: :class:`avdnn.run.builder.RunBuilder` builds its filters inside
:func:`overwrite_scope` with the request's ``overwrite``, and a filter that opens a file reads
:func:`current_overwrite` when it is built (outside any scope: None, ffmpeg's default).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from avdnn.errors import AvdnnError, IOFailureError, from_errno

__all__ = ["already_exists", "current_overwrite", "open_side_file", "overwrite_scope", "refuse_existing"]

_overwrite: contextvars.ContextVar[bool | None] = contextvars.ContextVar("avdnn_overwrite", default=None)


def current_overwrite() -> bool | None:
    """The overwrite rule of the run being built here: True (``-y``), False (``-n``), None (neither)."""
    return _overwrite.get()


@contextlib.contextmanager
def overwrite_scope(overwrite: bool | None) -> Iterator[None]:
    """Filters built inside the block replace existing files only when ``overwrite`` is True."""
    token = _overwrite.set(overwrite)
    try:
        yield
    finally:
        _overwrite.reset(token)


def already_exists(path: str, overwrite: bool | None) -> AvdnnError:
    """ffmpeg's refusal of an existing file, in the words the output's refusal uses."""
    how = "Exiting." if overwrite is False else "Use -y to overwrite."
    return IOFailureError(f"File '{path}' already exists. {how}", code=-errno.EEXIST, file=path)


def open_side_file(path: str, overwrite: bool | None, *, text: bool = False) -> IO[Any]:
    """``path`` opened for writing: truncated with ``overwrite``, else created (an existing one refused).

    Binary files come back unbuffered (``write`` reaches the OS at once and says how much it
    wrote, for a sink that counts what the OS took); text files buffered, UTF-8.
    """
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_TRUNC if overwrite else os.O_EXCL
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        raise already_exists(path, overwrite) from None
    except OSError as exc:
        raise from_errno(exc.errno or errno.EIO, f"could not open '{path}': {exc.strerror}", file=path) from exc
    if text:
        return os.fdopen(fd, "w", encoding="utf-8")
    return os.fdopen(fd, "wb", buffering=0)


def refuse_existing(paths: Iterable[str], overwrite: bool | None) -> None:
    """The refusal :func:`open_side_file` would give, before anything is created (the run checks
    its filters' files before it creates the output, so a refused run leaves no output behind)."""
    if overwrite:
        return
    for path in paths:
        if os.path.lexists(path):
            raise already_exists(path, overwrite)
