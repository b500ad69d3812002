"""``/api/pipelines/{id}/sources``: a camera joins or leaves a running template pipeline."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from avdnn.serve.deps import ServiceDep
from avdnn.serve.specs import Id, SourceSpec

router = APIRouter(prefix="/api/pipelines/{pid}/sources", tags=["sources"])


@router.post("", status_code=201)
def add_source(pid: Id, body: SourceSpec, service: ServiceDep) -> dict[str, Any]:
    """``{"id": "cam3", "url": "..."}`` joins the pipeline; its frames batch with the others' in the
    shared model instances, and the others never pause."""
    return service.add_source(pid, body)


@router.get("/{sid}")
def get_source(pid: Id, sid: Id, service: ServiceDep) -> dict[str, Any]:
    return service.get(pid).source(sid).status()


@router.delete("/{sid}")
def remove_source(pid: Id, sid: Id, service: ServiceDep) -> dict[str, Any]:
    """The source leaves: its run stopped as Ctrl-C stops one (its output finished); its final accounting."""
    return service.remove_source(pid, sid)
