"""``--state DIR``: the pipelines' specs kept on disk, so that they come back after a restart.

One JSON file per pipeline (``DIR/pipelines/ID.json``: its id, its place in the order of creation
and the spec as asked, with the sources it has now), written atomically: a temporary file in
the same directory, flushed and synced, then renamed over the old one, and the directory synced,
so a crash leaves the old spec or the new one, never half of one. The specs hold the sources'
URLs as given, credentials included (they are needed to connect again): the directory is made
``0700`` and the files ``0600``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from avdnn.errors import from_errno

__all__ = ["StateDir"]

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

    def save(self, pid: str, order: int, spec: dict[str, Any]) -> None:
        """Write ``spec`` for pipeline ``pid`` atomically (replacing what was there)."""
        data = json.dumps({"id": pid, "order": order, "spec": spec}, indent=1).encode()
        fd, tmp = tempfile.mkstemp(prefix=f".{pid}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.dir / f"{pid}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._sync_dir()

    def remove(self, pid: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.dir / f"{pid}.json").unlink()
        self._sync_dir()

    def load(self) -> list[tuple[str, int, dict[str, Any]]]:
        """(id, order, spec) of every pipeline kept, in the order they were created."""
        out = []
        for path in sorted(self.dir.glob("*.json")):
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                out.append((str(entry["id"]), int(entry["order"]), dict(entry["spec"])))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.error("avdnn serve: %s: not a pipeline spec (%s); left as it is", path, exc)
        return sorted(out, key=lambda e: e[1])

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
