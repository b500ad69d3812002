"""The ledger beside the outputs: which inputs are finished, for which job, so ``--resume`` skips them.

One small JSON file per finished output, ``<output dir>/.avdnn-ledger/<output name>.json``,
holding the input's path, size and mtime, the job's hash and the output's path. One file per
entry (written under a temporary name and renamed) instead of one appended log: workers on
several machines may finish files in the same directory at once, and a rename is atomic on
every shared filesystem where concurrent appends are not. The entry is written just before
the output and the files its filters write (``sidecars``: a templated JSONL) are renamed into
place, so a finished output always has its entry; an entry whose files are not all there (the
worker died between the renames) is not finished, and the files it names are the job's own
(``--resume`` may replace them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from avdnn.batch.files import atomic_write

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
    #: the files the chain's filters write for this input (a templated JSONL), absolute paths
    sidecars: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        input: str,  # noqa: A002 - the report's key
        job: str,
        output: str,
        has_file: bool = True,
        sidecars: Sequence[str] = (),
    ) -> Entry:
        st = os.stat(input)
        return cls(input, st.st_size, st.st_mtime_ns, job, output, has_file, tuple(sidecars))

    @property
    def files(self) -> list[str]:
        """The files this input leaves, all of which must be there for it to be finished."""
        return [*([self.output] if self.has_file else []), *self.sidecars]


def entry_path(output: str) -> str:
    head, name = os.path.split(output)
    return os.path.join(head, LEDGER_DIR, name + ".json")


def record(entry: Entry) -> None:
    """Write ``entry`` atomically (a ``mkstemp`` name in the ledger folder, then rename)."""
    path = entry_path(entry.output)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, json.dumps(asdict(entry)))


def read(input: str, job: str, output: str, sidecars: Sequence[str] = ()) -> Entry | None:  # noqa: A002
    """The entry of ``input`` for this job (same size, mtime, output and sidecars), or None."""
    try:
        with open(entry_path(output), encoding="utf-8") as fh:
            data = json.load(fh)
        st = os.stat(input)
    except (OSError, ValueError):
        return None  # no entry, an unreadable one, or the input is gone
    try:
        entry = Entry(**{**data, "sidecars": tuple(data.get("sidecars", ()))})
    except TypeError:
        return None  # an entry of another layout
    same = (entry.input, entry.size, entry.mtime_ns, entry.job, entry.output, entry.sidecars) == (
        input,
        st.st_size,
        st.st_mtime_ns,
        job,
        output,
        tuple(sidecars),
    )
    return entry if same else None


def finished(input: str, job: str, output: str, sidecars: Sequence[str] = ()) -> bool:  # noqa: A002
    """Whether ``input`` is done for this job: its entry matches and every file it left is there."""
    entry = read(input, job, output, sidecars)
    return entry is not None and all(os.path.exists(p) for p in entry.files)
