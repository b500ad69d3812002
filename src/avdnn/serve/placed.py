"""A source as the head knows it: where it runs now (its node and placement epoch), and what it did
on the nodes it ran on before (it moved).

The head never runs a source: its node's agent does (:mod:`avdnn.serve.agent`), and the head reads
it through the agent (in this process, live; on a Ray cluster, as of the head's last pull). What
the API shows of a source is its agent's view with what only the head knows: the totals of its
earlier placements added to its accounting (a move never loses the counts of the runs before it),
the outputs it wrote there, its ``node``, its ``moves`` and the seconds they cost it
(``move_gap_seconds``: from the moment its node was lost, or it was stopped to move, to the first
frame on the next node; both in its totals, so a departed source keeps them), and its previews'
counts. A source whose node was lost shows ``offline`` with the cause until it runs elsewhere.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from avdnn import api
from avdnn._util.redact import redact_url
from avdnn.serve.accounting import Totals
from avdnn.serve.agent import Agent, AgentUnavailableError, SourceView
from avdnn.serve.preview import PreviewCounts
from avdnn.serve.source import KEEP_OUTPUTS

__all__ = ["Agents", "JobMaker", "PlacedSource"]

#: the raw job of a source for a node (the template's ``{node}`` filled with that node's id)
JobMaker = Callable[[str], api.Job]


class Agents(Protocol):
    """Where a placed source finds its node's agent (:class:`~avdnn.serve.nodes.Nodes`)."""

    def agent(self, node: str) -> Agent | None: ...


class PlacedSource:
    """Source ``sid`` of pipeline ``pipeline``; ``make_job(node)`` is its job on that node.

    ``resources``: what a node must have to run it (Ray's names: ``{"GPU": 1}``); ``group``: the
    sources of one group always run on one node (an ``args`` pipeline's outputs share its input)."""

    def __init__(
        self,
        pipeline: str,
        sid: str,
        url: str,
        make_job: JobMaker,
        agents: Agents,
        *,
        resources: dict[str, float] | None = None,
        group: str | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.id = sid
        self.url = url
        self.make_job = make_job
        self.resources = dict(resources or {})
        self.group = group
        self._agents = agents
        self._lock = threading.Lock()
        #: where it runs: the node and its placement's epoch (None/0: not placed yet)
        self.node: str | None = None
        self.epoch = 0
        #: the totals and outputs of its earlier placements (it moved), its moves and their gaps
        self.carried = Totals()
        self._outputs_before: list[str] = []
        self._outputs_total_before = 0
        self._gap_from: float | None = None
        #: (since, why): its node was lost and it waits to run elsewhere
        self.lost: tuple[float, str] | None = None
        self._last: SourceView | None = None  # the newest view of its current placement
        self._final: SourceView | None = None
        self.removing = False
        self.preview = PreviewCounts()

    # -- placement (the head's Nodes) ---------------------------------------------------------

    def bind(self, node: str, epoch: int) -> None:
        """It is being placed on ``node`` as of ``epoch``."""
        with self._lock:
            self.node, self.epoch = node, epoch

    def leave(self, why: str, *, at: float | None = None, last: SourceView | None = None) -> None:
        """Its placement is over (its node was lost, or it was stopped there to move): what it did
        there joins its carried totals, and the gap until its next first frame starts ``at``."""
        with self._lock:
            final = last if last is not None else self._last
            if final is not None and final.epoch == self.epoch:
                self.carried.merge(final.totals)
                self._outputs_before = [*self._outputs_before, *final.status.get("outputs", [])][-KEEP_OUTPUTS:]
                self._outputs_total_before += int(final.status.get("outputs_total", 0))
            self._last = None
            self.lost = (time.monotonic() if at is None else at, why)
            if self._gap_from is None:
                self._gap_from = self.lost[0]

    def moved(self) -> None:
        """It was placed again after :meth:`leave`: one more move."""
        with self._lock:
            self.carried.moves += 1
            self.lost = None

    def observe(self, view: SourceView) -> None:
        """The head's look at its current placement (each pull): the move's gap ends at its first frame."""
        with self._lock:
            if view.epoch != self.epoch:
                return
            self._last = view
            if self._gap_from is not None and view.status.get("frames", {}).get("written", 0) > 0:
                self.carried.move_gap += max(0.0, time.monotonic() - self._gap_from)
                self._gap_from = None

    # -- what it shows ------------------------------------------------------------------------

    def _current(self) -> SourceView | None:
        with self._lock:
            if self._final is not None:
                return self._final
            node, epoch, lost = self.node, self.epoch, self.lost
        agent = self._agents.agent(node) if node is not None and lost is None else None
        view = agent.view(self.pipeline, self.id) if agent is not None else None
        if view is not None and view.epoch == epoch:
            self.observe(view)
            return view
        with self._lock:
            return self._last

    def status(self) -> dict[str, Any]:
        """The source as the API shows it (:meth:`ServedSource.status` across its placements)."""
        view = self._current()
        with self._lock:
            carried = copy.deepcopy(self.carried) if self.carried != Totals() else None
            before, total_before = list(self._outputs_before), self._outputs_total_before
            lost, node = self.lost, self.node
        row = dict(view.status) if view is not None else self._empty()
        if carried is not None:
            totals = _sum(carried, view.totals if view is not None else None)
            row.update(totals.as_dict())
            row["outputs"] = [*before, *row["outputs"]][-KEEP_OUTPUTS:]
            row["outputs_total"] += total_before
        if lost is not None and not self.removing:
            row["state"], row["cause"], row["fps"] = "offline", lost[1], 0.0
        row["preview"] = self.preview.counts()
        row["node"] = node
        return row

    def _empty(self) -> dict[str, Any]:
        """Its row before any view of it came (being placed on a node of a cluster)."""
        return {
            "id": self.id,
            "url": redact_url(self.url),
            "state": "ended" if self.removing else "starting",
            "cause": None,
            "traceback": None,
            **Totals().as_dict(),
            "fps": 0.0,
            "latency": {"p50": None, "p95": None},
            "outputs": [],
            "outputs_total": 0,
            "retry_in": None,
        }

    def totals(self) -> Totals:
        """Every run's counts, on every node it ran on."""
        view = self._current()
        with self._lock:
            if self.carried == Totals():
                return view.totals if view is not None else Totals()
            return _sum(self.carried, view.totals if view is not None else None)

    @property
    def state(self) -> str:
        view = self._current()
        if self.lost is not None and not self.removing:
            return "offline"
        return "starting" if view is None else view.state

    def fps(self) -> float:
        view = self._current()
        return 0.0 if view is None or self.lost is not None else view.fps

    @property
    def lingering(self) -> bool:
        """Stopped, but its run is still blocked in its input (left behind): it still counts."""
        with self._lock:
            node, epoch = self.node, self.epoch
        agent = self._agents.agent(node) if node is not None else None
        view = agent.view(self.pipeline, self.id) if agent is not None else None
        return view is not None and view.epoch == epoch and view.lingering

    def history(self, seconds: float | None, now: float) -> list[dict[str, Any]]:
        """Its samples on its current node (a move starts them again; once stopped, its last ones)."""
        with self._lock:
            final = self._final
        if final is not None:
            return [s for s in final.samples or [] if seconds is None or s["t"] > now - seconds]
        node = self.node
        agent = self._agents.agent(node) if node is not None else None
        return [] if agent is None else agent.history(self.pipeline, self.id, seconds, now)

    def frame(self, after: int, width: int | None, quality: int) -> tuple[int, bytes] | None:
        """Its newest frame as a JPEG when newer than ``after`` (:meth:`Agent.frame`)."""
        node = self.node
        agent = self._agents.agent(node) if node is not None and self.lost is None else None
        return None if agent is None else agent.frame(self.pipeline, self.id, after, width, quality)

    # -- the end ------------------------------------------------------------------------------

    def stop(self, timeout: float) -> bool:
        """Stop it for good (removed, its pipeline deleted): its run as Ctrl-C stops one.

        True when its run has ended within ``timeout`` seconds (its output finished)."""
        with self._lock:
            self.removing = True
            node, epoch, lost = self.node, self.epoch, self.lost
        self.preview.closed.set()
        # a node lost may never answer: its run is stopped by the head when it does (no longer placed)
        agent = self._agents.agent(node) if node is not None and epoch and lost is None else None
        final = None
        with contextlib.suppress(AgentUnavailableError):  # its node is gone or cut off: its last view is all
            final = agent.unplace(self.pipeline, self.id, epoch, timeout) if agent is not None else None
        with self._lock:
            if final is None and self._last is not None:  # its node is gone: its last view, ended
                final = SourceView(**{**vars(self._last), "state": "ended", "lingering": False})
                final.status = {**final.status, "state": "ended"}
            self._final = final
            if self.lost is not None and final is not None:
                final.status = {**final.status, "cause": self.lost[1]}
        return final is None or not final.lingering


def _sum(carried: Totals, current: Totals | None) -> Totals:
    out = Totals()
    out.merge(carried)
    if current is not None:
        out.merge(current)
    return out
