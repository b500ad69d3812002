"""The report of a corpus run: one record per input and the totals (``--report FILE`` writes it as JSON).

Schema (docs/batch.md)::

    {"version": 1, "job": "<sha256>", "chain": "...", "output": "out/{stem}.mkv", "workers": 2,
     "address": null, "seconds": 12.3,
     "totals": {"files": 8, "ok": 7, "failed": 1, "skipped": 0, "unfinished": 0, "frames_read": 840,
                "frames_written": 840, "frames_failed": 0, "retries": 0, "models_loaded": 2},
     "files": [{"input": "/data/a.mp4", "output": "/out/a.mkv", "status": "ok",
                "frames_read": 120, "frames_written": 120, "frames_failed": {},
                "frames_dropped": {}, "error": null, "seconds": 1.4, "node": "<ray node id>",
                "host": "gpu-07", "node_ip": "10.0.0.7", "pid": 4242, "attempts": 1, "models_loaded": 1}, ...]}

``status`` is ``ok``, ``failed``, ``skipped`` (finished by an earlier run of the same job,
``--resume``) or ``unfinished`` (the run was interrupted before this file finished: Ctrl-C).
``error`` is ``{"message": ..., "code": <AVERROR>}`` (a bug's also has ``"traceback"``; an
unfinished file's has only the message); ``frames_failed`` maps each cause to its count, as the
one-file run's accounting does. ``totals`` counts ``unfinished`` too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from avdnn.batch.files import atomic_write

Status = Literal["ok", "failed", "skipped", "unfinished"]
SCHEMA_VERSION = 1


@dataclass
class FileReport:
    """What happened to one input."""

    input: str
    output: str
    status: Status
    frames_read: int = 0
    frames_written: int = 0
    frames_failed: dict[str, int] = field(default_factory=dict)
    frames_dropped: dict[str, int] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    seconds: float = 0.0
    #: Ray's id of the node that ran it (the last attempt), that machine's host name and the
    #: node's address in the cluster (127.0.0.1 for the local Ray of a run without --address).
    node: str | None = None
    host: str | None = None
    node_ip: str | None = None
    #: The worker process (the actor's pid): the same pid on many files is one chain, built once.
    pid: int | None = None
    attempts: int = 0
    #: Model files this file's run loaded (0 when the worker's models were already loaded).
    models_loaded: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class BatchReport:
    """Every input's :class:`FileReport`, in input order, and the run's totals."""

    files: list[FileReport]
    job: str
    chain: str
    output: str
    workers: int
    address: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every input succeeded or was skipped (what exit status 0 means)."""
        return all(f.status in ("ok", "skipped") for f in self.files)

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def totals(self) -> dict[str, int]:
        count = {s: sum(f.status == s for f in self.files) for s in ("ok", "failed", "skipped", "unfinished")}
        return {
            "files": len(self.files),
            **count,
            "frames_read": sum(f.frames_read for f in self.files),
            "frames_written": sum(f.frames_written for f in self.files),
            "frames_failed": sum(sum(f.frames_failed.values()) for f in self.files),
            "retries": sum(max(f.attempts - 1, 0) for f in self.files),
            "models_loaded": sum(f.models_loaded for f in self.files),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": SCHEMA_VERSION,
            "job": self.job,
            "chain": self.chain,
            "output": self.output,
            "workers": self.workers,
            "address": self.address,
            "seconds": round(self.seconds, 3),
            "totals": self.totals,
            "files": [asdict(f) for f in self.files],
        }

    def write(self, path: str) -> None:
        """Write the JSON report (under a temporary name, then renamed: never half a report)."""
        atomic_write(path, json.dumps(self.as_dict(), indent=1) + "\n")

    def summary(self) -> str:
        """The lines the CLI prints at the end: the totals, then one line per failed input."""
        t = self.totals
        lines = [
            f"files: {t['files']}, ok {t['ok']}, failed {t['failed']}, skipped {t['skipped']}"
            + (f", unfinished {t['unfinished']}" if t["unfinished"] else "")
            + "; "
            f"frames read {t['frames_read']}, written {t['frames_written']}, failed {t['frames_failed']}; "
            f"retries {t['retries']}; {self.seconds:.1f}s"
        ]
        for f in self.failed:
            why = f.error["message"] if f.error else "failed"
            lines.append(f"  failed: {why}" if f.input in why else f"  failed: {f.input}: {why}")
        return "\n".join(lines)
