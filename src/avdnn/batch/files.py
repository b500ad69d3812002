"""Where a corpus run writes: one partial folder per output, atomic small files, ffmpeg's overwrite rule.

Every file a worker writes for an input (the output and each file its filters write, such as
a JSONL) is written as ``<dir>/.avdnn-partial/<name>/<pid>.<random>/<name>`` and renamed to
``<dir>/<name>`` when the input is complete. The folder is named by the whole output name,
so the leftovers of ``clip.mkv`` are exactly that folder's contents: no pattern can reach
``clip.v2.mkv``'s file while another worker writes it. Inside, each attempt has a folder of
its own (``mkdtemp``), and the file keeps the final name, so the muxer guessed from it is the
final one's. The ledger's entries and the report are small files written with ``mkstemp``
and renamed: never half a file, never two writers on one temporary name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterable

from avdnn.errors import from_errno

PARTIAL_DIR = ".avdnn-partial"

_umask = os.umask(0o022)
os.umask(_umask)  # read once at import: mkstemp's files are 0600, renamed files get the umask's mode


def attempts_dir(path: str) -> str:
    """The folder holding every attempt at ``path`` (and nothing else)."""
    head, name = os.path.split(path)
    return os.path.join(head, PARTIAL_DIR, name)


def new_attempt(path: str) -> str:
    """A fresh temporary path for ``path``, in its final directory's partial folder (created)."""
    for _ in range(5):  # another worker may remove the empty .avdnn-partial between the two calls
        try:
            os.makedirs(attempts_dir(path), exist_ok=True)
            folder = tempfile.mkdtemp(prefix=f"{os.getpid()}.", dir=attempts_dir(path))
        except FileNotFoundError:
            continue
        return os.path.join(folder, os.path.basename(path))
    raise from_errno(errno.ENOENT, f"could not create a temporary folder for '{path}'", file=path)


def clear_attempts(path: str) -> None:
    """Remove what earlier attempts at ``path`` left (a worker killed mid-file)."""
    shutil.rmtree(attempts_dir(path), ignore_errors=True)
    _rmdir_empty(os.path.dirname(attempts_dir(path)))


def end_attempt(tmp: str) -> None:
    """Remove an attempt's temporary file (if still there) and its folders once empty."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)
    folder = os.path.dirname(tmp)
    for _ in range(3):  # the attempt's folder, the output's, .avdnn-partial
        _rmdir_empty(folder)
        folder = os.path.dirname(folder)


def leftovers(folder: str) -> list[str]:
    """Every temporary file under ``folder``'s partial folder (what a test expects to be empty)."""
    root = os.path.join(folder, PARTIAL_DIR)
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files)


def atomic_write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` under a ``mkstemp`` name in its folder, then rename it into place."""
    head, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=head)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), 0o666 & ~_umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def refuse_existing(paths: Iterable[str], overwrite: bool | None, *, ours: Iterable[str] = ()) -> None:
    """ffmpeg's rule: an existing output is an error unless ``overwrite`` (``-y``).

    ``ours``: files that an unfinished attempt of this same job renamed into place (the
    ledger's entry names them), which ``--resume`` may replace.
    """
    if overwrite:
        return
    mine = set(ours)
    for path in paths:
        if path not in mine and os.path.lexists(path):
            how = "Exiting." if overwrite is False else "Use -y to overwrite."
            raise from_errno(errno.EEXIST, f"File '{path}' already exists. {how}", file=path)


def _rmdir_empty(folder: str) -> None:
    with contextlib.suppress(OSError):  # not empty (another worker's), or already gone
        os.rmdir(folder)
