"""The actor pool of a corpus run: one file in flight per actor, a dead worker's file retried once it is back.

Ray's own task retries are off (``max_task_retries=0``), so the driver counts attempts itself.
A worker that dies mid-file is restarted by Ray (``max_restarts=-1``), and Ray fails at once,
without running it, any call made to an actor while it restarts ("The actor is restarting").
So after a death the driver sends that actor nothing but a ping that Ray may retry until the
new process answers; only then does the file go back in the queue (its old attempt is over
for sure, so the retry may clear what it left) and the actor back in the pool. A file is
charged one attempt per death of a worker running it, never for a call that could not start.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from avdnn.batch import files
from avdnn.batch.plan import FileTask
from avdnn.batch.progress import CorpusProgress
from avdnn.batch.report import BatchReport, FileReport, Status
from avdnn.batch.worker import ChainWorker, JobFailure
from avdnn.errors import AVERROR_BUG, AVERROR_EXTERNAL, AvdnnError, ExternalError, InvalidArgumentError, from_code

log = logging.getLogger("avdnn.batch")

#: How long the driver waits for the workers' ChainWorker.close before it kills them.
CLOSE_TIMEOUT = 30.0


@dataclass
class Corpus:
    """The run's plan and the reports so far (what a report written at any point shows)."""

    tasks: list[FileTask]
    reports: dict[int, FileReport]
    job: str
    chain: str
    output: str
    workers: int
    address: str | None
    started: float

    def report(self) -> BatchReport:
        done = [self.reports[t.index] for t in self.tasks if t.index in self.reports]
        return BatchReport(
            done,
            job=self.job,
            chain=self.chain,
            output=self.output,
            workers=self.workers,
            address=self.address,
            seconds=time.monotonic() - self.started,
        )

    def end(self, exc: BaseException) -> None:
        """The run ends early: a job-level error fails every file not done with it; anything else
        (Ctrl-C, a bug of the driver) leaves them ``unfinished`` (``--resume`` runs them)."""
        status: Status = "failed" if isinstance(exc, AvdnnError) else "unfinished"
        if isinstance(exc, AvdnnError):
            error: dict[str, Any] = {"message": exc.oneline(), "code": exc.code}
        else:
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
            error = {"message": f"the run stopped before this file finished ({why})"}
        for t in self.tasks:
            self.reports.setdefault(t.index, FileReport(t.input, t.output, status, error=error))


@dataclass(frozen=True)
class _Call:
    """What a pending Ray call is: a file's attempt, or (``died`` set) the ping after its worker died."""

    slot: int
    task: FileTask
    attempt: int
    died: str | None = None


class Driver:
    """Feeds the files to the actors, one in flight per actor, until every file has a report."""

    def __init__(
        self, corpus: Corpus, run_options: dict[str, Any], retries: int, bar: CorpusProgress, *, resume: bool
    ) -> None:
        self.corpus = corpus
        self.run_options = run_options
        self.retries = retries
        self.bar = bar
        self.resume = resume

    def run(self, todo: list[FileTask], workers: int, num_cpus: float, num_gpus: float) -> None:
        import ray

        remote = ray.remote(ChainWorker).options(
            num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=-1, max_task_retries=0, max_concurrency=1
        )
        total = ray.cluster_resources()  # type: ignore[no-untyped-call]
        count = min(fitting_workers(total, workers, num_cpus, num_gpus), len(todo))
        actors: list[Any] = [remote.remote(self.corpus.job, self.run_options) for _ in range(count)]
        pending: deque[tuple[FileTask, int]] = deque((t, 1) for t in todo)
        running: dict[Any, _Call] = {}
        idle = list(range(len(actors)))
        try:
            while pending or running:
                while pending and idle:
                    slot = idle.pop()
                    task, attempt = pending.popleft()
                    running[actors[slot].run.remote(task, attempt, self.resume)] = _Call(slot, task, attempt)
                if not running:
                    raise ExternalError("every batch worker is gone for good; the files left were not run")
                [ref], _ = ray.wait(list(running), num_returns=1)
                call = running.pop(ref)
                if call.died is not None:
                    self._restarted(ref, call, pending, idle)
                    continue
                rep = self._result(ref, call)
                if isinstance(rep, str):  # the worker died: wait until Ray has it back
                    ping = actors[call.slot].ping.options(max_task_retries=-1).remote()
                    running[ping] = replace(call, died=rep)
                    continue
                idle.append(call.slot)
                self._done(call.task, rep)
        finally:
            self._stop(ray, actors, running)

    def _done(self, task: FileTask, rep: FileReport) -> None:
        self.corpus.reports[task.index] = rep
        self.bar.done(rep)

    def _result(self, ref: Any, call: _Call) -> FileReport | str:
        """The file's report, or the cause when its worker process died."""
        import ray
        from ray.exceptions import RayActorError, RayError, WorkerCrashedError

        try:
            rep: FileReport | JobFailure = ray.get(ref)
        except (RayActorError, WorkerCrashedError) as exc:
            self._refuse_init_failure(exc)
            return last_line(str(exc))
        except RayError as exc:  # the call raised past the worker's own catch-all, or its result was lost
            return FileReport(
                call.task.input,
                call.task.output,
                "failed",
                attempts=call.attempt,
                error={
                    "message": f"'{call.task.input}': {last_line(str(exc))}",
                    "code": AVERROR_BUG,
                    "traceback": str(exc),
                },
            )
        if isinstance(rep, JobFailure):
            raise from_code(rep.code, rep.message)
        return rep

    def _restarted(self, ref: Any, call: _Call, pending: deque[tuple[FileTask, int]], idle: list[int]) -> None:
        """The ping after a death answered: the actor is back (or gone for good); the file goes on."""
        import ray
        from ray.exceptions import RayActorError

        try:
            ray.get(ref)
        except RayActorError as exc:
            self._refuse_init_failure(exc)
            log.warning("a batch worker is gone for good: %s", last_line(str(exc)))
        else:
            idle.append(call.slot)
        task, attempt = call.task, call.attempt
        if attempt <= self.retries:
            log.warning("%s: worker process died (attempt %d); running it again", task.input, attempt)
            pending.append((task, attempt + 1))
            return
        for path in task.files:  # what the last dead attempt left
            files.clear_attempts(path)
        self._done(
            task,
            FileReport(
                task.input,
                task.output,
                "failed",
                attempts=attempt,
                error={
                    "message": f"'{task.input}': the worker process died {attempt} time(s) running this file "
                    f"({call.died})",
                    "code": AVERROR_EXTERNAL,
                },
            ),
        )

    @staticmethod
    def _refuse_init_failure(exc: BaseException) -> None:
        if getattr(exc, "actor_init_failed", False):  # __init__ raised (an older Ray: no flag)
            raise ExternalError(
                f"a batch worker could not start ({last_line(str(exc))}); is this avdnn installed on every node?"
            ) from exc

    def _stop(self, ray: Any, actors: list[Any], running: dict[Any, _Call]) -> None:
        """Close every worker that is not in the middle of a file (bounded wait), then kill them all.

        A worker still running a file (the run was interrupted) is killed without its close: its
        close would wait behind the file. What that attempt left is cleared by the next one.
        """
        busy = {c.slot for c in running.values() if c.died is None}
        free = [a for i, a in enumerate(actors) if i not in busy]
        if free:
            closing = [a.close.remote() for a in free]
            ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT)
        for actor in actors:
            ray.kill(actor, no_restart=True)
        ips = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}
        for rep in self.corpus.reports.values():
            rep.node_ip = ips.get(rep.node or "", rep.node_ip)


def fitting_workers(total: dict[str, float], workers: int, num_cpus: float, num_gpus: float) -> int:
    """How many of ``workers`` the cluster's resources hold at once (an actor that never fits would
    leave its files waiting forever); at least one, or an error naming the resource."""
    fit = workers
    for key, per in (("CPU", num_cpus), ("GPU", num_gpus)):
        if per > 0:
            have = total.get(key, 0.0)
            n = math.floor(have / per + 1e-9)
            if n < 1:
                raise InvalidArgumentError(
                    f"no worker fits: each needs {per:g} {key}, the cluster has {have:g}", option=f"num_{key.lower()}s"
                )
            fit = min(fit, n)
    if fit < workers:
        log.warning("only %d of the %d workers fit the cluster's CPUs/GPUs; running %d", fit, workers, fit)
    return fit


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown cause"
