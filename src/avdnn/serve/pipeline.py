"""One served pipeline: its sources, each one output of one shared :class:`~avdnn.api.OutputSet`.

Two kinds, as ``POST /api/pipelines`` takes them:

* ``args``: the argv the ``avdnn`` command takes; each of its outputs is a source (``out0``,
  ``out1``...) reading the command's input;
* a template: every source runs the same ``chain`` into its own ``output``, ``{source}`` filled
  with the source's id (in the chain as an escaped option value, :func:`avdnn.api.fill_fields`).
  Sources join and leave while the others run; DNN filters naming a ``model_instance`` share one
  loaded model across all of them, their frames batched together.

Everything a request asks is checked before the request is answered: the argv, the chain (a
filter that does not exist, an option it does not have), the output options. A source's run is
then started; a file output that is there already (a restart, or the service restarted) is
written beside it as ``NAME.1.EXT``, ``NAME.2.EXT``..., and so are the files its filters write
(:mod:`avdnn.serve.segments`): a recording is never overwritten by the service itself.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from avdnn import api
from avdnn._util.redact import redact_text, redact_url
from avdnn._util.redact_args import redact_argv, redact_chain
from avdnn.errors import InvalidArgumentError
from avdnn.serve.accounting import Totals
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import ConflictError, LimitError, UnavailableError, UnknownError
from avdnn.serve.eventbus import EventBus
from avdnn.serve.segments import segment
from avdnn.serve.source import ServedSource
from avdnn.serve.specs import ArgsPipeline, PipelineSpec, SourceSpec, TemplatePipeline
from avdnn.serve.watchdog import Watchdog

__all__ = ["FOLDED", "CommandParser", "ServedPipeline"]

log = logging.getLogger("avdnn.serve")

#: argv (as the ``avdnn`` command takes it) to its output jobs: the CLI's parser, handed in by it
CommandParser = Callable[[Sequence[str]], list[api.Job]]

#: the id a template is checked with when it has no source yet
_PROBE_ID = "check"
#: the ``source`` of the one row (status, /metrics) the departed sources beyond ``keep_departed``
#: are folded into: no source id can be it (ids start with a letter or a digit)
FOLDED = "_departed"


class ServedPipeline:
    """A pipeline of the service: ``spec`` as it was asked, its sources, its shared models."""

    def __init__(
        self,
        pid: str,
        spec: PipelineSpec,
        *,
        parser: CommandParser,
        config: ServeConfig,
        watchdog: Watchdog,
        events: EventBus | None = None,
    ) -> None:
        self.id = pid
        self.spec = spec
        self._parser = parser
        self._config = config
        self._watchdog = watchdog
        self._events = events
        self._lock = threading.Lock()
        self.outputs = api.OutputSet()
        self.sources: dict[str, ServedSource] = {}
        #: sources that left, with their final status (their counts stay in the pipeline's): the last
        #: ``keep_departed``, the ones before folded into one total
        self.departed: list[tuple[dict[str, Any], Totals]] = []
        self.folded = Totals()
        self.folded_sources = 0
        #: ids of sources joining (reserved, being started) and sources gone whose run was left behind
        self._joining: set[str] = set()
        self._left: list[ServedSource] = []
        self.stopped = False
        self._args_jobs: list[api.Job] = []

    @property
    def kind(self) -> str:
        return "args" if isinstance(self.spec, ArgsPipeline) else "template"

    # -- building ---------------------------------------------------------------------------

    def check(self) -> None:
        """Refuse what would not run (one-line avdnn errors), before anything starts."""
        if isinstance(self.spec, ArgsPipeline):
            self._args_jobs = self._parser(self.spec.args)
            for job in self._args_jobs:
                api.check_job(job)
            return
        template = self.spec
        if len(template.sources) > self._config.max_sources:
            raise LimitError(f"{len(template.sources)} sources: at most {self._config.max_sources} per pipeline")
        ids = [s.id for s in template.sources]
        if len(set(ids)) != len(ids):
            raise ConflictError(f"source ids must be unique: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}")
        live = [s.url for s in template.sources if api.is_network_url(s.url, None) or s.url in ("-", "pipe:")]
        twice = next((u for u in live if live.count(u) > 1), None)
        if twice is not None:
            raise InvalidArgumentError(
                f"input '{redact_url(twice)}' is a live stream and cannot be read twice: give each source its own input"
            )
        for source in template.sources or [SourceSpec(id=_PROBE_ID, url="probe")]:
            api.check_job(self._template_job(source))

    def _template_job(self, source: SourceSpec) -> api.Job:
        template = self.spec
        assert isinstance(template, TemplatePipeline)
        fields = {"source": source.id}
        argv = [*(api.fill_text(a, fields) for a in template.input_options), "-i", source.url]
        chain = api.fill_fields(template.chain, fields).chain
        if "{source}" in chain:  # left where no option value holds it: a filter or instance name
            raise InvalidArgumentError("the chain's {source} is allowed in option values only", option="chain")
        if chain:
            argv += ["-vf", chain]
        argv += [api.fill_text(a, fields) for a in template.output]
        jobs = self._parser(argv)
        if len(jobs) != 1:
            raise InvalidArgumentError(
                f"a template's output must name one output per source (it names {len(jobs)})", option="output"
            )
        return jobs[0]

    def start(self) -> None:
        """Start every source (a source that cannot start stops the others: the request is refused)."""
        if isinstance(self.spec, ArgsPipeline):
            entries = [(f"out{k}", job.input, _fixed(job)) for k, job in enumerate(self._args_jobs)]
        else:
            entries = [(s.id, s.url, self._maker(s)) for s in self.spec.sources]
        try:
            for sid, url, make in entries:
                self._add(sid, url, make).start()
        except BaseException:
            self.stop(self._config.stop_timeout)
            raise

    def _maker(self, source: SourceSpec) -> Callable[[int], api.Job]:
        first = self._template_job(source)
        return lambda k: _segment(first if k == 0 else self._template_job(source), k)

    def _add(self, sid: str, url: str, make: Callable[[int], api.Job]) -> ServedSource:
        """Make source ``sid`` and hold it (a pipeline stopped meanwhile refuses it: 503)."""
        served = ServedSource(
            sid,
            url,
            make,
            outputs=self.outputs,
            config=self._config,
            watchdog=self._watchdog,
            key=f"{self.id}/{sid}",
            scope=None if self._events is None else functools.partial(self._events.attach, self.id, sid),
        )
        with self._lock:
            self._joining.discard(sid)
            if self.stopped:
                raise UnavailableError(f"pipeline '{self.id}' was stopped while source '{sid}' was starting")
            self.sources[sid] = served
        return served

    # -- sources joining and leaving --------------------------------------------------------

    def add_source(self, source: SourceSpec) -> ServedSource:
        """A camera joins the running template pipeline (its frames batched with the others')."""
        if not isinstance(self.spec, TemplatePipeline):
            raise ConflictError(f"pipeline '{self.id}' runs a command line: sources join template pipelines only")
        with self._lock:  # the id and a slot reserved at once: concurrent joins take each once
            if self.stopped:
                raise ConflictError(f"pipeline '{self.id}' has ended")
            if source.id in self.sources or source.id in self._joining:
                raise ConflictError(f"pipeline '{self.id}' has a source '{source.id}' already")
            self._left = [s for s in self._left if s.lingering]
            held = len(self.sources) + len(self._joining) + len(self._left)
            if held >= self._config.max_sources:
                behind = f" ({len(self._left)} left behind, blocked in their input)" if self._left else ""
                raise LimitError(f"pipeline '{self.id}' has {held} sources{behind}: the limit (max_sources)")
            self._joining.add(source.id)
        served: ServedSource | None = None
        try:
            job = self._template_job(source)
            api.check_job(job)
            served = self._add(
                source.id, source.url, lambda k: _segment(job if k == 0 else self._template_job(source), k)
            )
            served.start()
        except BaseException:
            with self._lock:
                self._joining.discard(source.id)
                if served is not None and self.sources.get(source.id) is served:
                    del self.sources[source.id]
            raise
        with self._lock:
            spec = self.spec
            assert isinstance(spec, TemplatePipeline)
            self.spec = spec.model_copy(update={"sources": [*spec.sources, source]})
        return served

    def remove_source(self, sid: str) -> dict[str, Any]:
        """A source leaves: its run stopped as Ctrl-C stops one (output finished); its final status."""
        with self._lock:
            served = self.sources.get(sid)
            if served is None:
                raise UnknownError(f"pipeline '{self.id}' has no source '{sid}'")
        if isinstance(self.spec, ArgsPipeline):
            raise ConflictError(f"pipeline '{self.id}' runs a command line: delete the pipeline to stop it")
        served.stop(self._config.stop_timeout)
        final = served.status()
        with self._lock:
            if self.sources.get(sid) is not served:  # another request removed it meanwhile
                raise UnknownError(f"pipeline '{self.id}' has no source '{sid}'")
            del self.sources[sid]
            if served.lingering:
                self._left.append(served)
            self.departed.append((final, served.totals()))
            while len(self.departed) > self._config.keep_departed:  # the oldest folded into one row
                _, totals = self.departed.pop(0)
                self.folded.merge(totals)
                self.folded_sources += 1
            spec = self.spec
            assert isinstance(spec, TemplatePipeline)
            self.spec = spec.model_copy(update={"sources": [s for s in spec.sources if s.id != sid]})
        return final

    def lingering(self) -> list[str]:
        """Its sources stopped whose run is still blocked in its input (left behind)."""
        with self._lock:
            sources = [*self.sources.values(), *self._left]
        return [s.id for s in sources if s.lingering]

    def current(self) -> list[ServedSource]:
        """The sources it has now (a copy: sources join and leave meanwhile)."""
        with self._lock:
            return list(self.sources.values())

    def source(self, sid: str) -> ServedSource:
        with self._lock:
            served = self.sources.get(sid)
        if served is None:
            raise UnknownError(f"pipeline '{self.id}' has no source '{sid}'")
        return served

    # -- the end ------------------------------------------------------------------------------

    def stop(self, timeout: float) -> dict[str, Any]:
        """Stop every source at once (as Ctrl-C stops a run), within ``timeout``; the final status."""
        with self._lock:
            self.stopped = True
            sources = list(self.sources.values())
        for served in sources:  # all stop at once, then each is waited for within the one bound
            served.preview.closed.set()
        threads = [threading.Thread(target=s.stop, args=(timeout,), daemon=True) for s in sources]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 1)
        self.outputs.close(1.0)
        return self.status()

    # -- what it shows --------------------------------------------------------------------------

    @property
    def state(self) -> str:
        with self._lock:
            sources = list(self.sources.values())
            stopped = self.stopped
        states = [s.state for s in sources]
        if stopped:
            return "failed" if "failed" in states else "ended"
        if not states or "running" in states:
            return "running"
        if all(s in ("ended", "failed") for s in states):
            return "failed" if "failed" in states else "ended"
        return next(s for s in ("reconnecting", "offline", "starting") if s in states)

    def status(self) -> dict[str, Any]:
        """State, every source (those that left too) and the shared model instances, live."""
        with self._lock:
            sources = list(self.sources.values())
            departed = [dict(final, departed=True) for final, _ in self.departed]
            folded = {"sources": self.folded_sources, **self.folded.as_dict()} if self.folded_sources else None
        shown = [s.status() for s in sources]
        failed = next((s for s in shown if s["state"] == "failed"), None)
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "cause": None if failed is None else failed["cause"],
            "traceback": None if failed is None else failed["traceback"],
            "sources": shown + departed,
            "departed_earlier": folded,
            "left_behind": self.lingering(),
            "instances": [instance_status(r) for r in self.outputs.instances()],
            "spec": self.shown(),
        }

    def shown(self) -> dict[str, Any]:
        """Its spec as a response may carry it (:func:`shown_spec`)."""
        return shown_spec(self.spec)

    def all_totals(self) -> list[tuple[str, str, Totals, ServedSource | None]]:
        """(source id, state, totals, the source if still there) of every source, departed ones too."""
        with self._lock:
            sources = list(self.sources.values())
            departed = list(self.departed)
            folded = copy.deepcopy(self.folded) if self.folded_sources else None
        out: list[tuple[str, str, Totals, ServedSource | None]] = [(s.id, s.state, s.totals(), s) for s in sources]
        out += [(final["id"], final["state"], totals, None) for final, totals in departed]
        if folded is not None:
            out.append((FOLDED, "ended", folded, None))
        return out


def instance_status(report: api.InstanceReport) -> dict[str, Any]:
    """A shared model instance as the API shows it."""
    return {
        "name": report.name,
        "streams": list(report.streams),
        "stream_count": len(report.streams),
        "inferences": report.inferences,
        "batches": report.batches,
        "mean_batch": round(report.mean_batch, 3),
        "mixed_batches": report.mixed_batches,
        "batch_sizes": list(report.batch_sizes),
        "reruns": report.reruns,
        "failures": report.failures,
        "inference_seconds": round(report.run_times.total, 6),
    }


def shown_spec(spec: PipelineSpec) -> dict[str, Any]:
    """The spec as asked, with what it may show: every URL's credentials, the value after a secret
    option of the argv (``-headers``, ``-decryption_key``...) and of a secret filter option of the
    chain (an ``events`` webhook's ``headers``...) masked (:mod:`avdnn._util.redact`)."""
    data = spec.model_dump()
    if "args" in data:
        data["args"] = redact_argv(data["args"])
    else:
        data["chain"] = redact_chain(data["chain"])
        data["output"] = redact_argv(data["output"])
        data["input_options"] = redact_argv(data["input_options"])
        data["sources"] = [{"id": s["id"], "url": redact_text(s["url"])} for s in data["sources"]]
    return data


def _fixed(job: api.Job) -> Callable[[int], api.Job]:
    return lambda k: _segment(job, k)


def _segment(job: api.Job, k: int) -> api.Job:
    """The job of run ``k``: its output and sink files written as ``NAME.N.EXT`` when one is there (serve.segments)."""
    return segment(job, k)
