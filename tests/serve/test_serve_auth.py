"""Authenticated by default, the Host checked: the service makes a token when given none and prints the
page's URL with it once; ``--state`` keeps it; ``--no-auth`` only on loopback; every request with a
Host that is not one of the service's names is a 400, before the token and on the open paths too."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_util import ANNOUNCE, Served
from test_serve_process import Process

from avdnn.errors import InvalidArgumentError
from avdnn.serve import ServeConfig, make_server
from avdnn.serve.hosts import split_host
from avdnn.serve.sessions import Sessions

ATTACKER = "rebind.attacker.example"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AVDNN_SERVE_TOKEN", None)
    return env


def _gated_paths(served: Served) -> list[tuple[str, str]]:
    """(method, path) of every operation of the schema but the health checks, ids filled in, and the docs."""
    doc = served.client.get("/openapi.json").json()
    out = [("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/docs/assets/swagger-ui-bundle.js")]
    for path, operations in doc["paths"].items():
        for method in operations:
            if path not in ("/healthz", "/readyz"):
                out.append((method.upper(), path.replace("{pid}", "p").replace("{sid}", "s")))
    return out


def test_without_a_token_given_every_api_route_needs_the_one_made(serve: Any) -> None:
    served: Served = serve()
    assert served.config.token is None and served.token and len(served.token) >= 40
    gated = _gated_paths(served)
    assert len(gated) >= 16 and ("POST", "/api/pipelines") in gated and ("GET", "/metrics") in gated
    with httpx.Client(base_url=served.url, timeout=30) as bare:
        for method, path in gated:
            r = bare.request(method, path)
            assert r.status_code == 401, (method, path)
            assert r.json() == {"detail": "a bearer token is required", "code": -13}
            assert bare.request(method, path, headers={"Authorization": "Bearer x" + served.token}).status_code == 401
        for path in ("/healthz", "/readyz", "/", "/ui/app.js"):  # up or not, and the page's code: no data
            assert bare.get(path).status_code == 200, path
    assert served.client.get("/api/pipelines").status_code == 200  # the client carries the token made
    assert served.service.pipelines() == []


def test_the_printed_url_carries_the_token_once_and_works(tmp_path: Path) -> None:
    served = Process(env=_env())
    try:
        assert served.token and served.url == f"http://127.0.0.1:{served.port}/?token={served.token}"
        assert f"{ANNOUNCE}{served.url}\n" in served.err
        bare = httpx.Client(base_url=f"http://127.0.0.1:{served.port}", timeout=30)
        assert bare.get("/api/pipelines").status_code == 401
        assert bare.get(served.url).status_code == 200  # the page, opened as printed (its script signs in)
        session = bare.post("/api/session", headers={"Authorization": f"Bearer {served.token}"})
        assert session.status_code == 204 and bare.get("/api/pipelines").status_code == 200
        bare.close()
        assert served.client.get("/metrics").status_code == 200
    finally:
        rc, err = served.terminate()
    assert rc == 0, err
    assert err.count(served.token) == 1  # that line only: the access log's "GET /?token=..." is redacted
    assert "GET /?token=*** HTTP/1.1" in err


def test_the_state_keeps_the_token_made_across_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = Process("--state", str(state), env=_env())
    rc, err = first.terminate()
    assert rc == 0, err
    kept = state / "token"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text().strip() == first.token
    again = Process("--state", str(state), env=_env())
    try:
        assert again.token == first.token
        assert again.client.get("/api/pipelines").status_code == 200
    finally:
        rc, err = again.terminate()
    assert rc == 0, err
    given = Process("--state", str(state), "--token", "g1ven-t0ken", env=_env())  # a token given wins, unprinted
    try:
        assert given.token is None and given.url == f"http://127.0.0.1:{given.port}/"
        with httpx.Client(base_url=f"http://127.0.0.1:{given.port}", timeout=30) as c:
            assert c.get("/api/pipelines", headers={"Authorization": f"Bearer {first.token}"}).status_code == 401
            assert c.get("/api/pipelines", headers={"Authorization": "Bearer g1ven-t0ken"}).status_code == 200
    finally:
        rc, err = given.terminate()
    assert rc == 0 and "g1ven-t0ken" not in err, err


def test_no_auth_is_for_loopback_only_and_warns() -> None:
    with pytest.raises(InvalidArgumentError, match=r"refusing --no-auth on '10\.1\.2\.3'"):
        make_server(ServeConfig(host="10.1.2.3", no_auth=True))
    with pytest.raises(InvalidArgumentError, match="--no-auth and --token contradict"):
        ServeConfig(no_auth=True, token="t")
    proc = subprocess.run(
        [sys.executable, "-m", "avdnn", "serve", "--host", "0.0.0.0", "--port", "0", "--no-auth"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 234, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "avdnn: option 'no_auth': refusing --no-auth on '0.0.0.0': without a token only a loopback address "
        "may be served (avdnn serve --host 127.0.0.1 --no-auth)"
    )
    served = Process("--no-auth", env=dict(_env(), AVDNN_SERVE_TOKEN="ign0red"))
    try:
        assert served.token is None and served.url == f"http://127.0.0.1:{served.port}/"
        assert "--no-auth: no token" in served.err
        assert served.client.get("/api/pipelines").status_code == 200
    finally:
        rc, err = served.terminate()
    assert rc == 0, err


def test_a_foreign_host_is_refused_before_the_token_on_every_path(serve: Any) -> None:
    served: Served = serve()
    port = served.config.port
    c = served.client  # it carries the right token: the Host alone refuses
    for host in (f"{ATTACKER}:{port}", ATTACKER, f"127.0.0.1:{port + 1}", f"localhost:{port}0", "127.0.0.2", "[::2]"):
        for path in ("/api/pipelines", "/healthz", "/readyz", "/", "/docs", "/metrics"):
            r = c.get(path, headers={"Host": host})
            assert r.status_code == 400, (host, path)
            assert r.json() == {
                "detail": "this service does not answer to that Host (see --allow-host)",
                "code": -22,
            }
        assert c.post("/api/pipelines", headers={"Host": host}, json={}).status_code == 400
    with httpx.Client(base_url=served.url, timeout=30) as bare:  # no token either: still the 400, not the 401
        assert bare.get("/api/pipelines", headers={"Host": f"{ATTACKER}:{port}"}).status_code == 400
    for raw in (b"", f"Host: {ATTACKER}:{port}\r\nHost: 127.0.0.1:{port}\r\n".encode(), b"Host: 127.0.0.1:x\r\n"):
        assert _raw(port, b"HTTP/1.1", raw) == 400, raw  # none, two, a bad port
    assert _raw(port, b"HTTP/1.0", b"") == 200  # HTTP/1.0 has no Host to send


def test_the_services_own_names_and_the_allowed_ones_pass(serve: Any) -> None:
    served: Served = serve(allow_host=["cams.example", "proxy.example:8443"])
    port = served.config.port
    good = ["127.0.0.1", "localhost", "LocalHost.", "[::1]", "cams.example", "proxy.example:8443"]
    good += [f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]", "cams.example")]
    for host in good:
        assert served.client.get("/api/pipelines", headers={"Host": host}).status_code == 200, host
    for host in (f"proxy.example:{port + 1}", "cams.example:8443", "sub.cams.example", "proxy.example"):
        assert served.client.get("/healthz", headers={"Host": host}).status_code == 400, host
    with pytest.raises(InvalidArgumentError, match="Invalid --allow-host 'a b'"):
        make_server(ServeConfig(allow_host=["a b"]))


def _raw(port: int, version: bytes, headers: bytes) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /healthz " + version + b"\r\n" + headers + b"Connection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split()[1])


def test_host_values_are_read_as_browsers_write_them() -> None:
    assert split_host("LOCALHOST:8080") == ("localhost", 8080)
    assert split_host("[0:0::1]:80") == ("[::1]", 80) and split_host("[::1]") == ("[::1]", None)
    assert split_host("example.org.") == ("example.org", None)
    for bad in ("", "a b", "::1", "[::1", "h:", "h:99999", "h:+1", "u@h", "h/x", "h:\uff18\uff10"):
        assert split_host(bad) is None, bad


def test_the_session_table_is_bounded() -> None:
    sessions = Sessions(ttl=60.0, limit=3)
    ids = [sessions.open() for _ in range(4)]
    assert len(set(ids)) == 4 and len(sessions) == 3
    assert not sessions.valid(ids[0]) and all(sessions.valid(i) for i in ids[1:])  # the oldest went
    assert sessions.revoke(ids[1]) and not sessions.revoke(ids[1]) and not sessions.valid(ids[1])
