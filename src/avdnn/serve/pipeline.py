"""One served pipeline: its sources, each placed on a node whose agent runs it (:mod:`avdnn.serve.nodes`).

Two kinds, as ``POST /api/pipelines`` takes them:

* ``args``: the argv the ``avdnn`` command takes; each of its outputs is a source (``out0``,
  ``out1``...) reading the command's input;
* a template: every source runs the same ``chain`` into its own ``output``, ``{source}`` filled
  with the source's id and ``{node}`` with the id of the node it runs on (in the chain as an
  escaped option value, :func:`avdnn.api.fill_fields`). Sources join and leave while the others
  run; DNN filters naming a ``model_instance`` share one loaded model across all of them on each
  node (one :class:`~avdnn.api.OutputSet` per pipeline and node), their frames batched together.
  ``resources`` (Ray's names: ``{"GPU": 1}``) keeps its sources off nodes that lack them.

An args pipeline's sources read one input: they run on one node, and move together.

Everything a request asks is checked before the request is answered: the argv, the chain (a
filter that does not exist, an option it does not have), the output options, and its job is
confined again for each placement before it goes to a node. A source's run is then started
there; a file output that is there already (a restart, or the service restarted) is
written beside it as ``NAME.1.EXT``, ``NAME.2.EXT``..., and so are the files its filters write
(:mod:`avdnn.serve.segments`): a recording is never overwritten by the service itself.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from avdnn import api
from avdnn._util.redact import redact_text, redact_url
from avdnn._util.redact_args import redact_argv, redact_chain
from avdnn.errors import InvalidArgumentError
from avdnn.serve.accounting import Totals
from avdnn.serve.agent import StaleEpochError
from avdnn.serve.config import ServeConfig
from avdnn.serve.confine import CommandParser, JobParser, ParsedJob
from avdnn.serve.errors import ConflictError, LimitError, UnavailableError, UnknownError
from avdnn.serve.nodes import Nodes
from avdnn.serve.placed import JobMaker, PlacedSource
from avdnn.serve.segments import segment
from avdnn.serve.specs import ArgsPipeline, PipelineSpec, SourceSpec, TemplatePipeline

__all__ = ["FOLDED", "CommandParser", "ServedPipeline"]

log = logging.getLogger("avdnn.serve")

#: the id a template is checked with when it has no source yet, and the node it is checked for
_PROBE_ID = "check"
_PROBE_NODE = "node"
#: the ``source`` of the one row (status, /metrics) the departed sources beyond ``keep_departed``
#: are folded into: no source id can be it (ids start with a letter or a digit)
FOLDED = "_departed"


class ServedPipeline:
    """A pipeline of the service: ``spec`` as it was asked, its sources (placed on ``nodes``)."""

    def __init__(self, pid: str, spec: PipelineSpec, *, parser: JobParser, config: ServeConfig, nodes: Nodes) -> None:
        self.id = pid
        self.spec = spec
        self._parser = parser
        self._config = config
        self._nodes = nodes
        self._lock = threading.Lock()
        self.sources: dict[str, PlacedSource] = {}
        #: sources that left, with their final status (their counts stay in the pipeline's): the last
        #: ``keep_departed``, the ones before folded into one total
        self.departed: list[tuple[dict[str, Any], Totals]] = []
        self.folded = Totals()
        self.folded_sources = 0
        #: ids of sources joining (reserved, being started) and sources gone whose run was left behind
        self._joining: set[str] = set()
        self._left: list[PlacedSource] = []
        self.stopped = False
        self._args_jobs: list[ParsedJob] = []
        #: its shared model instances as they were when it stopped (its nodes have freed them)
        self._final_instances: list[tuple[str, api.InstanceReport]] | None = None

    @property
    def kind(self) -> str:
        return "args" if isinstance(self.spec, ArgsPipeline) else "template"

    # -- building ---------------------------------------------------------------------------

    def check(self) -> None:
        """Refuse what would not run (one-line avdnn errors), before anything starts."""
        if isinstance(self.spec, ArgsPipeline):
            self._args_jobs = self._parser(self.spec.args)
            for job in self._args_jobs:
                api.check_job(job.confined)
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
            api.check_job(self._template_job(source, _PROBE_NODE).confined)

    def _template_job(self, source: SourceSpec, node: str) -> ParsedJob:
        """The job of ``source`` on ``node`` (``{source}`` and ``{node}`` filled)."""
        template = self.spec
        assert isinstance(template, TemplatePipeline)
        fields = {"source": source.id, "node": node}
        argv = [*(api.fill_text(a, fields) for a in template.input_options), "-i", source.url]
        chain = api.fill_fields(template.chain, fields).chain
        for field in ("{source}", "{node}"):  # left where no option value holds it: a filter or instance name
            if field in chain:
                raise InvalidArgumentError(f"the chain's {field} is allowed in option values only", option="chain")
        if chain:
            argv += ["-vf", chain]
        argv += [api.fill_text(a, fields) for a in template.output]
        jobs = self._parser(argv)
        if len(jobs) != 1:
            raise InvalidArgumentError(
                f"a template's output must name one output per source (it names {len(jobs)})", option="output"
            )
        return jobs[0]

    def _maker(self, source: SourceSpec) -> JobMaker:
        """The raw job of ``source`` on a node, confined and checked at the head first (each placement)."""

        def make(node: str) -> api.Job:
            parsed = self._template_job(source, node)
            api.check_job(parsed.confined)
            return parsed.raw

        return make

    def start(self, kept: dict[str, tuple[str, int]] | None = None) -> None:
        """Place every source (one that cannot start stops the others: the request is refused);
        ``kept``: their placements before the head restarted (adopted where they still run)."""
        if isinstance(self.spec, ArgsPipeline):
            entries = [(f"out{k}", job.raw.input, _fixed(job.raw)) for k, job in enumerate(self._args_jobs)]
        else:
            entries = [(s.id, s.url, self._maker(s)) for s in self.spec.sources]
        try:
            node = None
            for sid, url, make in entries:
                placed = self._add(sid, url, make)
                self._nodes.place(placed, node=node, kept=(kept or {}).get(sid))
                if placed.group is not None:  # an args pipeline's outputs share its input: one node
                    node = placed.node
        except BaseException:
            self.stop(self._config.stop_timeout)
            raise

    def _add(self, sid: str, url: str, make: JobMaker) -> PlacedSource:
        """Make source ``sid`` and hold it (a pipeline stopped meanwhile refuses it: 503)."""
        spec = self.spec
        placed = PlacedSource(
            self.id,
            sid,
            url,
            make,
            self._nodes,
            resources=spec.resources if isinstance(spec, TemplatePipeline) else None,
            group=self.id if isinstance(spec, ArgsPipeline) else None,
        )
        with self._lock:
            self._joining.discard(sid)
            if self.stopped:
                raise UnavailableError(f"pipeline '{self.id}' was stopped while source '{sid}' was starting")
            self.sources[sid] = placed
        return placed

    # -- sources joining and leaving --------------------------------------------------------

    def add_source(self, source: SourceSpec) -> PlacedSource:
        """A camera joins the running template pipeline (its frames batched with the others' on its node)."""
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
        placed: PlacedSource | None = None
        try:
            placed = self._add(source.id, source.url, self._maker(source))
            with self._lock:
                if self.stopped:  # stopped while it was being made: never placed
                    raise UnavailableError(f"source '{source.id}' was stopped while it was starting")
            try:
                self._nodes.place(placed)
            except StaleEpochError as exc:  # stopped before its placement reached its node
                if placed.removing:
                    raise UnavailableError(f"source '{source.id}' was stopped while it was starting") from exc
                raise
            if placed.removing:  # stopped while it was being placed
                placed.stop(self._config.stop_timeout)
                raise UnavailableError(f"source '{source.id}' was stopped while it was starting")
        except BaseException:
            with self._lock:
                self._joining.discard(source.id)
                if placed is not None and self.sources.get(source.id) is placed:
                    del self.sources[source.id]
            raise
        with self._lock:
            spec = self.spec
            assert isinstance(spec, TemplatePipeline)
            self.spec = spec.model_copy(update={"sources": [*spec.sources, source]})
        return placed

    def remove_source(self, sid: str) -> dict[str, Any]:
        """A source leaves: its run stopped as Ctrl-C stops one (output finished); its final status."""
        with self._lock:
            placed = self.sources.get(sid)
            if placed is None:
                raise UnknownError(f"pipeline '{self.id}' has no source '{sid}'")
        if isinstance(self.spec, ArgsPipeline):
            raise ConflictError(f"pipeline '{self.id}' runs a command line: delete the pipeline to stop it")
        placed.stop(self._config.stop_timeout)
        final = placed.status()
        with self._lock:
            if self.sources.get(sid) is not placed:  # another request removed it meanwhile
                raise UnknownError(f"pipeline '{self.id}' has no source '{sid}'")
            del self.sources[sid]
            if placed.lingering:
                self._left.append(placed)
            self.departed.append((final, placed.totals()))
            while len(self.departed) > self._config.keep_departed:  # the oldest folded into one row
                _, totals = self.departed.pop(0)
                self.folded.merge(totals)
                self.folded_sources += 1
            spec = self.spec
            assert isinstance(spec, TemplatePipeline)
            self.spec = spec.model_copy(update={"sources": [s for s in spec.sources if s.id != sid]})
        self._nodes.unplaced(placed)
        return final

    def lingering(self) -> list[str]:
        """Its sources stopped whose run is still blocked in its input (left behind)."""
        with self._lock:
            sources = [*self.sources.values(), *self._left]
        return [s.id for s in sources if s.removing and s.lingering]

    def current(self) -> list[PlacedSource]:
        """The sources it has now (a copy: sources join and leave meanwhile)."""
        with self._lock:
            return list(self.sources.values())

    def source(self, sid: str) -> PlacedSource:
        with self._lock:
            placed = self.sources.get(sid)
        if placed is None:
            raise UnknownError(f"pipeline '{self.id}' has no source '{sid}'")
        return placed

    def placements(self) -> dict[str, dict[str, Any]]:
        """Where each source runs: ``{source: {"node", "epoch"}}`` (kept in the state)."""
        return {p.id: {"node": p.node, "epoch": p.epoch} for p in self.current() if p.node is not None}

    # -- the end ------------------------------------------------------------------------------

    def stop(self, timeout: float) -> dict[str, Any]:
        """Stop every source at once (as Ctrl-C stops a run), within ``timeout``; the final status."""
        with self._lock:
            self.stopped = True
            sources = list(self.sources.values())
        for placed in sources:  # all stop at once, then each is waited for within the one bound
            placed.preview.closed.set()
        threads = [threading.Thread(target=s.stop, args=(timeout,), daemon=True) for s in sources]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 1)
        self._final_instances = self.instances()
        status = self.status()
        self._nodes.close_pipeline(self.id, 1.0)
        for placed in sources:
            self._nodes.unplaced(placed)
        return status

    def release(self) -> None:
        """Forget it without stopping its runs (the head stops; a head to come adopts them)."""
        with self._lock:
            self.stopped = True
            sources = list(self.sources.values())
        for placed in sources:
            placed.preview.closed.set()
            self._nodes.unplaced(placed)

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
            "instances": [dict(instance_status(r), node=node) for node, r in self.instances()],
            "spec": self.shown(),
        }

    def instances(self) -> list[tuple[str, api.InstanceReport]]:
        """Its shared model instances, node by node: (node, report)."""
        if self._final_instances is not None:
            return self._final_instances
        return self._nodes.instances(self.id)

    def shown(self) -> dict[str, Any]:
        """Its spec as a response may carry it (:func:`shown_spec`)."""
        return shown_spec(self.spec)

    def all_totals(self) -> list[tuple[str, str, Totals, PlacedSource | None]]:
        """(source id, state, totals, the source if still there) of every source, departed ones too."""
        with self._lock:
            sources = list(self.sources.values())
            departed = list(self.departed)
            folded = copy.deepcopy(self.folded) if self.folded_sources else None
        out: list[tuple[str, str, Totals, PlacedSource | None]] = [(s.id, s.state, s.totals(), s) for s in sources]
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


def _fixed(job: api.Job) -> JobMaker:
    return lambda node: job


def _segment(job: api.Job, k: int) -> api.Job:
    """The job of run ``k``: its output and sink files written as ``NAME.N.EXT`` when one is there (serve.segments)."""
    return segment(job, k)
