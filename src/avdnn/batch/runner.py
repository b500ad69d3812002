"""The driver of a corpus run: plan, skip what is done, start or join Ray, feed the actors, report.

Ray is used the way its batch-inference guides use it: a fixed pool of stateful actors (one
per worker, each holding its loaded chain), files as tasks, at most one file in flight per
actor (backpressure: the driver never queues the corpus into Ray), resources declared per
actor (``num_cpus``/``num_gpus``, fractions allowed), and the driver owning the report. Ray's
own task retries are off (``max_task_retries=0``): the driver retries a file only when its
worker process died (the actor is restarted by Ray), so it can count attempts and give up
after ``retries``; a file that fails by its own fault comes back as a report and is final.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import socket
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from avdnn.batch import ledger
from avdnn.batch.plan import FileTask, expand_inputs, job_hash, plan, stale_partials
from avdnn.batch.progress import CorpusProgress
from avdnn.batch.report import BatchReport, FileReport
from avdnn.batch.worker import ChainWorker, JobFailure
from avdnn.errors import (
    AVERROR_EXTERNAL,
    AvdnnError,
    BackendUnavailableError,
    ExternalError,
    InvalidArgumentError,
    from_code,
    from_errno,
)

log = logging.getLogger("avdnn.batch")


def batch(
    inputs: str | list[str],
    chain: str = "",
    *,
    output: str,
    workers: int = 2,
    address: str | None = None,
    resume: bool = False,
    retries: int = 3,
    report: str | None = None,
    num_cpus: float = 1.0,
    num_gpus: float = 0.0,
    progress_bar: bool | None = None,
    **run_options: Any,
) -> BatchReport:
    """Run ``chain`` over every input on Ray; returns the :class:`BatchReport` (also written to ``report``).

    Args:
        inputs: paths or globs (``**`` recursive), in order; duplicates run once.
        chain: an FFmpeg filter string; ``{stem}``-style fields in it are filled per file
            (``metadata_jsonl=file=out/{stem}.jsonl``).
        output: the output template: ``{stem}``, ``{name}``, ``{parent}``, ``{index}``.
        workers: actors, one worker process each, every one holding the chain's models.
        address: ``None`` starts a local Ray for the run (loopback only, no dashboard) and stops
            it after; ``"auto"`` or ``"HOST:PORT"`` joins that cluster.
        resume: skip the inputs the ledger beside their outputs records as done by this job.
        retries: how many times a file is run again after its worker process died.
        report: where to write the JSON report.
        num_cpus, num_gpus: Ray resources per actor (fractions share a device).
        progress_bar: the corpus progress display (tqdm); default: when stderr is a terminal.
        run_options: :func:`avdnn.run` keywords (``format``, ``codec``, ``frames``...), untouched.

    Raises:
        InvalidArgumentError: a bad template, two inputs naming one output, bad worker counts.
        OptionNotFoundError, FilterNotFoundError: the chain itself is wrong (the run stops at
            the first file that shows it).
        BackendUnavailableError: Ray or tqdm is not installed (``pip install 'avdnn[ray]'``).

    >>> rep = avdnn.batch("clips/*.mp4", "scale=320:-2", output="out/{stem}.mkv", workers=2)  # doctest: +SKIP
    >>> [f.status for f in rep.files]  # doctest: +SKIP
    """
    if workers < 1:
        raise InvalidArgumentError(f"workers must be at least 1 (got {workers})", option="workers")
    if retries < 0:
        raise InvalidArgumentError(f"retries must be 0 or more (got {retries})", option="retries")
    if num_cpus < 0 or num_gpus < 0:
        raise InvalidArgumentError("num_cpus and num_gpus must not be negative", option="num_cpus")
    started = time.monotonic()
    job = job_hash(chain, run_options)
    tasks = plan(expand_inputs(inputs), output, chain)
    reports: dict[int, FileReport] = {}
    todo: list[FileTask] = []
    for task in tasks:
        if resume and ledger.finished(task.input, job, task.output):
            reports[task.index] = FileReport(task.input, task.output, "skipped")
        else:
            todo.append(task)
    show = sys.stderr.isatty() if progress_bar is None else progress_bar
    run_options = _worker_threads(run_options, num_cpus)
    corpus = _Corpus(tasks, reports, job, chain, output, workers, address, started, report)
    with CorpusProgress(len(tasks), skipped=len(reports), enabled=show) as bar:
        if todo:
            with _ray(address, workers, num_cpus, num_gpus):
                _Driver(corpus, run_options, retries, bar).run(todo, workers, num_cpus, num_gpus)
    result = corpus.report()
    if report is not None:
        result.write(report)
    return result


@dataclass
class _Corpus:
    """The run's plan and the reports so far (what a report written at any point shows)."""

    tasks: list[FileTask]
    reports: dict[int, FileReport]
    job: str
    chain: str
    output: str
    workers: int
    address: str | None
    started: float
    report_path: str | None

    def report(self) -> BatchReport:
        files = [self.reports[t.index] for t in self.tasks if t.index in self.reports]
        return BatchReport(
            files,
            job=self.job,
            chain=self.chain,
            output=self.output,
            workers=self.workers,
            address=self.address,
            seconds=time.monotonic() - self.started,
        )

    def abort(self, err: AvdnnError) -> AvdnnError:
        """A job-level error: every file not done fails with it; the report (if asked) is still written."""
        for t in self.tasks:
            self.reports.setdefault(
                t.index, FileReport(t.input, t.output, "failed", error={"message": err.oneline(), "code": err.code})
            )
        if self.report_path is not None:
            self.report().write(self.report_path)
        return err


def _worker_threads(run_options: dict[str, Any], num_cpus: float) -> dict[str, Any]:
    """Decoder threads per worker from the CPUs its actor declares (unless the options set them).

    FFmpeg's decoders otherwise take every core of the machine in every worker, so two workers
    fight over the cores one of them already fills, and a corpus does not scale with workers.
    """
    source = dict(run_options.get("source_options") or {})
    source.setdefault("threads", max(1, round(num_cpus)))
    return {**run_options, "source_options": source}


class _Driver:
    """Feeds the files to the actors, one in flight per actor, until every file has a report."""

    def __init__(self, corpus: _Corpus, run_options: dict[str, Any], retries: int, bar: CorpusProgress) -> None:
        self.corpus = corpus
        self.run_options = run_options
        self.retries = retries
        self.bar = bar

    def run(self, todo: list[FileTask], workers: int, num_cpus: float, num_gpus: float) -> None:
        import ray

        remote = ray.remote(ChainWorker).options(
            num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=-1, max_task_retries=0, max_concurrency=1
        )
        total = ray.cluster_resources()  # type: ignore[no-untyped-call]
        count = min(fitting_workers(total, workers, num_cpus, num_gpus), len(todo))
        actors: list[Any] = [remote.remote(self.corpus.job, self.run_options) for _ in range(count)]
        pending: deque[tuple[FileTask, int]] = deque((t, 1) for t in todo)
        running: dict[Any, tuple[int, FileTask, int]] = {}
        idle = list(range(len(actors)))
        try:
            while pending or running:
                while pending and idle:
                    slot = idle.pop()
                    task, attempt = pending.popleft()
                    running[actors[slot].run.remote(task, attempt)] = (slot, task, attempt)
                [ref], _ = ray.wait(list(running), num_returns=1)
                slot, task, attempt = running.pop(ref)
                idle.append(slot)
                rep = self._result(ref, task, attempt, pending)
                if rep is not None:
                    self.corpus.reports[task.index] = rep
                    self.bar.done(rep)
        finally:
            for actor in actors:
                actor.close.remote()  # fire and forget: a dead actor's call just fails
                ray.kill(actor, no_restart=True)
            ips = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}  # type: ignore[no-untyped-call]
            for rep in self.corpus.reports.values():
                rep.node_ip = ips.get(rep.node or "", rep.node_ip)

    def _result(
        self, ref: Any, task: FileTask, attempt: int, pending: deque[tuple[FileTask, int]]
    ) -> FileReport | None:
        """The file's report; None when it went back in the queue (its worker died)."""
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        try:
            rep: FileReport | JobFailure = ray.get(ref)
        except (RayActorError, WorkerCrashedError) as exc:
            if getattr(exc, "actor_init_failed", False):  # __init__ raised (an older Ray: no flag)
                raise self.corpus.abort(
                    ExternalError(
                        f"a batch worker could not start ({_last_line(str(exc))}); "
                        "is this avdnn installed on every node?"
                    )
                ) from exc
            if attempt <= self.retries:
                log.warning("%s: worker process died (attempt %d); running it again", task.input, attempt)
                pending.append((task, attempt + 1))
                return None
            for stale in stale_partials(task.output):  # what the last dead attempt left
                with contextlib.suppress(FileNotFoundError):
                    os.remove(stale)
            return FileReport(
                task.input,
                task.output,
                "failed",
                attempts=attempt,
                error={
                    "message": f"'{task.input}': the worker process died {attempt} time(s) running this file "
                    f"({_last_line(str(exc))})",
                    "code": AVERROR_EXTERNAL,
                },
            )
        if isinstance(rep, JobFailure):
            raise self.corpus.abort(from_code(rep.code, rep.message))
        return rep


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


def _probe(address: str) -> None:
    """Fail at once, with the socket's errno, when nothing listens at HOST:PORT."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidArgumentError(f"Ray address '{address}' is not auto or HOST:PORT", option="address")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except TimeoutError as exc:
        raise from_errno(errno.ETIMEDOUT, f"cannot reach the Ray cluster at '{address}': timed out") from exc
    except OSError as exc:
        raise from_errno(
            exc.errno or errno.ECONNREFUSED, f"cannot reach the Ray cluster at '{address}': {exc.strerror or exc}"
        ) from exc


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown cause"


def import_ray(*, loopback: bool = False) -> Any:
    """Ray, or the install hint.

    ``loopback``: a local node started by this process binds its servers to 127.0.0.1 only.
    Ray does that only when the node's address is 127.0.0.1, which it picks for a local node
    only with this switch off (read once, when Ray is first imported; its default on Linux is
    on). A Ray imported earlier by the caller keeps the caller's setting.
    """
    if loopback and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError(
            "avdnn batch runs on Ray, which is not installed: pip install 'avdnn[ray]'"
        ) from exc
    return ray


@contextlib.contextmanager
def _ray(address: str | None, workers: int, num_cpus: float, num_gpus: float) -> Iterator[None]:
    """Join ``address``, or start a local Ray (loopback only, no dashboard) and stop it after.

    A Ray already initialised in this process (a test, a notebook) is used as it is.
    """
    ray = import_ray(loopback=address is None)
    if ray.is_initialized():
        yield
        return
    quiet = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
    if address is not None:
        if address != "auto" and "://" not in address:
            _probe(address)  # Ray itself retries a dead address for many minutes
        try:
            ray.init(address=address, **quiet)
        except ConnectionError as exc:  # what ray.init raises when it finds no cluster or cannot join it
            raise from_errno(
                errno.ECONNREFUSED, f"cannot join the Ray cluster at '{address}': {_last_line(str(exc))}"
            ) from exc
    else:
        need_cpus = max(os.cpu_count() or 1, math.ceil(workers * num_cpus))
        # "local": a new instance even where RAY_ADDRESS or a `ray start` on this machine exists
        ray.init(address="local", num_cpus=need_cpus, num_gpus=None if num_gpus else 0, **quiet)
    try:
        yield
    finally:
        ray.shutdown()
