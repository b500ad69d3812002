"""The OpenAPI schema as the service answers, and ``/docs`` served from the package's own files.

Every route lists the statuses it answers with their bodies: the error model
``{"detail": "<one line>", "code": <AVERROR>}`` (:class:`ErrorModel`) for 400, 401, 403, 404, 409, 413
and 503, the schema error (:class:`SchemaErrorModel`) for 422; ``/metrics`` is ``text/plain``,
the snapshot ``image/jpeg``, the preview ``multipart/x-mixed-replace``, ``/api/events``
``text/event-stream``. The routes behind the token say so (``security``: the bearer header or the
page's session cookie). ``/docs`` is Swagger UI from the ``swagger-ui-bundle-v2`` package (the
``serve`` extra), served at ``/docs/assets/``: nothing is fetched from a CDN, so it works offline.
ReDoc is not served.
"""

from __future__ import annotations

from typing import Any

import swagger_ui_bundle
from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema

from avdnn.serve.security import COOKIE

__all__ = [
    "ASSETS",
    "ErrorModel",
    "JpegResponse",
    "MjpegResponse",
    "SchemaErrorModel",
    "docs_assets",
    "errors",
    "install_schema",
    "router",
]

#: where Swagger UI's files are served
ASSETS = "/docs/assets"


class ErrorModel(BaseModel):
    """Every refusal but a schema error: avdnn's one-line error and its FFmpeg error code."""

    detail: str = Field(description="avdnn's one-line error")
    code: int = Field(description="the FFmpeg error code (AVERROR), negative")


class SchemaError(BaseModel):
    loc: list[str | int] = Field(description="where in the request: body, query, path, header, then the field")
    msg: str
    type: str


class SchemaErrorModel(BaseModel):
    """A request that does not fit its schema (the body is never echoed: it may hold a password)."""

    detail: list[SchemaError]


class JpegResponse(Response):
    media_type = "image/jpeg"


class MjpegResponse(StreamingResponse):
    media_type = "multipart/x-mixed-replace"


_WHY = {
    400: "what avdnn refuses (a chain, an option, a value), or a Host this service does not answer to",
    401: "no bearer token, a wrong one, or no live session cookie",
    403: "a path outside the media root, a protocol off the allow-list, or listening without --allow-listen",
    404: "no such pipeline or source (or no frame yet)",
    409: "the name is taken, a limit is reached, or the pipeline has ended",
    413: "the request body is over max_body",
    422: "the request does not fit its schema",
    503: "the service is stopping, or at a bound",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route (or a router) for the error statuses it answers."""
    return {
        code: {"model": SchemaErrorModel if code == 422 else ErrorModel, "description": _WHY[code]} for code in codes
    }


_REF = "#/components/schemas/{model}"
_SECURITY = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "the service's token (--token, or the one it made)"},
    "session": {"type": "apiKey", "in": "cookie", "name": COOKIE, "description": "the web page's session"},
}


def install_schema(app: FastAPI) -> None:
    """Make ``app.openapi()`` the schema with the 422s as the service writes them and the gate's security."""

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            ref = {"$ref": _REF.format(model="SchemaErrorModel")}
            components = doc.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422, which this service never sends
                schemas.pop(name, None)
            _, defs = models_json_schema([(SchemaErrorModel, "validation")], ref_template=_REF)
            schemas.update(defs["$defs"])
            components["securitySchemes"] = _SECURITY
            for operations in doc.get("paths", {}).values():
                for op in operations.values():
                    responses = op.get("responses", {})
                    for status, response in responses.items():
                        content = response.get("content", {})
                        if status >= "400" and content and "application/json" not in content:
                            # FastAPI gives an error the route's own media type (image/jpeg...): it is JSON
                            response["content"] = {"application/json": next(iter(content.values()))}
                    if "422" in responses:
                        responses["422"] = {
                            "description": _WHY[422],
                            "content": {"application/json": {"schema": ref}},
                        }
                    if "401" in responses:
                        op["security"] = [{"bearer": []}, {"session": []}]
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]


router = APIRouter(include_in_schema=False)


@router.get("/docs")
def docs() -> HTMLResponse:
    """Swagger UI on the service's own copy of its files."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="avdnn serve - OpenAPI",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        swagger_ui_parameters={"validatorUrl": None},  # never asks validator.swagger.io
    )


def docs_assets() -> StaticFiles:
    """Swagger UI's script, style sheet and icon, from the swagger-ui-bundle-v2 package."""
    return StaticFiles(directory=swagger_ui_bundle.swagger_ui_path)
