"""The ledger beside the outputs: which inputs are finished, for which job, so ``--resume`` skips them.

One small JSON file per finished output, ``<output dir>/.avdnn-ledger/<output name>.json``,
holding the input's path, size and mtime, the job's hash and the output's path. One file per
entry (written under a temporary name and renamed) instead of one appended log: workers on
several machines may finish files in the same directory at once, and a rename is atomic on
every shared filesystem where concurrent appends are not. The entry is written just before
the output is renamed into place, so a finished output always has its entry; an entry whose
output is missing (the worker died between the two renames) is not finished.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

LEDGER_DIR = ".avdnn-ledger"


@dataclass(frozen=True)
class Entry:
    """One finished input."""

    input: str
    size: int
    mtime_ns: int
    job: str
    output: str
    #: False for outputs that leave no file (``-f null``): nothing to find on resume.
    has_file: bool = True

    @classmethod
    def of(cls, input: str, job: str, output: str, has_file: bool = True) -> Entry:  # noqa: A002 - the report's key
        st = os.stat(input)
        return cls(input, st.st_size, st.st_mtime_ns, job, output, has_file)


def entry_path(output: str) -> str:
    head, name = os.path.split(output)
    return os.path.join(head, LEDGER_DIR, name + ".json")


def record(entry: Entry) -> None:
    """Write ``entry`` atomically (temporary name in the ledger folder, then rename)."""
    path = entry_path(entry.output)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(asdict(entry), fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def finished(input: str, job: str, output: str) -> bool:  # noqa: A002 - the report's key
    """Whether ``input`` is done for this job: same size, mtime and job hash, output still there."""
    try:
        with open(entry_path(output), encoding="utf-8") as fh:
            data = json.load(fh)
        st = os.stat(input)
    except (OSError, ValueError):
        return False  # no entry, an unreadable one, or the input is gone: not done
    try:
        entry = Entry(**data)
    except TypeError:
        return False  # an entry of another layout
    same = (entry.input, entry.size, entry.mtime_ns, entry.job, entry.output) == (
        input,
        st.st_size,
        st.st_mtime_ns,
        job,
        output,
    )
    return same and (not entry.has_file or os.path.exists(output))
