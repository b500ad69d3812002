"""``/api/nodes``: the nodes that run the sources (one, this process, without ``--ray``), and drains."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import StringConstraints

from avdnn.serve.deps import ServiceDep
from avdnn.serve.openapi import errors

router = APIRouter(prefix="/api/nodes", tags=["nodes"], responses=errors(400, 401))

#: a node's id: Ray's hex id, or ``local``
NodeId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$"), Path(description="the node's id")]


@router.get("")
def list_nodes(service: ServiceDep) -> dict[str, Any]:
    """Every node: id, address, alive, its agent (``up``, ``starting``, ``lost`` with its cause),
    whether it drains, the sources placed on it, its load (its agent's CPU, the sources that do not
    keep their input's rate) and its shared model instances with their batch figures."""
    return {"nodes": service.nodes.listed()}


@router.post("/{node}/drain", responses=errors(404))
def drain_node(node: NodeId, service: ServiceDep) -> dict[str, Any]:
    """No new source goes to the node, and its sources move to the others (each stopped there, its
    output finished, and started on the node with the most room: a move); ``left``: those no other
    node had room for (they run on where they are)."""
    return service.nodes.drain(node)


@router.delete("/{node}/drain", responses=errors(404))
def undrain_node(node: NodeId, service: ServiceDep) -> dict[str, Any]:
    """The node takes sources again (those moved away stay where they are)."""
    return service.nodes.drain(node, on=False)
