"""The head's nodes: where each source runs, the choice of a node with room, and failover.

The placements are kept here, in the head (and in ``--state`` through the pipelines' files), never
only in an agent: a restarted agent starts empty. Each source's placement takes the next epoch of
one counter (it only grows, across every pipeline), so an agent can tell an old placement or stop
from a new one.

Once every :data:`PULL` seconds one thread of the head (the monitor) reads every agent
(:meth:`NodeSource.pull`: in this process at once; on a Ray cluster, the answers that came) and:

* relays the events the agents' runs gave to the service's bus (``/api/events``);
* ends a source's move gap at its first frame on its new node;
* declares a node lost when its node source says it left (Ray's node table), when its agent is
  gone, or when its agent has not answered for half of ``failover_timeout``; a restarted agent
  (another incarnation) has lost the runs it held. Every source placed there is placed again on
  the node with the most room (:mod:`avdnn.serve.placement`), continuing into a new output
  segment, its move counted;
* stops every run an agent holds that the head has placed elsewhere or later (a partitioned node
  that came back, a message that arrived late): a source never runs twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from avdnn import api
from avdnn.serve.agent import Agent, AgentUnavailableError, NodeView, Placement, StaleEpochError
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import LimitError, UnknownError
from avdnn.serve.eventbus import Publish
from avdnn.serve.placed import PlacedSource
from avdnn.serve.placement import NodeInfo, choose, groups, node_row
from avdnn.serve.watchdog import Watchdog

__all__ = ["PULL", "NodeSource", "Nodes"]

log = logging.getLogger("avdnn.serve")

#: seconds between two reads of every agent
PULL = 0.5
#: seconds between two looks at the node table (nodes that joined or left)
DISCOVER = 2.0
#: dead nodes kept listed
KEEP_DEAD = 32


class NodeSource(Protocol):
    """Where the nodes and their agents come from: this process (:class:`~avdnn.serve.host.LocalAgent`),
    or a Ray cluster (:mod:`avdnn.serve.cluster`)."""

    def join(self) -> None:
        """Reach the nodes (raises avdnn's error when they cannot be)."""
        ...

    def discover(self) -> list[NodeInfo]:
        """The nodes now (those that left: ``alive`` False)."""
        ...

    def connect(self, info: NodeInfo) -> Agent:
        """The node's agent, started or found (raises AgentUnavailableError when it cannot be)."""
        ...

    def pull(self, agents: dict[str, Agent]) -> dict[str, NodeView | AgentUnavailableError]:
        """The views of the agents that answered since the last pull (an error: that agent is gone)."""
        ...

    def event_counts(self) -> Iterable[tuple[str, int, int]]:
        """Its own counted sinks (``relay``: events carried from the nodes to the head)."""
        ...

    def close(self, *, keep: bool, timeout: float) -> None:
        """Stop the agents (``keep``: leave them and their runs to the next head)."""
        ...


class _Node:
    def __init__(self, info: NodeInfo) -> None:
        self.info = info
        self.agent: Agent | None = None
        self.view: NodeView | None = None
        self.seen = time.monotonic()
        self.lost: str | None = None
        self.draining = False


class Nodes:
    """The nodes of one service, the placements of its sources, and the monitor keeping them."""

    def __init__(self, config: ServeConfig, source: NodeSource, publish: Publish) -> None:
        self._config = config
        self._source = source
        self._publish = publish
        self._lock = threading.Lock()
        self._nodes: dict[str, _Node] = {}
        self._placed: dict[tuple[str, str], PlacedSource] = {}
        self._epoch = 0
        self._lost_after = max(config.failover_timeout / 2, 2 * PULL)
        self._next_discover = 0.0
        self._monitor = Watchdog(PULL, self._tick, name="avdnn-serve-nodes")
        self._moving = threading.Lock()
        #: (published, dropped) of the agents' incarnations that are over
        self._retired = (0, 0)
        #: set once the service has restored its pipelines: runs no placement claims are stopped after
        self.ready = False
        #: told the pipeline id whose placements changed (the service keeps them in --state)
        self.on_moved: Callable[[str], None] | None = None

    # -- life -------------------------------------------------------------------------------

    def start(self, wait: float = 0.0) -> None:
        """Find the nodes and start (or find) their agents; wait up to ``wait`` s for each to answer."""
        self._discover(time.monotonic())
        end = time.monotonic() + wait
        while True:
            self._pull(time.monotonic())
            with self._lock:
                pending = [n for n in self._nodes.values() if n.info.alive and n.agent is not None and n.view is None]
            if not pending or time.monotonic() >= end:
                break
            time.sleep(PULL / 5)  # the agents' first answers: nothing to wait on across processes
        self._monitor.start()

    def join(self) -> None:
        """Reach the nodes now, before the service serves (a cluster that is not there: its error)."""
        self._source.join()

    def close(self, *, keep: bool) -> None:
        """Stop the monitor, then the agents (``keep``: leave them and their runs to the next head)."""
        self.ready = False
        self._monitor.stop()
        self._source.close(keep=keep, timeout=self._config.stop_timeout)

    def agent(self, node: str) -> Agent | None:
        with self._lock:
            n = self._nodes.get(node)
            return None if n is None else n.agent

    def at_least(self, epoch: int) -> None:
        """Epochs given from now on are above ``epoch`` (one kept in the state)."""
        with self._lock:
            self._epoch = max(self._epoch, epoch)

    # -- placing ----------------------------------------------------------------------------

    def place(self, placed: PlacedSource, *, node: str | None = None, kept: tuple[str, int] | None = None) -> None:
        """Run ``placed`` on ``node``, or the node with the most room; ``kept``: its placement before
        the head restarted, adopted as it is when that node's agent still runs it at that epoch."""
        key = (placed.pipeline, placed.id)
        if kept is not None and self._adopt(placed, kept):
            return
        with self._lock:
            target = node if node is not None else self._choose(placed)
            if target not in self._nodes or self._nodes[target].agent is None:
                raise UnknownError(f"no node '{target}'")
            self._epoch = max(self._epoch, kept[1] if kept is not None else 0) + 1
            placed.bind(target, self._epoch)
            self._placed[key] = placed
            agent = self._nodes[target].agent
        assert agent is not None
        try:
            agent.place(
                Placement(
                    placed.pipeline, placed.id, placed.url, placed.make_job(target), placed.epoch, placed.carried.runs
                )
            )
        except BaseException:
            self.unplaced(placed)
            raise

    def _adopt(self, placed: PlacedSource, kept: tuple[str, int]) -> bool:
        node, epoch = kept
        agent = self.agent(node)
        view = agent.view(placed.pipeline, placed.id) if agent is not None else None
        if view is None or view.epoch != epoch:
            return False
        with self._lock:
            self._epoch = max(self._epoch, epoch)
            placed.bind(node, epoch)
            self._placed[(placed.pipeline, placed.id)] = placed
        log.info("avdnn serve: %s/%s adopted on node %s (placement %d)", placed.pipeline, placed.id, node, epoch)
        return True

    def unplaced(self, placed: PlacedSource) -> None:
        """``placed`` has left (stopped, or its placement failed): no longer in the table."""
        with self._lock:
            if self._placed.get((placed.pipeline, placed.id)) is placed:
                del self._placed[(placed.pipeline, placed.id)]

    def _choose(self, placed: PlacedSource, avoid: str | None = None) -> str:
        """The node with the most room for ``placed`` (under the lock); LimitError when none has it."""
        up = [
            (n.info, n.view)
            for n in self._nodes.values()
            if n.view is not None and n.lost is None and n.info.alive and not n.draining and n.info.id != avoid
        ]
        return choose(placed, up, self._placed.values(), self._config.max_sources_per_node)

    def close_pipeline(self, pipeline: str, timeout: float) -> None:
        """The pipeline has ended: its shared models freed on every node."""
        for agent in self._agents():
            try:
                agent.close_pipeline(pipeline, timeout)
            except AgentUnavailableError:
                continue

    def _agents(self, *, lost: bool = False) -> list[Agent]:
        """The agents of the nodes up (``lost``: of those lost too, as last seen)."""
        with self._lock:
            return [n.agent for n in self._nodes.values() if n.agent is not None and (lost or n.lost is None)]

    def _retire(self, view: NodeView | None) -> None:
        """An agent's incarnation is over (restarted, or its node forgotten): its counts are kept."""
        if view is not None:
            with self._lock:
                sent, lost = self._retired
                self._retired = (sent + view.published, lost + view.dropped)

    # -- what they show ---------------------------------------------------------------------

    def instances(self, pipeline: str) -> list[tuple[str, api.InstanceReport]]:
        """The pipeline's shared model instances, node by node."""
        return [(agent.node, r) for agent in self._agents() for r in agent.instances(pipeline)]

    def left_behind(self) -> int:
        return sum(agent.left_behind() for agent in self._agents())

    def event_counts(self) -> Iterable[tuple[str, int, int]]:
        """``listener``: the events every node's runs gave (a node lost or an agent restarted: as
        last seen, so the counts never go back); then the node source's own sinks."""
        with self._lock:
            sent, lost = self._retired
        for agent in self._agents(lost=True):
            published, dropped = agent.event_counts()
            sent, lost = sent + published, lost + dropped
        return [("listener", sent, lost), *self._source.event_counts()]

    def listed(self) -> list[dict[str, Any]]:
        """Every node (``GET /api/nodes``): id, address, alive, its sources, load, model instances."""
        with self._lock:
            nodes = list(self._nodes.values())
            placed = list(self._placed.values())
        rows = []
        for n in nodes:
            mine = sorted(f"{p.pipeline}/{p.id}" for p in placed if p.node == n.info.id and p.lost is None)
            rows.append(node_row(n.info, None if n.lost else n.view, n.lost, n.draining, mine))
        return rows

    def node_of(self, node: str) -> _Node:
        with self._lock:
            n = self._nodes.get(node)
        if n is None:
            raise UnknownError(f"no node '{node}'")
        return n

    # -- drain ------------------------------------------------------------------------------

    def drain(self, node: str, on: bool = True) -> dict[str, Any]:
        """Mark ``node`` draining (no new source goes there) and move its sources to the others
        (each stopped there, its output finished, then placed again: a move); ``on=False`` ends it."""
        n = self.node_of(node)
        n.draining = on
        moved: list[dict[str, str]] = []
        kept: list[dict[str, str]] = []
        if on:
            with self._lock:
                mine = [p for p in self._placed.values() if p.node == node and not p.removing]
            for group in groups(mine):
                where = self._move(group, stop=True)
                rows = [{"pipeline": p.pipeline, "source": p.id} for p in group]
                if where is None:
                    kept += [dict(r, cause=group[0].lost[1] if group[0].lost else "no room") for r in rows]
                else:
                    moved += [dict(r, to=where) for r in rows]
        return {"node": node, "draining": on, "moved": moved, "left": kept}

    # -- the monitor ------------------------------------------------------------------------

    def _discover(self, now: float) -> None:
        self._next_discover = now + DISCOVER
        for info in self._source.discover():
            with self._lock:
                n = self._nodes.get(info.id)
                if n is None:
                    if not info.alive:
                        continue
                    n = self._nodes[info.id] = _Node(info)
                    log.info("avdnn serve: node %s (%s) joined", info.id, info.address)
                was_alive, n.info = n.info.alive, info
            if not info.alive and was_alive:
                self._lose(n, "its node left the cluster")
            if info.alive and n.agent is None:
                try:
                    n.agent = self._source.connect(info)
                    n.seen = time.monotonic()
                except AgentUnavailableError as exc:
                    log.warning("avdnn serve: node %s: no agent: %s", info.id, exc.oneline())
        with self._lock:
            dead = [k for k, n in self._nodes.items() if not n.info.alive]
            gone = [self._nodes.pop(k) for k in (dead[:-KEEP_DEAD] if len(dead) > KEEP_DEAD else [])]
        for n in gone:
            self._retire(n.view)

    def _tick(self) -> None:
        now = time.monotonic()
        if now >= self._next_discover:
            self._discover(now)
        self._pull(now)
        with self._lock:
            silent = [n for n in self._nodes.values() if n.lost is None and n.agent is not None and n.info.alive]
        for n in silent:
            if now - n.seen > self._lost_after:
                self._lose(n, f"its agent did not answer for {now - n.seen:.0f} s")
        with self._lock:
            waiting = [p for p in self._placed.values() if p.lost is not None and not p.removing]
        if waiting and self._moving.acquire(blocking=False):
            threading.Thread(target=self._failover, args=(waiting,), name="avdnn-serve-failover", daemon=True).start()

    def _pull(self, now: float) -> None:
        with self._lock:
            agents = {k: n.agent for k, n in self._nodes.items() if n.agent is not None and n.info.alive}
        for node, got in self._source.pull(agents).items():
            with self._lock:
                n = self._nodes.get(node)
            if n is None:
                continue
            if isinstance(got, AgentUnavailableError):
                self._lose(n, got.message)
                continue
            n.seen = now
            before, n.view = n.view, got
            if n.lost is not None:
                log.warning("avdnn serve: node %s answers again", node)
                n.lost = None
            if before is not None and before.incarnation != got.incarnation:
                self._retire(before)
                self._lose_sources(node, "its agent was restarted", keep=got)
            for _, pid, sid, record in got.events:
                self._publish(pid, sid, record)
            self._observe(node, got)

    def _observe(self, node: str, view: NodeView) -> None:
        stale = []
        with self._lock:
            for sv in view.sources:
                p = self._placed.get((sv.pipeline, sv.source))
                if p is not None and p.node == node and p.epoch == sv.epoch:
                    p.observe(sv)
                elif self.ready and (p is None or not p.removing):
                    stale.append((sv.pipeline, sv.source, sv.epoch))
            agent = self._nodes[node].agent
        if stale and agent is not None:
            threading.Thread(target=self._stop_stale, args=(node, agent, stale), daemon=True).start()

    def _stop_stale(self, node: str, agent: Agent, stale: list[tuple[str, str, int]]) -> None:
        for pid, sid, epoch in stale:
            log.warning("avdnn serve: node %s still ran %s/%s (placement %d): stopped", node, pid, sid, epoch)
            try:
                agent.unplace(pid, sid, epoch, self._config.stop_timeout)
            except (StaleEpochError, AgentUnavailableError):
                continue

    def _lose(self, n: _Node, why: str) -> None:
        if n.lost is not None:
            return
        n.lost = why
        log.warning("avdnn serve: node %s lost: %s", n.info.id, why)
        self._lose_sources(n.info.id, f"its node was lost ({why}): moving it")

    def _lose_sources(self, node: str, why: str, keep: NodeView | None = None) -> None:
        held = {(s.pipeline, s.source, s.epoch) for s in keep.sources} if keep is not None else set()
        with self._lock:
            gone = [p for p in self._placed.values() if p.node == node and p.lost is None and not p.removing]
        for p in gone:
            if (p.pipeline, p.id, p.epoch) not in held:
                p.leave(why)

    def _failover(self, waiting: list[PlacedSource]) -> None:
        try:
            for group in groups(waiting):
                self._move(group, stop=False)
        finally:
            self._moving.release()

    def _move(self, group: list[PlacedSource], *, stop: bool) -> str | None:
        """Place ``group`` (one source, or an args pipeline's) on the node with the most room; with
        ``stop``, each is first stopped where it runs (a drain). The node, or None: none has room."""
        old = group[0].node
        with self._lock:
            try:
                target = self._choose(group[0], avoid=old if stop else None)
            except LimitError as exc:
                for p in group:
                    if p.lost is not None:
                        p.lost = (p.lost[0], f"{p.lost[1].split(': ')[0]}: waiting: {exc.message}")
                return None
        for p in group:
            if stop:
                agent = self.agent(old) if old is not None else None
                try:
                    last = agent.unplace(p.pipeline, p.id, p.epoch, self._config.stop_timeout) if agent else None
                except (StaleEpochError, AgentUnavailableError):
                    last = None
                p.leave(f"drained from node {old}", last=last)
            try:
                self.place(p, node=target)
            except Exception as exc:  # noqa: BLE001 - logged; it is tried again at the next look
                log.warning("avdnn serve: %s/%s not placed on %s: %s", p.pipeline, p.id, target, exc)
                with self._lock:
                    self._placed[(p.pipeline, p.id)] = p  # still waiting for a node
                continue
            p.moved()
            log.warning("avdnn serve: %s/%s moved to node %s", p.pipeline, p.id, target)
        if self.on_moved is not None:
            for pid in {p.pipeline for p in group}:
                self.on_moved(pid)
        return target
