"""``/``: the web page (static HTML, plain JS and CSS under ``/ui/``, no build step), and its session.

The page is code without data: it asks the API for everything it shows, so it is served without
the token. With ``--token`` a browser signs in once: ``POST /api/session`` with the bearer header
sets the session cookie (:data:`~avdnn.serve.security.COOKIE`) that its ``EventSource`` and its
``<img>`` previews carry, since they cannot send a header; ``DELETE /api/session`` clears it.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from avdnn.serve.deps import ServiceDep
from avdnn.serve.security import COOKIE, session_value

__all__ = ["WEB", "router", "static_files"]

#: the page's files, shipped in the package (pyproject's package data)
WEB = Path(__file__).resolve().parent.parent / "web"

router = APIRouter(tags=["web"])


@router.get("/", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-cache"})


@router.post("/api/session", status_code=204)
def open_session(request: Request, service: ServiceDep) -> Response:
    """Trade the bearer token (this request passed the gate with it) for the page's session cookie:
    ``HttpOnly``, ``SameSite=Strict``, an HMAC of the token. Without ``--token``: nothing to set."""
    response = Response(status_code=204)
    token = service.config.token
    if token is not None:
        response.set_cookie(
            COOKIE,
            session_value(token),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
    return response


@router.delete("/api/session", status_code=204)
def close_session() -> Response:
    """Forget the session cookie (the page's sign-out)."""
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


def static_files() -> StaticFiles:
    """The page's script, style sheet and icon, mounted at ``/ui``."""
    return StaticFiles(directory=WEB)
