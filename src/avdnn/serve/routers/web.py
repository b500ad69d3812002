"""``/``: the web page (static HTML, plain JS and CSS under ``/ui/``, no build step), and its session.

The page is code without data: it asks the API for everything it shows, so it is served without
the token. A browser signs in once: opened as ``/?token=...`` (the URL the command prints) the
page takes the token from its address and drops it from there (``history.replaceState``), or it
asks for it; ``POST /api/session`` with the bearer header then sets the session cookie
(:data:`~avdnn.serve.security.COOKIE`, a random id that expires, :mod:`avdnn.serve.sessions`)
that its ``EventSource`` and its ``<img>`` previews carry, since they cannot send a header;
``DELETE /api/session`` ends the session in the service and clears the cookie.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from avdnn.serve.deps import ServiceDep
from avdnn.serve.openapi import errors
from avdnn.serve.security import COOKIE, cookie_session

__all__ = ["WEB", "router", "static_files"]

#: the page's files, shipped in the package (pyproject's package data)
WEB = Path(__file__).resolve().parent.parent / "web"

router = APIRouter(tags=["web"], responses=errors(400, 401))


@router.get("/", include_in_schema=False)
def page() -> FileResponse:
    # opened as /?token=...: the address never goes on in a Referer
    return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-cache", "Referrer-Policy": "no-referrer"})


@router.post("/api/session", status_code=204)
def open_session(request: Request, service: ServiceDep) -> Response:
    """Trade the bearer token (this request passed the gate with it) for the page's session cookie:
    a random id, ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over https, expiring after
    ``session_ttl`` seconds. With ``no_auth``: nothing to set."""
    response = Response(status_code=204)
    if service.token is not None:
        response.set_cookie(
            COOKIE,
            service.sessions.open(),
            max_age=int(service.config.session_ttl),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
    return response


@router.delete("/api/session", status_code=204)
def close_session(request: Request, service: ServiceDep) -> Response:
    """End the session (the page's sign-out): its id is revoked in the service, the cookie cleared."""
    for sid in cookie_session(request.scope.get("headers", [])):
        service.sessions.revoke(sid)
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


def static_files() -> StaticFiles:
    """The page's script, style sheet and icon, mounted at ``/ui``."""
    return StaticFiles(directory=WEB)
