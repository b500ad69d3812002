"""``/healthz`` (the process answers) and ``/readyz`` (its pipelines are started and it is not stopping).

A pipeline that could not be started from the state or the config file does not make the service
unready: the service is up, and its API is what lists, explains and deletes that pipeline; /readyz
names it (``failed``), so a probe or an operator sees it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from avdnn.serve.deps import ServiceDep
from avdnn.serve.openapi import errors


class NotReady(BaseModel):
    status: str


router = APIRouter(tags=["health"], responses=errors(400))


@router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"status": "ok"}


@router.get("/readyz", response_model=None, responses={503: {"model": NotReady, "description": "starting or stopping"}})
def readyz(service: ServiceDep) -> dict[str, Any] | JSONResponse:
    if service.ready and not service.stopping.is_set():  # a pipeline that failed at start is listed, not a reason
        failed = [p.id for p in service.failed()]
        return {"status": "ready", "pipelines": len(service.pipelines()) + len(failed), "failed": failed}
    return JSONResponse({"status": "not ready"}, status_code=503)
