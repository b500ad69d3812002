"""The Ray actor: one per worker process; runs whole files through the job's chain with avdnn.run.

The actor is created once per worker and keeps its models loaded for its whole life
(:func:`avdnn.api.keep_models`), so the thousandth file costs no model load. It reads its
input and writes its output itself, by path: no frame ever travels through Ray's object
store, only the small :class:`FileTask` and :class:`FileReport`. The output, and every file
the chain's filters write (a templated JSONL), is written in a partial folder of its final
directory (:mod:`.files`) and renamed when the input is complete; a file that fails (bad data,
an error of the chain, a bug: any exception) leaves none of them and comes back as a failed
report with its cause and AVERROR code (a bug's with its traceback); it is never retried. Only
a dead worker process is retried, by the driver, which sees Ray's actor-died error instead of
a report.

This module does not import Ray at module level: the runner wraps the class with ``ray.remote``.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Any

from avdnn import api
from avdnn.batch import files, ledger
from avdnn.batch.plan import FileTask
from avdnn.batch.report import FileReport
from avdnn.errors import AVERROR_BUG, AvdnnError, FilterNotFoundError, OptionNotFoundError, from_av_error

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

    def run(self, task: FileTask, attempt: int, resume: bool = False) -> FileReport | JobFailure:
        """Run one file; its own failures come back in the report, never as an exception."""
        start = time.monotonic()
        loads = self.keeper.loads
        rep = FileReport(
            task.input, task.output, "failed", node=self.node, host=self.host, pid=self.pid, attempts=attempt
        )
        try:
            stats = self._run(task, replace_own=resume or attempt > 1)
        except AvdnnError as exc:
            if isinstance(exc, JOB_ERRORS):
                return JobFailure(exc.oneline(), exc.code)
            rep.error = {"message": exc.oneline(), "code": exc.code}
            if exc.stats is not None:
                _fill(rep, exc.stats)
        except Exception as exc:  # noqa: BLE001 - a bug in one file: that file fails alone, with its traceback
            rep.error = {
                "message": f"'{task.input}': internal error: {type(exc).__name__}: {exc} (this is a bug)",
                "code": AVERROR_BUG,
                "traceback": traceback.format_exc(),
            }
        else:
            rep.status = "ok"
            _fill(rep, stats)
        rep.seconds = round(time.monotonic() - start, 4)
        rep.models_loaded = self.keeper.loads - loads
        return rep

    def _run(self, task: FileTask, *, replace_own: bool) -> Any:
        """``replace_own``: the files this job's ledger entry for the input names may be replaced
        (``--resume``, or a retry: an attempt that died between its renames left them)."""
        entry = ledger.read(task.input, self.job, task.output, task.sidecars) if replace_own else None
        files.refuse_existing(task.files, self.run_options.get("overwrite"), ours=entry.files if entry else ())
        tmp: dict[str, str] = {}
        try:
            for path in task.files:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                files.clear_attempts(path)  # what a killed attempt at this very path left
                tmp[path] = files.new_attempt(path)
        except OSError as exc:
            for t in tmp.values():
                files.end_attempt(t)
            raise from_av_error(exc, file=task.output) from exc
        try:
            chain = api.fill_fields(task.chain, {}, place=tmp.__getitem__).chain if task.sidecars else task.chain
            stats = api.run(task.input, chain, output=tmp[task.output], **self.run_options)
            has_file = os.path.exists(tmp[task.output])  # -f null writes nothing
            ledger.record(ledger.Entry.of(task.input, self.job, task.output, has_file, task.sidecars))
            for path in (*task.sidecars, task.output):  # the output last: its name says "complete"
                if os.path.exists(tmp[path]):
                    os.replace(tmp[path], path)
        except OSError as exc:
            if isinstance(exc, AvdnnError):
                raise
            raise from_av_error(exc, file=task.output) from exc
        finally:  # a failed file leaves nothing, not even the frames before its error
            for t in tmp.values():
                files.end_attempt(t)
        return stats

    def close(self) -> None:
        """Free the kept models (the driver calls it, and waits for it, before killing the actor)."""
        self.keeper.close()


def _fill(rep: FileReport, stats: Any) -> None:
    rep.frames_read = stats.frames_read
    rep.frames_written = stats.frames_written
    rep.frames_failed = dict(stats.failures)  # by cause; stats.frames_failed is their count
    rep.frames_dropped = dict(stats.frames_dropped)
