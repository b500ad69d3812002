"""The web page's files and its session over plain HTTP: ``/`` and ``/ui/`` served from the package
without the token (code, no data), nothing fetched from elsewhere, no path out of ``/ui/``; the token
traded for a session cookie that then passes the gate where no header can be sent (``/api/events``,
the previews), a random id that expires and that ``DELETE /api/session`` revokes in the service."""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

import httpx
import pytest
from serve_util import Served

from avdnn.serve.routers.web import WEB
from avdnn.serve.security import COOKIE

TOKEN = "p4ge-t0ken"


def raw_get(served: Served, target: str) -> tuple[int, bytes]:
    """GET ``target`` exactly as written (no client normalises its dots) over a plain socket."""
    port = served.config.port
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_the_page_is_served_from_the_package_and_fetches_nothing_from_elsewhere(serve: Any) -> None:
    served: Served = serve()
    page = served.client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text == (WEB / "index.html").read_text()
    assert page.headers["referrer-policy"] == "no-referrer"  # opened as /?token=...: never sent on
    for name, kind in (("app.js", "javascript"), ("app.css", "text/css")):
        r = served.client.get(f"/ui/{name}")
        assert r.status_code == 200 and kind in r.headers["content-type"], name
    assert served.client.get("/ui/nothing.js").status_code == 404
    for path in sorted(WEB.iterdir()):  # no CDN, no font, nothing downloaded: every URL is the service's
        text = path.read_text()
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), path.name
    script = (WEB / "app.js").read_text()
    assert "innerHTML" not in script.replace("never innerHTML", "")  # text goes in as text


def test_no_path_leaves_the_page_folder(serve: Any, caplog: pytest.LogCaptureFixture) -> None:
    """The dots reach the service as sent (a raw request; httpx would resolve them first): refused."""
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    served: Served = serve()
    secret = (WEB.parent / "routers" / "web.py").read_bytes()
    for target in ("/ui/../routers/web.py", "/ui/%2e%2e/routers/web.py", "/ui/..%2frouters/web.py", "/ui/../app.py"):
        status, body = raw_get(served, target)
        assert status == 404, target
        assert b"def " not in body and body not in secret, target
    status, body = raw_get(served, "/ui/app.js")  # the same way, a file of the folder is served
    assert status == 200 and body == (WEB / "app.js").read_bytes()
    seen = [str(r.args[2]) for r in caplog.records if r.name == "uvicorn.access"]  # the path as the service got it
    assert "/ui/../routers/web.py" in seen and "/ui/../app.py" in seen


def test_the_session_cookie_is_a_random_id_used_then_revoked(serve: Any) -> None:
    served: Served = serve(token=TOKEN, session_ttl=600.0)
    bare = httpx.Client(base_url=served.url, timeout=30)
    try:
        assert bare.get("/").status_code == 200 and bare.get("/ui/app.js").status_code == 200  # code, no data
        assert bare.get("/api/events").status_code == 401
        assert bare.post("/api/session").status_code == 401
        assert bare.post("/api/session", headers={"Authorization": "Bearer nope"}).status_code == 401
        r = bare.post("/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 204
        header = r.headers["set-cookie"]
        assert "HttpOnly" in header and "SameSite=strict" in header and "Path=/" in header
        assert "Max-Age=600" in header and "Secure" not in header  # plain http: a Secure cookie would not come back
        value = bare.cookies[COOKIE]
        assert TOKEN not in value and len(value) >= 40
        again = httpx.post(f"{served.url}/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
        assert again.cookies[COOKIE] != value  # not a function of the token: a new id each time
        # with the cookie (and no header) the gate lets every route through
        assert bare.get("/api/pipelines").status_code == 200
        assert bare.get("/metrics").status_code == 200
        with bare.stream("GET", "/api/events") as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            assert next(stream.iter_lines()) == ": avdnn events"
        # a made-up id, the token itself as the cookie, or nothing, is refused
        for made_up in (value[:-1] + ("A" if value[-1] != "A" else "B"), TOKEN, ""):
            with httpx.Client(base_url=served.url, timeout=30, cookies={COOKIE: made_up}) as other:
                assert other.get("/api/pipelines").status_code == 401, made_up
        r = bare.delete("/api/session")
        assert r.status_code == 204 and f'{COOKIE}=""' in r.headers["set-cookie"]
        assert bare.get("/api/pipelines").status_code == 401  # signed out
        # revoked in the service, not only cleared in this browser: the old cookie replayed is refused
        with httpx.Client(base_url=served.url, timeout=30, cookies={COOKIE: value}) as replay:
            assert replay.get("/api/pipelines").status_code == 401
        with httpx.Client(base_url=served.url, timeout=30, cookies={COOKIE: again.cookies[COOKIE]}) as other:
            assert other.get("/api/pipelines").status_code == 200  # another session lives on
    finally:
        bare.close()


def test_a_session_expires(serve: Any) -> None:
    served: Served = serve(token=TOKEN, session_ttl=60.0)
    now = [1000.0]
    served.service.sessions.clock = lambda: now[0]  # the table's clock, moved by hand: nothing waits
    r = httpx.post(f"{served.url}/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
    with httpx.Client(base_url=served.url, timeout=30, cookies={COOKIE: r.cookies[COOKIE]}) as browser:
        now[0] += 59.0
        assert browser.get("/api/pipelines").status_code == 200
        now[0] += 1.0
        assert browser.get("/api/pipelines").status_code == 401
    assert len(served.service.sessions) == 0  # an expired session is forgotten


def test_with_no_auth_the_session_sets_nothing(serve: Any) -> None:
    served: Served = serve(no_auth=True)
    assert served.token is None
    r = httpx.post(f"{served.url}/api/session")
    assert r.status_code == 204 and "set-cookie" not in r.headers
    assert httpx.get(f"{served.url}/api/pipelines").status_code == 200
