"""A node's agent: the runs of the sources placed on this node, on the service's own run machinery.

Each placed source is a :class:`~avdnn.serve.source.ServedSource` (its runs, restarts, state and
accounting); each pipeline with a source here has one :class:`~avdnn.api.OutputSet` on this node,
so its ``model_instance`` models are loaded once per node and batch the frames of every source of
the pipeline the node runs. The agent keeps its sources up itself: one watchdog thread (restarts
when due, stuck runs) and one sampler (each source's history, once a second, and the agent's own
figures: its process's CPU, and which sources lost frames to their live queue since the sample
before, i.e. do not keep their input's rate).

Every job it is handed is confined again here, against this node's own media root and model
folder (:func:`avdnn.api.confine_job`), before each of its runs: the head checked it too, but
nothing a request says reaches a run without this node's own check. The service without ``--ray``
holds one of these in its own process; on a Ray cluster each node's agent actor holds one
(:mod:`avdnn.serve.rayagent`).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from avdnn import api
from avdnn.serve.accounting import Totals
from avdnn.serve.agent import (
    LOCAL,
    Agent,
    AgentUnavailableError,
    NodeView,
    Placement,
    SourceView,
    StaleEpochError,
    settings_digest,
)
from avdnn.serve.config import ServeConfig
from avdnn.serve.confine import confine, confinement
from avdnn.serve.errors import UnavailableError
from avdnn.serve.eventbus import EventTap, Publish
from avdnn.serve.history import INTERVAL
from avdnn.serve.placement import NodeInfo, local_resources
from avdnn.serve.segments import segment
from avdnn.serve.source import ServedSource
from avdnn.serve.watchdog import Watchdog

__all__ = ["LIVE_DROP", "LocalAgent", "LocalNodes"]

log = logging.getLogger("avdnn.serve")

#: the start of the drop cause of a live input's queue: frames lost because the chain fell behind
LIVE_DROP = "input live queue"


@dataclass
class _Hosted:
    """One placed source here: its runs, its placement's epoch, its live-queue drops at the last sample."""

    pipeline: str
    source: ServedSource
    epoch: int
    live_drops: int = 0
    behind: bool = False


def _live_drops(totals: Totals) -> int:
    return sum(n for cause, n in totals.dropped.items() if cause.startswith(LIVE_DROP))


class LocalAgent:
    """The runs of node ``node``; ``publish`` takes every event they give (see :class:`EventTap`)."""

    def __init__(self, node: str, config: ServeConfig, publish: Publish) -> None:
        self.node = node
        self.incarnation = uuid.uuid4().hex
        self._config = config
        self._policy = confinement(config)
        self._settings = settings_digest(config)
        self._lock = threading.Lock()
        self._sets: dict[str, api.OutputSet] = {}
        self._hosted: dict[tuple[str, str], _Hosted] = {}
        #: the newest epoch seen of each source, and whether it is still placed (not stopped since):
        #: a placement or a stop older than it is refused
        self._epochs: dict[tuple[str, str], tuple[int, bool]] = {}
        #: sources stopped whose run is still blocked in its input (they still count)
        self._left: list[_Hosted] = []
        self.tap = EventTap(publish)
        self._watchdog = Watchdog(min(1.0, config.watchdog / 4), self._check)
        self._sampler = Watchdog(INTERVAL, self._sample, name="avdnn-serve-history")
        self._cpu_mark = (time.monotonic(), time.process_time())
        self._cpu = 0.0
        self._closed = False

    def start(self) -> None:
        self._watchdog.start()
        self._sampler.start()

    def configure(self, config: ServeConfig) -> None:
        """The settings of the sources placed from now on (a head that found this agent running,
        started by another); the sources running keep theirs, and its timers keep their periods."""
        policy = confinement(config)  # a media root that is no folder on this node: refused here
        with self._lock:
            self._config, self._policy, self._settings = config, policy, settings_digest(config)

    def close(self, timeout: float) -> None:
        """Stop every run here (outputs finished) within ``timeout``, then its threads."""
        with self._lock:
            self._closed = True
            hosted = list(self._hosted.values())
            pids = list(self._sets)
        threads = [threading.Thread(target=h.source.stop, args=(timeout,), daemon=True) for h in hosted]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 1)
        for pid in pids:
            self.close_pipeline(pid, 1.0)
        self._watchdog.stop()
        self._sampler.stop()

    # -- placements -------------------------------------------------------------------------

    def place(self, placement: Placement) -> None:
        """Start the placed source's first run here (what refuses it is raised: the request fails)."""
        key = (placement.pipeline, placement.source)
        with self._lock:
            if self._closed:
                raise UnavailableError(f"the agent of node {self.node} is stopping")
            known = self._epochs.get(key, (0, False))[0]
            if placement.epoch <= known:
                raise StaleEpochError(
                    f"source '{placement.source}' of pipeline '{placement.pipeline}': placement {placement.epoch} "
                    f"is stale (this node has seen {known})"
                )
            self._epochs[key] = (placement.epoch, True)
            older = self._hosted.get(key)
            outputs = self._sets.get(placement.pipeline)
            if outputs is None:
                outputs = self._sets[placement.pipeline] = api.OutputSet()
        if older is not None:  # an earlier placement of it still here: it never runs twice
            self._stop(key, older, self._config.stop_timeout)
        job, first, policy = placement.job, placement.runs_before, self._policy
        served = ServedSource(
            placement.source,
            placement.url,
            lambda k: segment(confine(job, policy), first + k),
            outputs=outputs,
            config=self._config,
            watchdog=self._watchdog,
            key=f"{placement.pipeline}/{placement.source}",
            scope=lambda: self.tap.attach(placement.pipeline, placement.source),
        )
        hosted = _Hosted(placement.pipeline, served, placement.epoch)
        with self._lock:
            if self._epochs.get(key) != (placement.epoch, True) or self._closed:  # stopped meanwhile
                raise UnavailableError(f"source '{placement.source}' was stopped while it was starting")
            self._hosted[key] = hosted
        try:
            served.start()
        except BaseException:
            with self._lock:
                if self._hosted.get(key) is hosted:
                    del self._hosted[key]
            raise

    def unplace(self, pipeline: str, source: str, epoch: int, timeout: float) -> SourceView | None:
        """Stop the source's run here (placement ``epoch`` or an older one); its final view."""
        key = (pipeline, source)
        with self._lock:
            known = self._epochs.get(key, (0, False))[0]
            hosted = self._hosted.get(key)
            if epoch < known and (hosted is None or hosted.epoch > epoch):
                raise StaleEpochError(
                    f"source '{source}' of pipeline '{pipeline}': stop {epoch} is stale (this node has seen {known})"
                )
            self._epochs[key] = (max(known, epoch), False)
        if hosted is None:
            return None
        return self._stop(key, hosted, timeout)

    def _stop(self, key: tuple[str, str], hosted: _Hosted, timeout: float) -> SourceView:
        hosted.source.stop(timeout)
        view = self._view(hosted)
        view.samples = [s.as_dict() for s in hosted.source.history.since(None, time.time())]
        with self._lock:
            if self._hosted.get(key) is hosted:
                del self._hosted[key]
            self._left = [h for h in self._left if h.source.lingering]
            if hosted.source.lingering:
                self._left.append(hosted)
        return view

    def close_pipeline(self, pipeline: str, timeout: float) -> None:
        """The pipeline has ended: its output set here closed (its models freed), its epochs forgotten."""
        with self._lock:
            outputs = self._sets.pop(pipeline, None)
            for key in [k for k in self._epochs if k[0] == pipeline and k not in self._hosted]:
                del self._epochs[key]
        if outputs is not None:
            outputs.close(timeout)

    # -- what it shows ----------------------------------------------------------------------

    def _view(self, hosted: _Hosted) -> SourceView:
        served = hosted.source
        status, totals = served.snapshot()
        return SourceView(
            hosted.pipeline,
            served.id,
            hosted.epoch,
            status,
            totals,
            served.fps(),
            status["state"],
            served.lingering,
            hosted.behind,
        )

    def view(self, pipeline: str, source: str) -> SourceView | None:
        with self._lock:
            hosted = self._hosted.get((pipeline, source))
            if hosted is None:
                hosted = next((h for h in self._left if (h.pipeline, h.source.id) == (pipeline, source)), None)
        return None if hosted is None else self._view(hosted)

    def node_view(self) -> NodeView:
        with self._lock:
            hosted = list(self._hosted.values())
            sets = dict(self._sets)
            left = sum(h.source.lingering for h in self._left)
        published, dropped = self.tap.counts()
        return NodeView(
            self.node,
            self.incarnation,
            [self._view(h) for h in hosted],
            {pid: outputs.instances() for pid, outputs in sets.items()},
            self._cpu,
            published=published,
            dropped=dropped,
            left_behind=left,
            settings=self._settings,
        )

    def event_counts(self) -> tuple[int, int]:
        return self.tap.counts()

    def left_behind(self) -> int:
        with self._lock:
            return sum(h.source.lingering for h in self._left)

    def instances(self, pipeline: str) -> list[api.InstanceReport]:
        with self._lock:
            outputs = self._sets.get(pipeline)
        return [] if outputs is None else outputs.instances()

    def running_outputs(self, pipeline: str) -> list[api.RunningOutput]:
        """The pipeline's runs going on here (tests and diagnostics)."""
        with self._lock:
            outputs = self._sets.get(pipeline)
        return [] if outputs is None else outputs.outputs()

    def hosted(self, pipeline: str, source: str) -> ServedSource | None:
        """The source's runs here (tests and diagnostics)."""
        with self._lock:
            hosted = self._hosted.get((pipeline, source))
        return None if hosted is None else hosted.source

    def frame(
        self, pipeline: str, source: str, after: int, width: int | None, quality: int
    ) -> tuple[int, bytes] | None:
        with self._lock:
            hosted = self._hosted.get((pipeline, source))
        if hosted is None:
            return None
        seq, frame = hosted.source.preview.latest()
        if seq == after or frame is None:
            return None
        return seq, api.JpegEncoder(quality=quality, max_width=width).encode(frame)

    def history(self, pipeline: str, source: str, seconds: float | None, now: float) -> list[dict[str, Any]]:
        with self._lock:
            hosted = self._hosted.get((pipeline, source))
        return [] if hosted is None else [s.as_dict() for s in hosted.source.history.since(seconds, now)]

    # -- its own threads ----------------------------------------------------------------------

    def _check(self) -> None:
        now = time.monotonic()
        with self._lock:
            hosted = list(self._hosted.values())
        for h in hosted:
            h.source.check(now)

    def _sample(self) -> None:
        t = time.time()  # the samples' time is the browser's kind: seconds since the epoch
        wall, cpu = time.monotonic(), time.process_time()
        then, used = self._cpu_mark
        self._cpu_mark = (wall, cpu)
        self._cpu = (cpu - used) / (wall - then) if wall > then else 0.0
        with self._lock:
            hosted = list(self._hosted.values())
        for h in hosted:
            drops = _live_drops(h.source.sample(t))
            h.behind, h.live_drops = drops > h.live_drops, drops


class LocalNodes:
    """The service's own process as its one node (no ``--ray``): one :class:`LocalAgent`, whose
    runs publish straight to the service's bus."""

    def __init__(self, config: ServeConfig, publish: Publish) -> None:
        self._config = config
        self._publish = publish
        self.agent: LocalAgent | None = None
        self._info = NodeInfo(LOCAL, config.host, True, local_resources())

    def join(self) -> None:
        """Nothing to join: the node is this process."""

    def discover(self) -> list[NodeInfo]:
        return [self._info]

    def connect(self, info: NodeInfo) -> Agent:
        if self.agent is None:
            self.agent = LocalAgent(LOCAL, self._config, self._publish)
            self.agent.start()
        return self.agent

    def pull(self, agents: dict[str, Agent]) -> dict[str, NodeView | AgentUnavailableError]:
        return {} if self.agent is None else {LOCAL: self.agent.node_view()}

    def event_counts(self) -> Iterable[tuple[str, int, int]]:
        return []

    def close(self, *, keep: bool, timeout: float) -> None:
        if self.agent is not None:
            self.agent.close(timeout)
