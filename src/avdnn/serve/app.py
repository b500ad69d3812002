"""The FastAPI app: the routers, the service as their dependency, errors as one-line JSON, the lifespan.

Start-up (the pipelines kept in the state and those of the config file) and shutdown (every
pipeline stopped within ``stop_timeout``, outputs finished) are the app's lifespan handler. Errors
reach the client as ``{"detail": "<avdnn's one line>", "code": <AVERROR>}``: a service refusal with
its status (404, 409, 503), any other avdnn error as a 400 (a chain that does not parse names the
filter), a body that does not fit its schema as a 422 that never echoes the body back (it may
hold a camera's password). The middleware, outermost first: the Host check
(:mod:`avdnn.serve.hosts`), the token (unless ``no_auth``), the body limit (:mod:`avdnn.serve.security`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from avdnn import __version__
from avdnn._util.redact import redact_text
from avdnn.errors import AvdnnError
from avdnn.serve.errors import ServeError
from avdnn.serve.hosts import HostCheck
from avdnn.serve.metrics import registry_for
from avdnn.serve.routers import events, health, metrics, pipelines, previews, sources, web
from avdnn.serve.security import BodyLimit, TokenGate
from avdnn.serve.service import Service

__all__ = ["create_app"]


def create_app(service: Service) -> FastAPI:
    """The app serving ``service`` (started by the app's lifespan, closed at its end)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(service.start)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.close)

    app = FastAPI(
        title="avdnn serve",
        version=__version__,
        description="Pipelines of FFmpeg-style DNN filters over live sources (docs/serve.md).",
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.registry = registry_for(service)
    for module in (pipelines, sources, previews, events, metrics, health, web):
        app.include_router(module.router)
    app.mount("/ui", web.static_files(), name="ui")
    app.add_exception_handler(AvdnnError, _avdnn_error)
    app.add_exception_handler(RequestValidationError, _schema_error)
    app.add_middleware(BodyLimit, limit=service.config.max_body)
    if service.token is not None:
        app.add_middleware(TokenGate, token=service.token, sessions=service.sessions)  # before the body is read
    app.add_middleware(HostCheck, bound=service.config.host, allow=service.config.allow_host)  # outermost
    return app


async def _avdnn_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AvdnnError)
    status = exc.status if isinstance(exc, ServeError) else 400
    return JSONResponse({"detail": exc.oneline(), "code": exc.code}, status_code=status)


async def _schema_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors: list[dict[str, Any]] = [
        {"loc": list(e.get("loc", ())), "msg": redact_text(str(e.get("msg", ""))), "type": e.get("type")}
        for e in exc.errors()
    ]
    return JSONResponse({"detail": errors}, status_code=422)
