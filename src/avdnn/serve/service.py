"""The service's state: its pipelines, their limits, their persistence, the nodes that run them.

One :class:`Service` per process, handed to the routers as a dependency (never a global). It is the
head: its pipelines' sources run on node agents (:mod:`avdnn.serve.nodes`): one in this process
(:class:`~avdnn.serve.host.LocalNodes`), or one per node of a Ray cluster with ``ray``
(:mod:`avdnn.serve.cluster`); either way on the public API only (:class:`~avdnn.api.OutputSet`);
argv is turned into jobs by the CLI's own parser, handed in as :data:`~avdnn.serve.pipeline.CommandParser`
(the service sits below the CLI and never imports it). A deleted pipeline stays readable, with
its final accounting and in ``/metrics``, among the last :data:`KEEP_ENDED` ended ones; one whose
run was left behind (blocked in its input past ``stop_timeout``) still counts against
``max_pipelines`` until that run has ended. A pipeline that could not be started from the state
or the config file is a listed ``failed`` one (:mod:`avdnn.serve.failed`). Each agent keeps its
sources up (restarts, the watchdog) and samples their history itself.

On a cluster with ``--state``, a head that stops leaves the runs going (its agents are detached
actors) and the next head adopts them; without ``--state`` nothing could adopt them, so it stops them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from avdnn import api
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.serve.cluster import RayNodes
from avdnn.serve.config import ServeConfig
from avdnn.serve.confine import confined_parser
from avdnn.serve.errors import ConflictError, LimitError, UnavailableError, UnknownError
from avdnn.serve.eventbus import EventBus, EventCounters
from avdnn.serve.failed import FailedPipeline
from avdnn.serve.host import LocalNodes
from avdnn.serve.nodes import Nodes, NodeSource
from avdnn.serve.pipeline import CommandParser, ServedPipeline
from avdnn.serve.sessions import Sessions
from avdnn.serve.slots import Slots
from avdnn.serve.specs import ID, PipelineSpec, SourceSpec, parse_spec
from avdnn.serve.state import Entry, StateDir
from avdnn.serve.tokens import service_token

__all__ = ["KEEP_ENDED", "Service"]

log = logging.getLogger("avdnn.serve")

#: deleted pipelines kept readable (their final accounting, their metrics)
KEEP_ENDED = 16


def _no_parser(argv: Sequence[str]) -> list[api.Job]:
    raise InvalidArgumentError("this service was started without a command-line parser: use a template pipeline")


class Service:
    """Pipelines created, changed and deleted; restored from ``config.state`` at start.

    Every check-then-act on the pipelines (a name taken, a slot of ``max_pipelines``, the service
    stopping) happens under one lock with its reservation, so concurrent requests and a SIGTERM
    never start what a check refused or what the stop loop has already passed.
    """

    def __init__(self, config: ServeConfig, parser: CommandParser | None = None) -> None:
        self.config = config
        self._parser = confined_parser(parser or _no_parser, config)  # every job under the media root
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._pipelines: dict[str, ServedPipeline] = {}
        self._order: dict[str, int] = {}
        self._ended: OrderedDict[str, ServedPipeline] = OrderedDict()
        #: deleted pipelines with a run left behind (they count until it ends)
        self._left: dict[str, ServedPipeline] = {}
        self._failed: dict[str, FailedPipeline] = {}
        self._next = 0
        self._state = StateDir(config.state) if config.state is not None else None
        token = service_token(config)  # the one given, the one kept in the state, or a new one
        #: the bearer token every request carries (None only with no_auth); token_made: the service made it
        self.token, self.token_made = token.value, token.made
        #: the web page's sessions (their cookies), checked by the gate
        self.sessions = Sessions(config.session_ttl)
        #: every pipeline's events, for GET /api/events (its counts are the sse sink's)
        self.events = EventBus(config.events_queue, config.max_event_clients)
        source: NodeSource = (
            LocalNodes(config, self.events.publish) if config.ray is None else RayNodes(config, keep=self._keeps())
        )
        #: where the sources run (the runs' events come to the bus through it; it counts the ``listener`` sink)
        self.nodes = Nodes(config, source, self.events.publish)
        self.nodes.on_moved = self._moved
        self.event_counters: list[EventCounters] = [self.events, self.nodes]
        #: the MJPEG previews open (``preview.mjpg``): past ``max_viewers``, a 503
        self.viewers = Slots(config.max_viewers, "MJPEG previews (max_viewers)")
        self.started_at = time.time()
        self.ready = False
        self.stopping = threading.Event()

    # -- life -------------------------------------------------------------------------------

    def _keeps(self) -> bool:
        """Whether a stopping head leaves its runs to the next one (a cluster, with ``--state``)."""
        return self.config.ray is not None and self._state is not None

    def start(self) -> None:
        """Start the nodes' agents, then the pipelines kept in the state (adopting the runs that go
        on) and those of the config file; one that cannot start is a ``failed`` pipeline, never a
        service that does not start."""
        self.nodes.start(wait=0.0 if self.config.ray is None else self.config.failover_timeout)
        entries = self._state.load() if self._state is not None else []
        self.nodes.at_least(max((e for entry in entries for _, e in entry.placements.values()), default=0))
        restored: set[str] = set()
        for entry in entries:
            self._next = max(self._next, entry.order + 1)
            if entry.id is not None:
                restored.add(entry.id)
            self._restore(entry)
        for raw in self.config.pipelines:
            name = raw.get("name")
            if name is not None and (name in restored or name in self._pipelines):
                continue  # kept in the state already (with its sources as they were)
            self._start_configured(raw)
        self.ready = True
        self.nodes.ready = True

    def _restore(self, entry: Entry) -> None:
        pid = entry.id if entry.id is not None else self._failed_id(entry.path.stem)
        if entry.spec is None:
            self._fail(FailedPipeline(pid, entry.cause or "unreadable", path=entry.path))
            return
        try:
            spec = parse_spec(entry.spec)
        except InvalidArgumentError as exc:
            self._fail(FailedPipeline(pid, exc.oneline(), path=entry.path))
            return
        try:
            self.create(spec, pid=pid, order=entry.order, save=False, kept=entry.placements)
        except AvdnnError as exc:
            self._fail(FailedPipeline(pid, exc.oneline(), spec=spec, path=entry.path))
            return
        log.info("avdnn serve: pipeline %s restored from the state", pid)

    def _start_configured(self, raw: dict[str, Any]) -> None:
        name = raw.get("name")
        pid = name if isinstance(name, str) and ID.match(name) else None
        spec: PipelineSpec | None = None
        try:
            spec = parse_spec(raw)
            pipeline = self.create(spec)
        except AvdnnError as exc:
            self._fail(FailedPipeline(pid or self._failed_id("config"), exc.oneline(), spec=spec))
            return
        log.info("avdnn serve: pipeline %s started from the config", pipeline.id)

    def _fail(self, failed: FailedPipeline) -> None:
        log.error("avdnn serve: %s not started: %s", failed.id, failed.cause)
        with self._lock:
            self._failed[failed.id] = failed

    def _failed_id(self, stem: str) -> str:
        """A listed id for a failed pipeline whose own is none (its file's name when it can be one)."""
        if ID.match(stem) and stem not in self._failed and stem not in self._pipelines:
            return stem
        n = 1
        while f"failed{n}" in self._failed or f"failed{n}" in self._pipelines:
            n += 1
        return f"failed{n}"

    def close(self, timeout: float | None = None) -> None:
        """Stop every pipeline at once, each within the one bound (their outputs finished); on a
        cluster with ``--state``, leave them running for the next head instead.

        ``stopping`` is set under the lock that every create and join reserves under: one that
        reserved before is in the list stopped here (it finds its pipeline stopped and gives up),
        and every later one is refused (503)."""
        with self._lock:
            self.stopping.set()
            self.ready = False
            pipelines = list(self._pipelines.values())
        keep = self._keeps()
        if keep:  # the monitor first: it never takes a run it no longer sees placed for a stale one
            self.nodes.close(keep=True)
        bound = self.config.stop_timeout if timeout is None else timeout
        threads = [
            threading.Thread(target=p.release if keep else p.stop, args=() if keep else (bound,), daemon=True)
            for p in pipelines
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(bound + 2)
        if not keep:
            self.nodes.close(keep=False)
        if keep:
            log.info("avdnn serve: %d pipeline(s) left running on the cluster for the next head", len(pipelines))
        else:
            log.info("avdnn serve: %d pipeline(s) stopped", len(pipelines))

    def _moved(self, pid: str) -> None:
        """Sources of ``pid`` moved: their placements are kept (a state that cannot be written is logged)."""
        with self._lock:
            pipeline = self._pipelines.get(pid)
        if pipeline is not None:
            with contextlib.suppress(UnavailableError):  # logged by _save; the next change writes it again
                self._save(pipeline)

    # -- pipelines --------------------------------------------------------------------------

    def create(
        self,
        spec: PipelineSpec,
        *,
        pid: str | None = None,
        order: int | None = None,
        save: bool = True,
        kept: dict[str, tuple[str, int]] | None = None,
    ) -> ServedPipeline:
        """Check ``spec``, place its sources, keep it; 4xx errors for what cannot run. ``kept``: its
        sources' placements before a restart (adopted where their runs go on).

        A state that cannot be written rolls it back: stopped, 503 (it would not come back)."""
        with self._lock:  # the name and the slot reserved at once, or refused
            if self.stopping.is_set():
                raise UnavailableError("the service is stopping")
            pid = pid or spec.name or self._fresh_id()
            if pid in self._pipelines or pid in self._failed:
                raise ConflictError(f"a pipeline '{pid}' exists already")
            held = len(self._pipelines) + self._count_left()
            if held >= self.config.max_pipelines:
                behind = f" ({held - len(self._pipelines)} left behind, blocked in their input)"
                raise LimitError(
                    f"{held} pipelines run{behind if held > len(self._pipelines) else ''}: the limit (max_pipelines)"
                )
            order = self._next if order is None else order
            self._next = max(self._next, order + 1)
            pipeline = ServedPipeline(pid, spec, parser=self._parser, config=self.config, nodes=self.nodes)
            self._pipelines[pid] = pipeline  # held while it starts: the name is taken
            self._order[pid] = order
        try:
            pipeline.check()
            pipeline.start(kept)
            if save:
                self._save(pipeline)
        except BaseException as exc:
            with self._lock:
                self._pipelines.pop(pid, None)
                self._order.pop(pid, None)
            pipeline.stop(self.config.stop_timeout)
            if isinstance(exc, AvdnnError) and not isinstance(exc, UnavailableError) and self.stopping.is_set():
                raise UnavailableError("the service is stopping") from exc
            raise
        self._ended.pop(pid, None)
        log.info("avdnn serve: pipeline %s created (%d source(s))", pid, len(pipeline.sources))
        return pipeline

    def _count_left(self) -> int:
        """Deleted pipelines whose run is still blocked in its input (under the lock)."""
        for pid in [pid for pid, p in self._left.items() if not p.lingering()]:
            del self._left[pid]
        return len(self._left)

    def _fresh_id(self) -> str:
        n = len(self._pipelines) + 1
        while any(f"p{n}" in where for where in (self._pipelines, self._ended, self._failed)):
            n += 1
        return f"p{n}"

    def get(self, pid: str) -> ServedPipeline | FailedPipeline:
        """A running pipeline, one that ended among the last kept, or one that failed at start."""
        with self._lock:
            pipeline = self._pipelines.get(pid) or self._ended.get(pid) or self._failed.get(pid)
        if pipeline is None:
            raise UnknownError(f"no pipeline '{pid}'")
        return pipeline

    def running(self, pid: str) -> ServedPipeline:
        with self._lock:
            pipeline = self._pipelines.get(pid)
        if pipeline is None:
            if pid in self._failed:
                raise ConflictError(f"pipeline '{pid}' failed at start (delete it)")
            if pid in self._ended:
                raise ConflictError(f"pipeline '{pid}' has ended")
            raise UnknownError(f"no pipeline '{pid}'")
        return pipeline

    def pipelines(self) -> list[ServedPipeline]:
        """The running pipelines, then the ended ones kept (those that failed at start: :meth:`failed`)."""
        with self._lock:
            return [*self._pipelines.values(), *self._ended.values()]

    def left_behind(self) -> int:
        """Runs stopped but still blocked in their input, on every node (deleted pipelines' too)."""
        return self.nodes.left_behind()

    def failed(self) -> list[FailedPipeline]:
        """The pipelines that could not be started from the state or the config file."""
        with self._lock:
            return list(self._failed.values())

    def delete(self, pid: str) -> dict[str, Any]:
        """Stop it as Ctrl-C stops a run (outputs finished, trailers written); its final accounting.

        One that failed at start goes with its state file. A state file that cannot be removed
        leaves the answer a ``warning`` (the pipeline is stopped all the same)."""
        with self._lock:
            failed = self._failed.pop(pid, None)
        if failed is not None:
            final = failed.status()
            if self._state is not None and failed.path is not None:
                self._unkeep(final, self._state.remove_file, failed.path)
            log.info("avdnn serve: failed pipeline %s deleted", pid)
            return final
        pipeline = self.running(pid)
        final = pipeline.stop(self.config.stop_timeout)
        with self._lock:
            self._pipelines.pop(pid, None)
            self._order.pop(pid, None)
            self._ended[pid] = pipeline
            while len(self._ended) > KEEP_ENDED:
                self._ended.popitem(last=False)
            if pipeline.lingering():
                self._left[pid] = pipeline
        if self._state is not None:
            self._unkeep(final, self._state.remove_file, self._state.dir / f"{pid}.json")
        log.info("avdnn serve: pipeline %s deleted", pid)
        return final

    def _unkeep(self, final: dict[str, Any], remove: Callable[[Path], None], path: Path) -> None:
        try:
            remove(path)
        except AvdnnError as exc:
            log.error("avdnn serve: %s: its state file was not removed: %s", final["id"], exc.oneline())
            final["warning"] = f"its state file could not be removed ({exc.message}): it comes back at a restart"

    # -- sources ----------------------------------------------------------------------------

    def add_source(self, pid: str, source: SourceSpec) -> dict[str, Any]:
        """A source joins; a state that cannot be written makes it leave again: 503."""
        if self.stopping.is_set():
            raise UnavailableError("the service is stopping")
        pipeline = self.running(pid)
        try:
            served = pipeline.add_source(source)
        except (ConflictError, UnavailableError) as exc:
            if self.stopping.is_set():
                raise UnavailableError("the service is stopping") from exc
            raise
        try:
            self._save(pipeline)
        except UnavailableError:
            pipeline.remove_source(source.id)
            raise
        return served.status()

    def remove_source(self, pid: str, sid: str) -> dict[str, Any]:
        """A source leaves; a state that cannot be written leaves the answer a ``warning``."""
        pipeline = self.running(pid)
        final = pipeline.remove_source(sid)
        try:
            self._save(pipeline)
        except UnavailableError as exc:
            final = dict(final, warning=f"{exc.message}: the source comes back at a restart")
        return final

    def _save(self, pipeline: ServedPipeline) -> None:
        """Keep the pipeline's spec as it is now (the last write has the latest spec); 503 when it
        cannot be written (the error, with the file, is logged: an answer never names a file)."""
        if self._state is None:
            return
        with self._save_lock:
            with self._lock:
                order = self._order.get(pipeline.id)
            if order is None:
                return
            try:
                self._state.save(pipeline.id, order, pipeline.spec.model_dump(), pipeline.placements())
            except AvdnnError as exc:
                log.error("avdnn serve: %s: the state was not written: %s", pipeline.id, exc.oneline())
                raise UnavailableError(f"the state could not be written ({exc.message})") from exc

    # -- what it shows ----------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Every pipeline, briefly (``GET /api/pipelines``): running, ended, failed at start."""
        rows = []
        listed: list[ServedPipeline | FailedPipeline] = [*self.pipelines(), *self.failed()]
        for p in listed:
            status = p.status() if isinstance(p, FailedPipeline) else None
            rows.append(
                {
                    "id": p.id,
                    "kind": p.kind,
                    "state": p.state,
                    "cause": status["cause"] if status is not None else None,
                    "sources": {s.id: s.state for s in p.current()},
                    "left_behind": p.lingering(),
                    "spec": p.shown(),
                }
            )
        return {"pipelines": rows}
