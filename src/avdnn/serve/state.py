"""``--state DIR``: the pipelines' specs kept on disk, so that they come back after a restart.

One JSON file per pipeline (``DIR/pipelines/ID.json``: its id, its place in the order of creation,
the spec as asked with the sources it has now, and where each source runs: its node and its
placement's epoch, so that a head restarted on a cluster adopts the runs still going), written
atomically: a temporary file in the same directory, flushed and synced, then renamed over the
old one, and the directory synced, so a crash leaves the old spec or the new one, never half of
one; a write that fails (a full disk, a read-only directory) raises avdnn's error and leaves the
old file as it was. The specs hold the sources' URLs as given, credentials included (they are
needed to connect again): the directory is made ``0700`` and the files ``0600``.

Reading them back never stops at a bad file: broken JSON, an id that is not a pipeline id or not the
file's name (``../../x``), a missing field each give an entry with its cause instead of a spec
(the service shows it as a ``failed`` pipeline).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avdnn.errors import AvdnnError, from_errno

__all__ = ["Entry", "StateDir"]

#: what a pipeline id is (specs.Id): a file name, a URL path segment and a metric label
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class Entry:
    """One file of the state: its pipeline's id, order and spec, or ``cause`` when it cannot be read."""

    path: Path
    id: str | None
    order: int
    spec: dict[str, Any] | None
    cause: str | None = None
    #: where each source ran: ``{source: (node, epoch)}``
    placements: dict[str, tuple[str, int]] = field(default_factory=dict)


log = logging.getLogger("avdnn.serve")


class StateDir:
    """The specs of the running pipelines in ``root``."""

    def __init__(self, root: Path) -> None:
        self.dir = Path(root) / "pipelines"
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.dir, 0o700)
        except OSError as exc:
            raise from_errno(exc.errno or errno.EIO, exc.strerror, file=str(self.dir)) from exc

    def save(
        self, pid: str, order: int, spec: dict[str, Any], placements: dict[str, dict[str, Any]] | None = None
    ) -> None:
        """Write ``spec`` and its sources' ``placements`` for pipeline ``pid`` atomically (replacing it)."""
        entry: dict[str, Any] = {"id": pid, "order": order, "spec": spec}
        if placements:
            entry["placements"] = placements
        data = json.dumps(entry, indent=1).encode()
        path = self.dir / f"{pid}.json"
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{pid}.", suffix=".tmp", dir=self.dir)
        except OSError as exc:
            raise from_errno(exc.errno or errno.EIO, exc.strerror, file=str(path)) from exc
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise from_errno(exc.errno or errno.EIO, exc.strerror, file=str(path)) from exc
            raise
        self._sync_dir()

    def remove(self, pid: str) -> None:
        self.remove_file(self.dir / f"{pid}.json")

    def remove_file(self, path: Path) -> None:
        """Remove one file of the state (a pipeline's, or a bad one); avdnn's error when it cannot."""
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise from_errno(exc.errno or errno.EIO, exc.strerror, file=str(path)) from exc
        self._sync_dir()

    def load(self) -> list[Entry]:
        """Every file kept, in the order their pipelines were created; the bad ones last, with their cause."""
        good: list[Entry] = []
        bad: list[Entry] = []
        for path in sorted(self.dir.glob("*.json")):
            try:
                good.append(_read(path))
            except (OSError, ValueError, KeyError, TypeError, AvdnnError) as exc:
                cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                log.error("avdnn serve: %s: not a pipeline spec (%s); left as it is", path, cause)
                bad.append(Entry(path, None, -1, None, f"its state file is not a pipeline spec: {cause}"))
        return sorted(good, key=lambda e: e.order) + bad

    def _sync_dir(self) -> None:
        try:
            fd = os.open(self.dir, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:  # some file systems cannot sync a directory: the rename is still atomic
            pass
        finally:
            os.close(fd)


def _read(path: Path) -> Entry:
    entry = json.loads(path.read_text(encoding="utf-8"))
    pid, order, spec = entry["id"], int(entry["order"]), dict(entry["spec"])
    if not isinstance(pid, str) or not _ID.match(pid):
        raise ValueError("its id is not a pipeline id (letters, digits, '_' and '-', 64 at most)")
    if path.name != f"{pid}.json":
        raise ValueError("its id is not its file's name")
    placements = {}
    for sid, where in dict(entry.get("placements") or {}).items():
        if not isinstance(where, dict):
            continue
        node, epoch = where.get("node"), where.get("epoch")
        if isinstance(sid, str) and isinstance(node, str) and isinstance(epoch, int) and epoch > 0:
            placements[sid] = (node, epoch)  # anything else: placed anew
    return Entry(path, pid, order, spec, placements=placements)
