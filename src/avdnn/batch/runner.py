"""The driver of a corpus run: plan, skip what is done, start or join Ray, feed the actors, report.

Ray is used the way its batch-inference guides use it: a fixed pool of stateful actors (one
per worker, each holding its loaded chain), files as tasks, at most one file in flight per
actor (backpressure: the driver never queues the corpus into Ray), resources declared per
actor (``num_cpus``/``num_gpus``, fractions allowed), and the driver owning the report
(:mod:`.driver`). The report is written on every way out: the end, a job-level error, a bug
of the driver, Ctrl-C (the files not done then are ``unfinished``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from avdnn._util import rayinit
from avdnn.batch import files, ledger
from avdnn.batch.driver import Corpus, Driver, last_line
from avdnn.batch.plan import FileTask, expand_inputs, job_hash, plan
from avdnn.batch.progress import CorpusProgress
from avdnn.batch.report import BatchReport, FileReport
from avdnn.errors import AvdnnError, BackendUnavailableError, InvalidArgumentError, from_errno

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
        chain: an FFmpeg filter string; ``{stem}``-style fields in its option values are filled
            per file as escaped values (``metadata_jsonl=file=out/{stem}.jsonl``), never in ``model``.
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
            As for :func:`avdnn.run`, an existing file is not replaced without ``overwrite=True``
            (``-y``): that input fails alone with EEXIST.

    Raises:
        InvalidArgumentError: a bad template, two inputs naming one file, a file that is an
            input, a template field in a model, bad worker counts.
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
    corpus = Corpus(tasks, {}, job, chain, output, workers, address, started)
    todo = _todo(corpus, resume, run_options.get("overwrite"))
    show = sys.stderr.isatty() if progress_bar is None else progress_bar
    run_options = _worker_threads(run_options, num_cpus)
    skipped = sum(r.status == "skipped" for r in corpus.reports.values())
    try:
        with CorpusProgress(len(tasks), skipped=skipped, enabled=show) as bar:
            for rep in corpus.reports.values():
                if rep.status == "failed":
                    bar.done(rep)
            if todo:
                with _ray(address, workers, num_cpus, num_gpus):
                    Driver(corpus, run_options, retries, bar, resume=resume).run(todo, workers, num_cpus, num_gpus)
    except BaseException as exc:  # every way out writes the report: a job error, a bug, Ctrl-C
        corpus.end(exc)
        if report is not None:
            corpus.report().write(report)
        if isinstance(exc, KeyboardInterrupt):
            left = [os.path.basename(r.input) for r in corpus.report().files if r.status == "unfinished"]
            names = ", ".join(left[:5]) + (", ..." if len(left) > 5 else "")
            where = f"; the report {report} lists them" if report else ""
            log.warning("interrupted: %d file(s) unfinished (%s)%s; --resume runs them", len(left), names, where)
        raise
    result = corpus.report()
    if report is not None:
        result.write(report)
    return result


def _todo(corpus: Corpus, resume: bool, overwrite: bool | None) -> list[FileTask]:
    """The tasks to run: not done by this job (``--resume``), and writing over nothing unless ``-y``.

    An input whose files would replace existing ones fails alone, before Ray starts (ffmpeg's
    "File '...' already exists"); the worker checks again just before it writes.
    """
    todo: list[FileTask] = []
    for task in corpus.tasks:
        entry = ledger.read(task.input, corpus.job, task.output, task.sidecars) if resume else None
        if entry is not None and all(os.path.exists(p) for p in entry.files):
            corpus.reports[task.index] = FileReport(task.input, task.output, "skipped")
            continue
        try:
            files.refuse_existing(task.files, overwrite, ours=entry.files if entry else ())
        except AvdnnError as exc:
            corpus.reports[task.index] = FileReport(
                task.input, task.output, "failed", error={"message": exc.oneline(), "code": exc.code}
            )
            continue
        todo.append(task)
    return todo


def _worker_threads(run_options: dict[str, Any], num_cpus: float) -> dict[str, Any]:
    """Decoder threads per worker from the CPUs its actor declares (unless the options set them).

    FFmpeg's decoders otherwise take every core of the machine in every worker, so two workers
    fight over the cores one of them already fills, and a corpus does not scale with workers.
    """
    source = dict(run_options.get("source_options") or {})
    source.setdefault("threads", max(1, round(num_cpus)))
    return {**run_options, "source_options": source}


def import_ray(*, loopback: bool = False) -> Any:
    """Ray, or the install hint.

    ``loopback``: a local node started by this process, or the cluster it joins, is on 127.0.0.1
    (:mod:`avdnn._util.rayinit`). A Ray imported earlier by the caller keeps the caller's setting.
    """
    try:
        return rayinit.import_ray(loopback=loopback)
    except BackendUnavailableError as exc:
        raise BackendUnavailableError(
            "avdnn batch runs on Ray, which is not installed: pip install 'avdnn[ray]'"
        ) from exc.__cause__


@contextlib.contextmanager
def _ray(address: str | None, workers: int, num_cpus: float, num_gpus: float) -> Iterator[None]:
    """Join ``address``, or start a local Ray (loopback only, no dashboard) and stop it after.

    A Ray already initialised in this process (a test, a notebook) is used as it is.
    """
    ray = import_ray(loopback=address is None or rayinit.is_loopback(address))
    if ray.is_initialized():
        yield
        return
    quiet = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
    if address is not None:
        if address != "auto" and "://" not in address:
            rayinit.probe(address)  # Ray itself retries a dead address for many minutes
        try:
            ray.init(address=address, **quiet)
        except ConnectionError as exc:  # what ray.init raises when it finds no cluster or cannot join it
            raise from_errno(
                errno.ECONNREFUSED, f"cannot join the Ray cluster at '{address}': {last_line(str(exc))}"
            ) from exc
    else:
        need_cpus = max(os.cpu_count() or 1, math.ceil(workers * num_cpus))
        # "local": a new instance even where RAY_ADDRESS or a `ray start` on this machine exists
        ray.init(address="local", num_cpus=need_cpus, num_gpus=None if num_gpus else 0, **quiet)
    try:
        yield
    finally:
        ray.shutdown()
