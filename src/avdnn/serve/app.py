"""The FastAPI app: the routers, the service as their dependency, errors as one-line JSON, the lifespan.

Start-up (the pipelines kept in the state and those of the config file) and shutdown (every
pipeline stopped within ``stop_timeout``, outputs finished) are the app's lifespan handler. Errors
reach the client as ``{"detail": "<avdnn's one line>", "code": <AVERROR>}``: a service refusal with
its status (404, 409, 503), any other avdnn error as a 400 (a chain that does not parse names the
filter), a body that does not fit its schema as a 422 that never echoes the body back (it may
hold a camera's password). A path that names no route, or a method a route does not take, is
a 404 or 405 of the same model. The middleware, outermost first: the Host check
(:mod:`avdnn.serve.hosts`), the token (unless ``no_auth``), the body limit (:mod:`avdnn.serve.security`).
"""

from __future__ import annotations

import errno
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from avdnn import __version__
from avdnn._util.redact import redact_text
from avdnn.errors import AVERROR, AvdnnError
from avdnn.serve.errors import ServeError
from avdnn.serve.hosts import HostCheck
from avdnn.serve.metrics import registry_for
from avdnn.serve.openapi import ASSETS, docs_assets, install_schema
from avdnn.serve.openapi import router as docs_router
from avdnn.serve.routers import events, health, metrics, nodes, pipelines, previews, sources, web
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
        docs_url=None,  # served by avdnn.serve.openapi from the package's files, never a CDN
        redoc_url=None,
    )
    app.state.service = service
    app.state.registry = registry_for(service)
    for module in (pipelines, sources, previews, nodes, events, metrics, health, web):
        app.include_router(module.router)
    app.include_router(docs_router)
    app.mount("/ui", web.static_files(), name="ui")
    app.mount(ASSETS, docs_assets(), name="docs-assets")
    install_schema(app)
    app.add_exception_handler(AvdnnError, _avdnn_error)
    app.add_exception_handler(RequestValidationError, _schema_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
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


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own refusals (no such path, a method the route does not take) in the error model.

    A 405's ``Allow`` names every method the schema has for the path: Starlette would name those of
    the first route that matched the path only (or none, past an included router)."""
    assert isinstance(exc, StarletteHTTPException)
    code = AVERROR(errno.ENOENT) if exc.status_code == 404 else AVERROR(errno.EINVAL)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        methods = _methods(request.app, request.url.path)
        if methods:
            headers["Allow"] = ", ".join(methods)
    return JSONResponse({"detail": str(exc.detail), "code": code}, status_code=exc.status_code, headers=headers)


def _methods(app: FastAPI, path: str) -> list[str]:
    """The methods the OpenAPI schema lists for ``path`` (its templates' ``{name}`` one segment each)."""
    found: set[str] = set()
    for template, operations in app.openapi().get("paths", {}).items():
        if re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), path):
            found.update(method.upper() for method in operations)
    return sorted(found)
