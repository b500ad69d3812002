"""The Ray actor: one per worker process; runs whole files through the job's chain with avdnn.run.

The actor is created once per worker and keeps its models loaded for its whole life
(:func:`avdnn.api.keep_models`), so the thousandth file costs no model load. It reads its
input and writes its output itself, by path: no frame ever travels through Ray's object
store, only the small :class:`FileTask` and :class:`FileReport`. The output is written under
a hidden temporary name in its final directory and renamed when complete; a file that fails
(bad data, an error of the chain) leaves no output and comes back as a failed report with its
cause and AVERROR code; it is never retried. Only a dead worker process is retried, by the
driver, which sees Ray's actor-died error instead of a report.

This module does not import Ray at module level: the runner wraps the class with ``ray.remote``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from avdnn.api import single as api
from avdnn.batch import ledger
from avdnn.batch.plan import FileTask, partial_name, stale_partials
from avdnn.batch.report import FileReport
from avdnn.errors import AvdnnError, FilterNotFoundError, OptionNotFoundError, from_av_error, from_errno

#: Errors of the job itself (the chain names a filter or option that does not exist): every file
#: would fail the same way, so the driver stops the run at the first one.
JOB_ERRORS = (OptionNotFoundError, FilterNotFoundError)


@dataclass(frozen=True)
class JobFailure:
    """What ``run`` returns instead of a report when the job itself is wrong (the driver stops the run)."""

    message: str
    code: int


class ChainWorker:
    """Runs files of one job, one at a time, in one worker process."""

    def __init__(self, job: str, run_options: dict[str, Any]) -> None:
        import ray

        self.job = job
        self.run_options = run_options
        self.keeper = api.keep_models()
        self.pid = os.getpid()
        self.node = ray.get_runtime_context().get_node_id()
        self.host = socket.gethostname()

    def ping(self) -> tuple[str, str, int]:
        """(node id, host, pid): answers once the actor is up."""
        return self.node, self.host, self.pid

    def run(self, task: FileTask, attempt: int) -> FileReport | JobFailure:
        """Run one file; its own failures come back in the report, never as an exception."""
        start = time.monotonic()
        loads = self.keeper.loads
        rep = FileReport(
            task.input, task.output, "failed", node=self.node, host=self.host, pid=self.pid, attempts=attempt
        )
        try:
            stats = self._run(task)
        except AvdnnError as exc:
            if isinstance(exc, JOB_ERRORS):
                return JobFailure(exc.oneline(), exc.code)
            rep.error = {"message": exc.oneline(), "code": exc.code}
            if exc.stats is not None:
                _fill(rep, exc.stats)
        else:
            rep.status = "ok"
            _fill(rep, stats)
        rep.seconds = round(time.monotonic() - start, 4)
        rep.models_loaded = self.keeper.loads - loads
        return rep

    def _run(self, task: FileTask) -> Any:
        out = task.output
        if os.path.exists(out) and not self.run_options.get("overwrite", True):
            how = "Exiting." if self.run_options.get("overwrite") is False else "Use -y to overwrite."
            raise from_errno(errno.EEXIST, f"File '{out}' already exists. {how}", file=out)
        tmp = partial_name(out, self.pid)
        try:
            os.makedirs(os.path.dirname(out), exist_ok=True)
            for stale in stale_partials(out):  # what a killed attempt left
                with contextlib.suppress(FileNotFoundError):
                    os.remove(stale)
        except OSError as exc:
            raise from_av_error(exc, file=out) from exc
        try:
            stats = api.run(task.input, task.chain, output=tmp, **self.run_options)
            has_file = os.path.exists(tmp)  # -f null writes nothing
            ledger.record(ledger.Entry.of(task.input, self.job, out, has_file))
            if has_file:
                os.replace(tmp, out)
        except OSError as exc:
            _remove(tmp)
            if isinstance(exc, AvdnnError):
                raise
            raise from_av_error(exc, file=out) from exc
        except BaseException:
            _remove(tmp)  # a failed file leaves no output, not even the frames before its error
            raise
        return stats

    def close(self) -> None:
        """Free the kept models (the driver calls it before killing the actor)."""
        self.keeper.close()


def _fill(rep: FileReport, stats: Any) -> None:
    rep.frames_read = stats.frames_read
    rep.frames_written = stats.frames_written
    rep.frames_failed = dict(stats.failures)  # by cause; stats.frames_failed is their count
    rep.frames_dropped = dict(stats.frames_dropped)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
