"""``/healthz`` (the process answers) and ``/readyz`` (its pipelines are started and it is not stopping)."""

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
    if service.ready and not service.stopping.is_set():
        return {"status": "ready", "pipelines": len(service.pipelines())}
    return JSONResponse({"status": "not ready"}, status_code=503)
