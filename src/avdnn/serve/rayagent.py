"""The agent of one node of a Ray cluster, as the actor the head starts there (:mod:`avdnn.serve.cluster`).

The actor is the node's :class:`~avdnn.serve.host.LocalAgent` (the runs, on the same machinery as
in one process), reached through Ray: the head places and stops sources with actor calls, and
pulls a :class:`~avdnn.serve.agent.NodeView` once every half second. The events the node's runs
give wait for that pull in a bounded relay (:class:`Relay`): a head that does not pull for long
loses the oldest, counted. The actor is named after its node and pinned to it; Ray restarts it
when its process dies, and a restarted actor runs this constructor again: it starts empty (the
head knows its placements, and places its sources again).

This module does not import Ray: the head wraps the class with ``ray.remote``. Every method is
called on one of the actor's threads (it is a threaded actor), so a preview never waits behind a
placement.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from typing import Any

from avdnn import api
from avdnn.serve.agent import NodeView, Placement, SourceView
from avdnn.serve.config import ServeConfig
from avdnn.serve.host import LocalAgent

__all__ = ["RELAY", "AgentActor", "Relay"]

#: events a node keeps for the head's next pull, and the most one pull carries
RELAY = 8192
PER_PULL = 2048


class Relay:
    """The node's events until the head pulls them: numbered, bounded (the oldest go first)."""

    def __init__(self, keep: int = RELAY) -> None:
        self._lock = threading.Lock()
        self._events: deque[tuple[int, str, str, dict[str, Any]]] = deque(maxlen=keep)
        self._next = 0

    def put(self, pipeline: str, source: str, record: dict[str, Any]) -> None:
        """One event of a run (its tap's callback, on the run's thread)."""
        with self._lock:
            self._next += 1
            self._events.append((self._next, pipeline, source, record))

    def since(self, after: int, limit: int = PER_PULL) -> tuple[list[tuple[int, str, str, dict[str, Any]]], int, int]:
        """(the events numbered after ``after``, at most ``limit``; the newest number given; how many
        after ``after`` were lost before this pull)."""
        with self._lock:
            events = [e for e in self._events if e[0] > after][:limit]
            oldest = self._events[0][0] if self._events else self._next + 1
            lost = max(0, oldest - after - 1)
        cursor = events[-1][0] if events else max(after, oldest - 1)
        return events, cursor, lost


class AgentActor:
    """Node ``node``'s agent (Ray actor): its runs, and the relay of their events."""

    def __init__(self, node: str, config: ServeConfig) -> None:
        self._relay = Relay()
        self.agent = LocalAgent(node, config, self._relay.put)
        self.agent.start()

    def ping(self) -> tuple[str, int]:
        """Its incarnation and its process id (answers once it is up)."""
        return self.agent.incarnation, os.getpid()

    def configure(self, config: ServeConfig) -> None:
        self.agent.configure(config)

    def view(self, after: int, incarnation: str | None) -> NodeView:
        """Everything it hosts, with its events after ``after`` (all of them when the head knew
        another incarnation: numbers start again with each)."""
        view = self.agent.node_view()
        start = after if incarnation == self.agent.incarnation else 0
        view.events, view.event_cursor, view.relay_lost = self._relay.since(start)
        return view

    def place(self, placement: Placement) -> None:
        self.agent.place(placement)

    def unplace(self, pipeline: str, source: str, epoch: int, timeout: float) -> SourceView | None:
        return self.agent.unplace(pipeline, source, epoch, timeout)

    def close_pipeline(self, pipeline: str, timeout: float) -> None:
        self.agent.close_pipeline(pipeline, timeout)

    def frame(
        self, pipeline: str, source: str, after: int, width: int | None, quality: int
    ) -> tuple[int, bytes] | None:
        return self.agent.frame(pipeline, source, after, width, quality)

    def history(self, pipeline: str, source: str, seconds: float | None, now: float) -> list[dict[str, Any]]:
        return self.agent.history(pipeline, source, seconds, now)

    def instances(self, pipeline: str) -> list[api.InstanceReport]:
        return self.agent.instances(pipeline)

    def close(self, timeout: float) -> None:
        """Stop every run here (outputs finished); the head kills the actor after."""
        self.agent.close(timeout)
