"""The service's state: its pipelines, their limits, their persistence, the watchdog keeping them up.

One :class:`Service` per process, handed to the routers as a dependency (never a global). Its
pipelines run on the public API only (:class:`~avdnn.api.OutputSet`, one per pipeline); argv is
turned into jobs by the CLI's own parser, handed in as :data:`~avdnn.serve.pipeline.CommandParser`
(the service sits below the CLI and never imports it). A deleted pipeline stays readable, with
its final accounting and in ``/metrics``, among the last :data:`KEEP_ENDED` ended ones. Every
source of a running pipeline is sampled into its history once a second by one thread of the
service's own (:mod:`avdnn.serve.history`): a timer like the watchdog's, apart from it, so that a
restart the watchdog makes never holds the samples up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from avdnn import api
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import ConflictError, LimitError, UnavailableError, UnknownError
from avdnn.serve.eventbus import EventBus
from avdnn.serve.history import INTERVAL
from avdnn.serve.pipeline import CommandParser, ServedPipeline, shown_spec
from avdnn.serve.sessions import Sessions
from avdnn.serve.specs import ArgsPipeline, PipelineSpec, SourceSpec, TemplatePipeline
from avdnn.serve.state import StateDir
from avdnn.serve.tokens import service_token
from avdnn.serve.watchdog import Watchdog

__all__ = ["KEEP_ENDED", "EventCounters", "Service"]

log = logging.getLogger("avdnn.serve")

#: deleted pipelines kept readable (their final accounting, their metrics)
KEEP_ENDED = 16


class EventCounters(Protocol):
    """What an event sink tells ``/metrics``: ``(sink, published, dropped)`` for each of its sinks.

    The service's :class:`~avdnn.serve.eventbus.EventBus` is the first (its ``listener`` and ``sse``
    sinks); ``avdnn_events_published_total`` and ``avdnn_events_dropped_total`` read every one.
    """

    def event_counts(self) -> Iterable[tuple[str, int, int]]: ...


def _no_parser(argv: Sequence[str]) -> list[api.Job]:
    raise InvalidArgumentError("this service was started without a command-line parser: use a template pipeline")


class Service:
    """Pipelines created, changed and deleted; restored from ``config.state`` at start."""

    def __init__(self, config: ServeConfig, parser: CommandParser | None = None) -> None:
        self.config = config
        self._parser = parser or _no_parser
        self._lock = threading.Lock()
        self._pipelines: dict[str, ServedPipeline] = {}
        self._order: dict[str, int] = {}
        self._ended: OrderedDict[str, ServedPipeline] = OrderedDict()
        self._next = 0
        self._state = StateDir(config.state) if config.state is not None else None
        token = service_token(config)  # the one given, the one kept in the state, or a new one
        #: the bearer token every request carries (None only with no_auth); token_made: the service made it
        self.token, self.token_made = token.value, token.made
        #: the web page's sessions (their cookies), checked by the gate
        self.sessions = Sessions(config.session_ttl)
        self._watchdog = Watchdog(min(1.0, config.watchdog / 4), self._check)
        self._sampler = Watchdog(INTERVAL, self._sample, name="avdnn-serve-history")
        #: every pipeline's events, for GET /api/events (its counts are the sse and listener sinks')
        self.events = EventBus(config.events_queue)
        self.event_counters: list[EventCounters] = [self.events]
        self.started_at = time.time()
        self.ready = False
        self.stopping = threading.Event()

    # -- life -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watchdog, then the pipelines kept in the state and those of the config file."""
        self._watchdog.start()
        self._sampler.start()
        restored: set[str] = set()
        for pid, order, raw in self._state.load() if self._state is not None else []:
            self._next = max(self._next, order + 1)
            if self._restore(raw, pid, order):
                restored.add(pid)
        for raw in self.config.pipelines:
            name = raw.get("name")
            if name is not None and (name in restored or name in self._pipelines):
                continue  # kept in the state already (with its sources as they were)
            self._restore(raw, None, None)
        self.ready = True

    def _restore(self, raw: dict[str, Any], pid: str | None, order: int | None) -> bool:
        try:
            spec: PipelineSpec = ArgsPipeline(**raw) if "args" in raw else TemplatePipeline(**raw)
            self.create(spec, pid=pid, order=order)
        except (AvdnnError, ValueError) as exc:
            what = pid or raw.get("name") or "a pipeline"
            log.error("avdnn serve: %s not started: %s", what, exc)
            return False
        how = "restored from the state" if pid is not None else "started from the config"
        log.info("avdnn serve: pipeline %s %s", pid or raw.get("name"), how)
        return True

    def close(self, timeout: float | None = None) -> None:
        """Stop every pipeline at once, each within the one bound (their outputs finished)."""
        self.stopping.set()
        self.ready = False
        bound = self.config.stop_timeout if timeout is None else timeout
        with self._lock:
            pipelines = list(self._pipelines.values())
        threads = [threading.Thread(target=p.stop, args=(bound,), daemon=True) for p in pipelines]
        for t in threads:
            t.start()
        for t in threads:
            t.join(bound + 2)
        self._watchdog.stop()
        self._sampler.stop()
        log.info("avdnn serve: %d pipeline(s) stopped", len(pipelines))

    def _check(self) -> None:
        now = time.monotonic()
        with self._lock:
            pipelines = list(self._pipelines.values())
        for p in pipelines:
            for source in p.current():
                source.check(now)

    def _sample(self) -> None:
        t = time.time()  # the samples' time is the browser's kind: seconds since the epoch
        with self._lock:
            pipelines = list(self._pipelines.values())
        for p in pipelines:
            for source in p.current():
                source.sample(t)

    # -- pipelines --------------------------------------------------------------------------

    def create(self, spec: PipelineSpec, *, pid: str | None = None, order: int | None = None) -> ServedPipeline:
        """Check ``spec``, start its sources, keep it; 4xx errors for what cannot run."""
        if self.stopping.is_set():
            raise UnavailableError("the service is stopping")
        with self._lock:
            pid = pid or spec.name or self._fresh_id()
            if pid in self._pipelines:
                raise ConflictError(f"a pipeline '{pid}' exists already")
            if len(self._pipelines) >= self.config.max_pipelines:
                raise LimitError(f"{len(self._pipelines)} pipelines run: the limit (max_pipelines)")
            order = self._next if order is None else order
            self._next = max(self._next, order + 1)
            pipeline = ServedPipeline(
                pid, spec, parser=self._parser, config=self.config, watchdog=self._watchdog, events=self.events
            )
            self._pipelines[pid] = pipeline  # held while it starts: the name is taken
            self._order[pid] = order
        try:
            pipeline.check()
            pipeline.start()
        except BaseException:
            with self._lock:
                del self._pipelines[pid]
                del self._order[pid]
            raise
        self._ended.pop(pid, None)
        self._save(pipeline)
        log.info("avdnn serve: pipeline %s created (%d source(s))", pid, len(pipeline.sources))
        return pipeline

    def _fresh_id(self) -> str:
        n = len(self._pipelines) + 1
        while f"p{n}" in self._pipelines or f"p{n}" in self._ended:
            n += 1
        return f"p{n}"

    def get(self, pid: str) -> ServedPipeline:
        """A running pipeline, or one that ended among the last kept."""
        with self._lock:
            pipeline = self._pipelines.get(pid) or self._ended.get(pid)
        if pipeline is None:
            raise UnknownError(f"no pipeline '{pid}'")
        return pipeline

    def running(self, pid: str) -> ServedPipeline:
        with self._lock:
            pipeline = self._pipelines.get(pid)
        if pipeline is None:
            if pid in self._ended:
                raise ConflictError(f"pipeline '{pid}' has ended")
            raise UnknownError(f"no pipeline '{pid}'")
        return pipeline

    def pipelines(self) -> list[ServedPipeline]:
        """The running pipelines, then the ended ones kept."""
        with self._lock:
            return [*self._pipelines.values(), *self._ended.values()]

    def delete(self, pid: str) -> dict[str, Any]:
        """Stop it as Ctrl-C stops a run (outputs finished, trailers written); its final accounting."""
        pipeline = self.running(pid)
        final = pipeline.stop(self.config.stop_timeout)
        with self._lock:
            self._pipelines.pop(pid, None)
            self._order.pop(pid, None)
            self._ended[pid] = pipeline
            while len(self._ended) > KEEP_ENDED:
                self._ended.popitem(last=False)
        if self._state is not None:
            self._state.remove(pid)
        log.info("avdnn serve: pipeline %s deleted", pid)
        return final

    # -- sources ----------------------------------------------------------------------------

    def add_source(self, pid: str, source: SourceSpec) -> dict[str, Any]:
        pipeline = self.running(pid)
        served = pipeline.add_source(source)
        self._save(pipeline)
        return served.status()

    def remove_source(self, pid: str, sid: str) -> dict[str, Any]:
        pipeline = self.running(pid)
        final = pipeline.remove_source(sid)
        self._save(pipeline)
        return final

    def _save(self, pipeline: ServedPipeline) -> None:
        if self._state is None:
            return
        with self._lock:
            order = self._order.get(pipeline.id)
        if order is not None:
            self._state.save(pipeline.id, order, pipeline.spec.model_dump())

    # -- what it shows ----------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Every pipeline, briefly (``GET /api/pipelines``)."""
        rows = []
        for p in self.pipelines():
            rows.append(
                {
                    "id": p.id,
                    "kind": p.kind,
                    "state": p.state,
                    "sources": {s.id: s.state for s in p.current()},
                    "spec": shown_spec(p.spec),
                }
            )
        return {"pipelines": rows}
