"""Where a source goes: the node with the most room, by the agents' own figures.

A node qualifies when it is up, not draining, has every resource the source asks for (Ray's
names and amounts: ``{"GPU": 1}``) and holds fewer than ``max_sources_per_node`` sources; of
those, the first by (:func:`room`): none of its sources lost frames to their live queue lately
(all keep their input's rate), its CPU not saturated, the fewest sources per CPU, the lowest CPU
load. A node that just joined holds none: it gets the next sources.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from avdnn import api
from avdnn.serve.agent import NodeView
from avdnn.serve.errors import LimitError
from avdnn.serve.placed import PlacedSource

__all__ = ["SATURATED", "NodeInfo", "choose", "groups", "local_resources", "node_row", "room"]

#: a CPU load (in CPUs per CPU the node has) at or above which a node is saturated
SATURATED = 0.9


@dataclass
class NodeInfo:
    """A node as its node source lists it: id (Ray's hex id), address, alive, resources (Ray's names)."""

    id: str
    address: str
    alive: bool
    resources: dict[str, float] = field(default_factory=dict)


def room(node: NodeView, held: int, cpus: float) -> tuple[bool, bool, float, float]:
    """The sort key of a node for one more source (smallest first; :mod:`module docstring <.nodes>`)."""
    per_cpu = max(cpus, 1.0)
    behind = any(s.behind for s in node.sources)
    return behind, node.cpu / per_cpu >= SATURATED, held / per_cpu, node.cpu / per_cpu


def choose(
    placed: PlacedSource, up: list[tuple[NodeInfo, NodeView]], table: Iterable[PlacedSource], cap: int | None
) -> str:
    """The node of ``up`` with the most room for ``placed``, given where the sources of ``table``
    run and the per-node ``cap``; LimitError when none has room."""
    held: dict[str, int] = {}
    for p in table:
        if p.node is not None and p.lost is None:
            held[p.node] = held.get(p.node, 0) + 1
    fits = []
    for info, view in up:
        if any(info.resources.get(k, 0.0) < v for k, v in placed.resources.items()):
            continue
        if cap is not None and held.get(info.id, 0) >= cap:
            continue
        fits.append((room(view, held.get(info.id, 0), info.resources.get("CPU", 1.0)), info.id))
    if not fits:
        asked = ", ".join(f"{k} {v:g}" for k, v in sorted(placed.resources.items()))
        why = [f"asking {asked}"] if asked else []
        why += [f"at most {cap} per node (max_sources_per_node)"] if cap is not None else []
        raise LimitError(
            f"no node has room for source '{placed.id}'"
            + (f" ({'; '.join(why)})" if why else "")
            + f": {len(up)} node(s) up"
        )
    return min(fits)[1]


def node_row(
    info: NodeInfo, view: NodeView | None, lost: str | None, draining: bool, sources: list[str]
) -> dict[str, Any]:
    """A node as ``GET /api/nodes`` lists it (``view``: None while its agent is not up)."""
    cpus = info.resources.get("CPU", 0.0)
    instances = [] if view is None else [(pid, r) for pid, rs in view.instances.items() for r in rs]
    return {
        "id": info.id,
        "address": info.address,
        "alive": info.alive and lost is None,
        "agent": "lost" if lost else "up" if view is not None else "starting",
        "cause": lost,
        "draining": draining,
        "sources": sources,
        "source_count": len(sources),
        "load": {
            "cpu": round(view.cpu, 3) if view is not None else None,
            "cpus": cpus,
            "behind": sum(s.behind for s in view.sources) if view is not None else 0,
        },
        "resources": dict(info.resources),
        "instances": [{"pipeline": pid, **_instance_row(r)} for pid, r in instances],
    }


def groups(sources: list[PlacedSource]) -> list[list[PlacedSource]]:
    """The sources in the groups that move together (a source alone, or an args pipeline's)."""
    groups: dict[str, list[PlacedSource]] = {}
    for p in sources:
        groups.setdefault(p.group or f"{p.pipeline}/{p.id}", []).append(p)
    return list(groups.values())


def _instance_row(report: api.InstanceReport) -> dict[str, Any]:
    return {
        "name": report.name,
        "stream_count": len(report.streams),
        "inferences": report.inferences,
        "batches": report.batches,
        "mean_batch": round(report.mean_batch, 3),
    }


def local_resources() -> dict[str, float]:
    """This machine as a node's resources (Ray's names): its CPUs, and its NVIDIA GPUs
    (``CUDA_VISIBLE_DEVICES`` when set, else the driver's list)."""
    gpus = 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        gpus = len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    elif os.path.isdir("/proc/driver/nvidia/gpus"):
        gpus = len(os.listdir("/proc/driver/nvidia/gpus"))
    return {"CPU": float(os.cpu_count() or 1), **({"GPU": float(gpus)} if gpus else {})}
