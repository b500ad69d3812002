"""``/metrics``: Prometheus text from the app's own registry (:mod:`avdnn.serve.metrics`)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from avdnn.serve.openapi import errors

router = APIRouter(tags=["metrics"], responses=errors(400, 401))


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(request: Request) -> Response:
    """Frames by pipeline, source, stage and cause; latency and inference time; batches; reconnects."""
    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
