"""``/api/pipelines/{id}/sources``: a camera joins or leaves a running template pipeline; its history."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Query

from avdnn.serve.config import MAX_HISTORY
from avdnn.serve.deps import ServiceDep
from avdnn.serve.history import INTERVAL
from avdnn.serve.openapi import errors
from avdnn.serve.specs import Id, SourceSpec

router = APIRouter(prefix="/api/pipelines/{pid}/sources", tags=["sources"], responses=errors(400, 401, 404))


@router.post("", status_code=201, responses=errors(403, 409, 413, 503))
def add_source(pid: Id, body: SourceSpec, service: ServiceDep) -> dict[str, Any]:
    """``{"id": "cam3", "url": "..."}`` joins the pipeline; its frames batch with the others' in the
    shared model instances, and the others never pause."""
    return service.add_source(pid, body)


@router.get("/{sid}")
def get_source(pid: Id, sid: Id, service: ServiceDep) -> dict[str, Any]:
    return service.get(pid).source(sid).status()


@router.get("/{sid}/history")
def source_history(
    pid: Id,
    sid: Id,
    service: ServiceDep,
    seconds: Annotated[float | None, Query(gt=0, le=MAX_HISTORY, description="only the last N seconds")] = None,
) -> dict[str, Any]:
    """The source's samples, one a second, oldest first, over the last ``history`` seconds (the
    service's setting) or the last ``seconds=N``: state, fps, frames dropped in that second (and by
    cause), latency p95, frames read and written so far. ``now`` is the service's clock."""
    served = service.get(pid).source(sid)
    now = time.time()
    return {
        "pipeline": pid,
        "source": sid,
        "interval": INTERVAL,
        "history": service.config.history,
        "now": round(now, 3),
        "samples": served.history(seconds, now),
    }


@router.delete("/{sid}", responses=errors(409))
def remove_source(pid: Id, sid: Id, service: ServiceDep) -> dict[str, Any]:
    """The source leaves: its run stopped as Ctrl-C stops one (its output finished); its final accounting."""
    return service.remove_source(pid, sid)
