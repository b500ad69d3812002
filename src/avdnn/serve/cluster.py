"""The service's nodes on a Ray cluster (``avdnn serve --ray ADDRESS``): one agent actor per node.

The head (this process) joins the cluster as a driver and, for every node Ray lists as alive,
starts the node's agent (:class:`~avdnn.serve.rayagent.AgentActor`) or finds it by its name
(``avdnn-agent-NODEID`` in the ``avdnn-serve`` namespace: ``get_if_exists``), pinned to the node
(``NodeAffinitySchedulingStrategy(node, soft=False)``), restarted by Ray when its process dies
(``max_restarts=-1``; no call is retried: the head decides what a lost call means), holding no CPU
of the node (``num_cpus=0``: its runs' threads use what the node has), threaded (a preview never
waits behind a placement). With ``--state`` the agents are detached: they outlive the head, and
a restarted head adopts their runs; without it they belong to the head and end with it.

:class:`RemoteAgent` is the head's handle on one agent: placements, stops, previews and history are
actor calls, each with a bound; status, totals, instances and events are read from the node's
view the monitor pulled last (:meth:`RayNodes.pull`: at most one pull in flight per node, the
answers that came collected every half second). Ray's own errors are translated here, and only
these: a call that found the agent dead, restarting or unschedulable (its node gone), or that
timed out, is :class:`~avdnn.serve.agent.AgentUnavailableError`; an error the agent raised (a
stale epoch, its own confinement) comes back as the avdnn error it was.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import threading
from collections.abc import Iterable
from typing import Any

from avdnn import api
from avdnn._util.rayinit import import_ray, is_loopback, probe
from avdnn.errors import AvdnnError, from_errno
from avdnn.serve.agent import AgentUnavailableError, NodeView, Placement, SourceView, settings_digest
from avdnn.serve.config import ServeConfig
from avdnn.serve.nodes import PULL
from avdnn.serve.placement import NodeInfo
from avdnn.serve.rayagent import AgentActor

__all__ = ["NAMESPACE", "RayNodes", "RemoteAgent", "agent_name"]

log = logging.getLogger("avdnn.serve")

#: the Ray namespace of the agents (a restarted head finds them there by name)
NAMESPACE = "avdnn-serve"
#: seconds a placement, a stop (beyond its own bound), a preview frame or a history may take
CALL = 30.0
FRAME = 5.0
#: seconds a pull waits for the agents' answers before the monitor goes on
COLLECT = PULL / 2
_HINT = "pip install 'avdnn[serve,ray]'"


def agent_name(node: str) -> str:
    """The name of node ``node``'s agent actor."""
    return f"avdnn-agent-{node}"


def _translate(exc: BaseException, node: str) -> BaseException:
    """Ray's error of a call to ``node``'s agent as avdnn's (only those this seam knows)."""
    from ray.exceptions import ActorUnschedulableError, GetTimeoutError, RayActorError, RayTaskError

    if isinstance(exc, RayTaskError) and isinstance(exc.cause, AvdnnError):
        return exc.cause  # the agent's own refusal, as it raised it
    if isinstance(exc, GetTimeoutError):
        return AgentUnavailableError(f"the agent of node {node} did not answer in time")
    if isinstance(exc, (RayActorError, ActorUnschedulableError)):
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        return AgentUnavailableError(f"the agent of node {node} is gone: {lines[0] if lines else 'unknown cause'}")
    return exc


class RemoteAgent:
    """The head's handle on node ``node``'s agent actor (an :class:`~avdnn.serve.agent.Agent`)."""

    def __init__(self, node: str, handle: Any) -> None:
        self.node = node
        self.handle = handle
        self._lock = threading.Lock()
        self._view: NodeView | None = None
        self._index: dict[tuple[str, str], SourceView] = {}
        #: the agent's incarnation and newest event number the head has seen
        self.incarnation: str | None = None
        self.cursor = 0

    def _call(self, ref: Any, timeout: float) -> Any:
        import ray

        try:
            return ray.get(ref, timeout=timeout)
        except Exception as exc:
            raise _translate(exc, self.node) from exc

    def update(self, view: NodeView) -> None:
        """A pull's answer: what reads of the agent see until the next one."""
        with self._lock:
            self._view = view
            self._index = {(s.pipeline, s.source): s for s in view.sources}
            self.incarnation, self.cursor = view.incarnation, view.event_cursor

    # -- calls --------------------------------------------------------------------------------

    def place(self, placement: Placement) -> None:
        self._call(self.handle.place.remote(placement), CALL)

    def unplace(self, pipeline: str, source: str, epoch: int, timeout: float) -> SourceView | None:
        final: SourceView | None = self._call(
            self.handle.unplace.remote(pipeline, source, epoch, timeout), timeout + CALL
        )
        with self._lock:
            self._index.pop((pipeline, source), None)
        return final

    def close_pipeline(self, pipeline: str, timeout: float) -> None:
        self._call(self.handle.close_pipeline.remote(pipeline, timeout), timeout + CALL)

    def frame(
        self, pipeline: str, source: str, after: int, width: int | None, quality: int
    ) -> tuple[int, bytes] | None:
        got: tuple[int, bytes] | None = self._call(
            self.handle.frame.remote(pipeline, source, after, width, quality), FRAME
        )
        return got

    def history(self, pipeline: str, source: str, seconds: float | None, now: float) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._call(self.handle.history.remote(pipeline, source, seconds, now), FRAME)
        return rows

    # -- reads of the last pull ---------------------------------------------------------------

    def view(self, pipeline: str, source: str) -> SourceView | None:
        with self._lock:
            return self._index.get((pipeline, source))

    def node_view(self) -> NodeView:
        with self._lock:
            return self._view if self._view is not None else NodeView(self.node, self.incarnation or "")

    def instances(self, pipeline: str) -> list[api.InstanceReport]:
        with self._lock:
            return list(self._view.instances.get(pipeline, [])) if self._view is not None else []

    def event_counts(self) -> tuple[int, int]:
        with self._lock:
            return (self._view.published, self._view.dropped) if self._view is not None else (0, 0)

    def left_behind(self) -> int:
        with self._lock:
            return self._view.left_behind if self._view is not None else 0


class RayNodes:
    """The nodes of the Ray cluster at ``config.ray`` (a :class:`~avdnn.serve.nodes.NodeSource`);
    ``keep``: the agents are detached, left running when the head stops (``--state``)."""

    def __init__(self, config: ServeConfig, *, keep: bool) -> None:
        self._config = config
        self._keep = keep
        self._ray: Any = None
        self._owned = False
        self._agents: dict[str, RemoteAgent] = {}
        self._pending: dict[str, tuple[RemoteAgent, Any]] = {}
        self._lock = threading.Lock()
        #: events carried from the nodes to the head, and lost from a node's relay before a pull
        self.relayed = 0
        self.lost = 0
        #: what every agent is given: the service's settings without its token, state or pipelines
        self._agent_config = dataclasses.replace(config, token=None, no_auth=False, state=None, pipelines=[], ray=None)
        self._settings = settings_digest(self._agent_config)

    def join(self) -> None:
        """Join the cluster now (an address where nothing listens fails at once, before serving)."""
        self._joined()

    def _joined(self) -> Any:
        if self._ray is None:
            address = self._config.ray
            ray = import_ray(loopback=is_loopback(address), hint=_HINT)
            if not ray.is_initialized():
                if address is not None and address != "auto" and "://" not in address:
                    probe(address)
                try:
                    ray.init(
                        address=address,
                        namespace=NAMESPACE,
                        include_dashboard=False,
                        logging_level=logging.ERROR,
                        log_to_driver=False,
                    )
                except ConnectionError as exc:  # what ray.init raises when it finds no cluster there
                    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
                    raise from_errno(
                        errno.ECONNREFUSED, f"cannot join the Ray cluster at '{address}': {lines[-1] if lines else exc}"
                    ) from exc
                self._owned = True
            self._ray = ray
        return self._ray

    def discover(self) -> list[NodeInfo]:
        ray = self._joined()
        return [
            NodeInfo(
                n["NodeID"], str(n.get("NodeManagerAddress", "")), bool(n.get("Alive")), dict(n.get("Resources", {}))
            )
            for n in ray.nodes()
        ]

    def connect(self, info: NodeInfo) -> RemoteAgent:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._joined()
        options: dict[str, Any] = {
            "name": agent_name(info.id),
            "namespace": NAMESPACE,
            "get_if_exists": True,
            "max_restarts": -1,
            "max_task_retries": 0,
            "max_concurrency": 32,
            "num_cpus": 0,
            "scheduling_strategy": NodeAffinitySchedulingStrategy(info.id, soft=False),
        }
        if self._keep:
            options["lifetime"] = "detached"
        handle = ray.remote(AgentActor).options(**options).remote(info.id, self._agent_config)
        agent = RemoteAgent(info.id, handle)
        with self._lock:
            self._agents[info.id] = agent
        return agent

    def pull(self, agents: dict[str, Any]) -> dict[str, NodeView | AgentUnavailableError]:
        """Ask every agent that has no pull in flight, collect the answers that come within
        :data:`COLLECT` seconds; an agent that is gone answers with its error."""
        ray = self._joined()
        for node, agent in agents.items():
            if node not in self._pending and isinstance(agent, RemoteAgent):
                self._pending[node] = (agent, agent.handle.view.remote(agent.cursor, agent.incarnation))
        refs = {ref: node for node, (_, ref) in self._pending.items()}
        if not refs:
            return {}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=COLLECT)
        out: dict[str, NodeView | AgentUnavailableError] = {}
        for ref in ready:
            node = refs[ref]
            agent, _ = self._pending.pop(node)
            try:
                view: NodeView = agent._call(ref, 0)
            except AgentUnavailableError as exc:
                out[node] = exc
                continue
            if view.settings != self._settings:  # an agent another head started: given ours first
                agent.handle.configure.remote(self._agent_config)
                continue
            agent.update(view)
            self.relayed += len(view.events)
            self.lost += view.relay_lost
            out[node] = view
        return out

    def event_counts(self) -> Iterable[tuple[str, int, int]]:
        return [("relay", self.relayed, self.lost)]

    def close(self, *, keep: bool, timeout: float) -> None:
        """Leave the agents to the next head (``keep``), or stop their runs and end them."""
        if self._ray is None:
            return
        ray = self._ray
        if not keep:
            with self._lock:
                agents = list(self._agents.values())
            closing = [a.handle.close.remote(timeout) for a in agents]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=timeout + 2)
            for a in agents:
                try:
                    ray.kill(a.handle, no_restart=True)
                except Exception as exc:
                    err = _translate(exc, a.node)
                    if not isinstance(err, AgentUnavailableError):
                        raise err from exc
        if self._owned:
            ray.shutdown()
            self._ray = None
