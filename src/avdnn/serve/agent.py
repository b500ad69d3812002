"""The seam between the service's head and the runs: a node agent, and what crosses to and from it.

The head (the REST API, placement, the state) never runs a source itself: it places each source
on a node's agent with a :class:`Placement`, and reads what the agent says of it back as views.
One implementation hosts the runs in this process (:class:`~avdnn.serve.host.LocalAgent`, the
service without ``--ray``, and the body of every cluster agent); the other is the head's handle
on a Ray actor hosting one (:mod:`avdnn.serve.cluster`). Everything that crosses is plain data
(it is pickled on its way to and from another machine): a job, numbers, dicts.

Each placement of a source has an epoch, one more than the source's placement before: an agent
refuses a placement or a stop whose epoch is older than one it has seen for the source, so a
message that arrives late, or an agent that was cut off while its sources moved, never runs a
source a second time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from avdnn import api
from avdnn.serve.accounting import Totals
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import ConflictError, UnavailableError

__all__ = [
    "LOCAL",
    "Agent",
    "AgentUnavailableError",
    "NodeView",
    "Placement",
    "SourceView",
    "StaleEpochError",
    "settings_digest",
]

#: the node id of the service's own process (no ``--ray``)
LOCAL = "local"


class StaleEpochError(ConflictError):
    """A placement or a stop older than one the agent has seen for the source: refused (409)."""


class AgentUnavailableError(UnavailableError):
    """A node's agent did not answer (its node is gone, cut off, or it is being restarted): 503."""


@dataclass(frozen=True)
class Placement:
    """Source ``source`` of pipeline ``pipeline`` to run on a node, as of ``epoch``.

    ``job`` is the job as the service's parser made it, before the confinement: the agent confines
    it against its own media root before each of its runs. ``runs_before``: the runs the source
    had elsewhere (its first run here writes a new segment, ``NAME.N.EXT``, when its files are there).
    """

    pipeline: str
    source: str
    url: str
    job: api.Job
    epoch: int
    runs_before: int = 0


@dataclass
class SourceView:
    """One hosted source as its agent sees it now: its status row (:meth:`ServedSource.status`),
    its accounting, and whether it keeps its input's rate (no frame lost to its live queue lately)."""

    pipeline: str
    source: str
    epoch: int
    status: dict[str, Any]
    totals: Totals
    fps: float
    state: str
    lingering: bool = False
    behind: bool = False
    #: its history (:meth:`History.as_dict` rows), in the final view a stop answers with only
    samples: list[dict[str, Any]] | None = None


@dataclass
class NodeView:
    """Everything an agent hosts, at one moment, and its own figures (what placement weighs)."""

    node: str
    #: made when the agent started: another one means the agent was restarted (its runs are gone)
    incarnation: str
    sources: list[SourceView] = field(default_factory=list)
    #: the shared model instances of each pipeline on this node
    instances: dict[str, list[api.InstanceReport]] = field(default_factory=dict)
    #: the agent's process CPU over its last second, in CPUs (1.0: one core busy)
    cpu: float = 0.0
    #: events its runs gave: (number on this agent, pipeline, source, the event) after the cursor asked
    events: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    #: the number of the agent's newest event (what the next pull asks after), and the events lost
    #: from its relay before the head pulled them
    event_cursor: int = 0
    relay_lost: int = 0
    #: the events its runs' listener sinks took and lost, all runs so far
    published: int = 0
    dropped: int = 0
    #: runs stopped but still blocked in their input
    left_behind: int = 0
    #: a digest of the settings the agent runs its sources with (:func:`settings_digest`)
    settings: str = ""


def settings_digest(config: ServeConfig) -> str:
    """A digest of the settings an agent is given: a head tells an agent started by another from its own."""
    return hashlib.sha256(repr(config).encode()).hexdigest()[:16]


class Agent(Protocol):
    """A node's agent as the head uses it (``node``: the node's id, hex on a Ray cluster)."""

    node: str

    def place(self, placement: Placement) -> None:
        """Start the source's run (raises what refuses it: a stale epoch, its confinement, its start)."""
        ...

    def unplace(self, pipeline: str, source: str, epoch: int, timeout: float) -> SourceView | None:
        """Stop its run as Ctrl-C stops one, within ``timeout``; its final view (None: not hosted here)."""
        ...

    def close_pipeline(self, pipeline: str, timeout: float) -> None:
        """The pipeline has ended: its shared models on this node are freed."""
        ...

    def view(self, pipeline: str, source: str) -> SourceView | None:
        """The source as of now (None: not hosted here)."""
        ...

    def node_view(self) -> NodeView:
        """Everything it hosts (the events since the head's last pull)."""
        ...

    def instances(self, pipeline: str) -> list[api.InstanceReport]:
        """The pipeline's shared model instances on this node."""
        ...

    def frame(
        self, pipeline: str, source: str, after: int, width: int | None, quality: int
    ) -> tuple[int, bytes] | None:
        """The newest frame of the source's chain as a JPEG when newer than ``after``: (its number, the JPEG)."""
        ...

    def history(self, pipeline: str, source: str, seconds: float | None, now: float) -> list[dict[str, Any]]:
        """The source's samples (:mod:`avdnn.serve.history`), as the API shows them."""
        ...

    def event_counts(self) -> tuple[int, int]:
        """(published, dropped) of its runs' listener sinks so far."""
        ...

    def left_behind(self) -> int:
        """Its runs stopped but still blocked in their input."""
        ...
