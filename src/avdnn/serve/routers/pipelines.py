"""``/api/pipelines``: create (201), list, read and delete (the final accounting) pipelines."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from avdnn.serve.deps import ServiceDep
from avdnn.serve.openapi import errors
from avdnn.serve.specs import Id, PipelineBody

router = APIRouter(prefix="/api/pipelines", tags=["pipelines"], responses=errors(400, 401))


@router.post("", status_code=201, responses=errors(403, 409, 413, 503))
def create_pipeline(body: PipelineBody, service: ServiceDep) -> dict[str, Any]:
    """Start a pipeline: ``{"args": [...]}`` (the ``avdnn`` command's argv) or a template
    (``chain``, ``output`` with ``{source}``, ``input_options``, ``sources``). 201 with its id."""
    pipeline = service.create(body)
    return pipeline.status()


@router.get("")
def list_pipelines(service: ServiceDep) -> dict[str, Any]:
    """Every pipeline (running, then the ended ones kept) with its state and its sources' states."""
    return service.summary()


@router.get("/{pid}", responses=errors(404))
def get_pipeline(pid: Id, service: ServiceDep) -> dict[str, Any]:
    """State, each source's accounting (frames, failures and drops by cause, fps, latency, reconnects)
    and the shared model instances (streams, batches), live."""
    return service.get(pid).status()


@router.delete("/{pid}", responses=errors(404, 409))
def delete_pipeline(pid: Id, service: ServiceDep) -> dict[str, Any]:
    """Stop it as Ctrl-C stops a run (outputs finished, trailers written): its final accounting."""
    return service.delete(pid)
