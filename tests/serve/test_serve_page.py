"""The web page's files and its session over plain HTTP: ``/`` and ``/ui/`` served from the package
without the token (code, no data) and with nothing fetched from elsewhere; the token traded for
the session cookie, which then passes the gate where no header can be sent (``/api/events``, the
previews); the cookie is an HMAC of the token, never the token."""

from __future__ import annotations

import re
from typing import Any

import httpx
from serve_util import Served

from avdnn.serve.routers.web import WEB
from avdnn.serve.security import COOKIE, session_value

TOKEN = "p4ge-t0ken"


def test_the_page_is_served_from_the_package_and_fetches_nothing_from_elsewhere(serve: Any) -> None:
    served: Served = serve()
    page = served.client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text == (WEB / "index.html").read_text()
    for name, kind in (("app.js", "javascript"), ("app.css", "text/css")):
        r = served.client.get(f"/ui/{name}")
        assert r.status_code == 200 and kind in r.headers["content-type"], name
    assert served.client.get("/ui/nothing.js").status_code == 404
    assert served.client.get("/ui/../routers/web.py").status_code == 404
    for path in sorted(WEB.iterdir()):  # no CDN, no font, nothing downloaded: every URL is the service's
        text = path.read_text()
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), path.name
    script = (WEB / "app.js").read_text()
    assert "innerHTML" not in script.replace("never innerHTML", "")  # text goes in as text


def test_the_session_cookie_stands_for_the_token(serve: Any) -> None:
    served: Served = serve(token=TOKEN)
    bare = httpx.Client(base_url=served.url, timeout=30)
    try:
        assert bare.get("/").status_code == 200 and bare.get("/ui/app.js").status_code == 200  # code, no data
        assert bare.get("/api/events").status_code == 401
        assert bare.post("/api/session").status_code == 401
        assert bare.post("/api/session", headers={"Authorization": "Bearer nope"}).status_code == 401
        r = bare.post("/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 204
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}={session_value(TOKEN)};") and TOKEN not in cookie
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert session_value(TOKEN) != session_value(TOKEN + "x")
        # with the cookie (and no header) the gate lets every route through
        assert bare.cookies.get(COOKIE) == session_value(TOKEN)
        assert bare.get("/api/pipelines").status_code == 200
        assert bare.get("/metrics").status_code == 200
        with bare.stream("GET", "/api/events") as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            assert next(stream.iter_lines()) == ": avdnn events"
        # a cookie of another token, or the token itself as the cookie, is refused
        for value in (session_value("other"), TOKEN, ""):
            other = httpx.Client(base_url=served.url, timeout=30, cookies={COOKIE: value})
            assert other.get("/api/pipelines").status_code == 401, value
            other.close()
        r = bare.delete("/api/session")
        assert r.status_code == 204 and f'{COOKIE}=""' in r.headers["set-cookie"]
        assert bare.get("/api/pipelines").status_code == 401  # signed out
    finally:
        bare.close()


def test_without_a_token_the_session_sets_nothing(serve: Any) -> None:
    served: Served = serve()
    r = served.client.post("/api/session")
    assert r.status_code == 204 and "set-cookie" not in r.headers
