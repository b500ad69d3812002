"""Safe by default: the token enforced, a non-loopback bind refused, limits, one-line errors, and no
credential in any response, log line or metric label."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import httpx
import pytest
from serve_util import TESTSRC, Camera, source, template_body, wait_for

from avdnn.errors import InvalidArgumentError
from avdnn.serve import ServeConfig, make_server
from avdnn.serve.security import check_bind, is_loopback


def test_the_token_is_required_and_compared_for_every_route_but_health(serve: Any) -> None:
    served = serve(token="t0k3n-value")
    bare = httpx.Client(base_url=served.url, timeout=30)
    for path in (
        "/api/pipelines",
        "/metrics",
        "/docs",
        "/openapi.json",
        "/api/pipelines/x/sources/a/snapshot.jpg",
        "/api/pipelines/x/sources/a/history",
    ):
        r = bare.get(path)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), path
        assert bare.get(path, headers={"Authorization": "Bearer t0k3n-valuX"}).status_code == 401
        assert bare.get(path, headers={"Authorization": "Basic t0k3n-value"}).status_code == 401
    assert bare.post("/api/pipelines", json=template_body("p", ("a", TESTSRC))).status_code == 401
    assert served.service.pipelines() == []  # refused before anything ran
    assert bare.get("/healthz").status_code == 200 and bare.get("/readyz").status_code == 200
    assert served.client.get("/api/pipelines").json() == {"pipelines": []}  # the client sends the token
    assert bare.get("/metrics", headers={"Authorization": "bearer t0k3n-value"}).status_code == 200
    bare.close()


def test_a_bind_beyond_loopback_needs_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("::")
    with pytest.raises(InvalidArgumentError, match=r"refusing to listen on '0\.0\.0\.0' without --token"):
        make_server(ServeConfig(host="0.0.0.0"))
    check_bind("0.0.0.0", "a-token")  # allowed with one
    proc = subprocess.run(
        [sys.executable, "-m", "avdnn", "serve", "--host", "10.1.2.3", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 234  # AVERROR(EINVAL)'s exit status, as the command's other refusals
    assert proc.stderr.strip().splitlines()[-1] == (
        "avdnn: option 'host': refusing to listen on '10.1.2.3' without --token: beyond loopback every "
        "request must carry a bearer token (avdnn serve --host HOST --token TOKEN)"
    )


def test_limits_on_pipelines_sources_and_bodies(serve: Any) -> None:
    served = serve(max_pipelines=1, max_sources=2, max_body=2048)
    c = served.client
    assert c.post("/api/pipelines", json=template_body("one", ("a", TESTSRC))).status_code == 201
    r = c.post("/api/pipelines", json=template_body("two", ("a", TESTSRC)))
    assert r.status_code == 409 and "the limit (max_pipelines)" in r.json()["detail"]
    assert c.post("/api/pipelines/one/sources", json={"id": "b", "url": TESTSRC}).status_code == 201
    r = c.post("/api/pipelines/one/sources", json={"id": "c", "url": TESTSRC})
    assert r.status_code == 409 and "the limit (max_sources)" in r.json()["detail"]
    r = c.post("/api/pipelines/one/sources", json={"id": "b", "url": TESTSRC})
    assert r.status_code == 409
    big = {"id": "z", "url": "x" * 4000}
    assert c.post("/api/pipelines/one/sources", json=big).status_code == 413
    chunks = (part for part in [b'{"id": "z", "url": "', b"y" * 3000, b'"}'])  # no Content-Length: streamed
    r = c.post("/api/pipelines/one/sources", content=chunks, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert [s["id"] for s in served.status("one")["sources"]] == ["a", "b"]
    assert c.delete("/api/pipelines/one").status_code == 200


def test_bad_requests_get_one_line_errors(serve: Any) -> None:
    served = serve()
    c = served.client
    r = c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC), chain="hflip,scalex=2"))
    assert r.status_code == 400
    assert r.json()["detail"] == "scalex: No such filter: 'scalex' (did you mean 'scale', 'scale_qsv', 'scale2ref'?)"
    r = c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC), chain="dnn_detect=modle=x.onnx"))
    assert r.status_code == 400 and r.json()["detail"].startswith("dnn_detect: Option 'modle' not found")
    r = c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC), chain="drawbox@{source}=color=red"))
    assert (
        r.status_code == 400
        and r.json()["detail"] == "option 'chain': the chain's {source} is allowed in option values only"
    )
    r = c.post("/api/pipelines", json={"args": ["-i", TESTSRC, "-bogus", "1", "out.mkv"]})
    assert r.status_code == 400 and "Unrecognized option 'bogus'" in r.json()["detail"]
    r = c.post("/api/pipelines", json={**template_body("p", ("a", TESTSRC)), "output": ["-f", "null", "-", "b.mkv"]})
    assert r.status_code == 400 and "one output per source (it names 2)" in r.json()["detail"]
    cam = "tcp://u:pw@127.0.0.1:9"
    r = c.post("/api/pipelines", json=template_body("p", ("a", cam), ("b", cam)))
    assert r.status_code == 400 and r.json()["detail"] == (
        "input 'tcp://u:***@127.0.0.1:9' is a live stream and cannot be read twice: give each source its own input"
    )
    r = c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC), ("a", TESTSRC)))
    assert r.status_code == 409 and "source ids must be unique: a" in r.json()["detail"]
    # schema errors: 422, naming the field
    for body in (
        {"chain": "hflip"},
        {"output": ["x.mkv"], "sources": [{"id": "has space", "url": "x"}]},
        {"output": ["x.mkv"], "colour": "red"},
        {"args": []},
    ):
        r = c.post("/api/pipelines", json=body)
        assert r.status_code == 422, body
        assert all({"loc", "msg", "type"} == set(e) for e in r.json()["detail"])
    assert c.get("/api/pipelines/nope").status_code == 404
    assert c.get("/api/pipelines/nope").json()["detail"] == "no pipeline 'nope'"
    assert c.delete("/api/pipelines/nope").status_code == 404
    assert c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC))).status_code == 201
    assert c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC))).status_code == 409
    assert c.delete("/api/pipelines/p/sources/zz").status_code == 404
    assert c.get("/api/pipelines/p/sources/zz/preview.mjpg").status_code == 404
    r = c.post("/api/pipelines", json={"name": "cmd", "args": ["-f", "lavfi", "-re", "-i", TESTSRC, "-f", "null", "-"]})
    assert r.status_code == 201 and [s["id"] for s in r.json()["sources"]] == ["out0"]
    r = c.post("/api/pipelines/cmd/sources", json={"id": "x", "url": TESTSRC})
    assert r.status_code == 409 and "sources join template pipelines only" in r.json()["detail"]
    assert c.get("/openapi.json").json()["info"]["title"] == "avdnn serve"
    for pid in ("p", "cmd"):
        assert c.delete(f"/api/pipelines/{pid}").status_code == 200


def test_no_credential_in_any_response_log_line_or_metric(
    serve: Any, ffmpeg: str, caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    """URL-shaped secrets, a webhook's header values in the chain (escaped, quoted), and the value
    after a secret option of the argv (``-encryption_key``, ``-decryption_key``, ``-headers``)."""
    caplog.set_level(logging.DEBUG)
    served = serve(stall_after=2.0)
    secret = "s3cr3t-pw"
    key = "5ec7e75ec7e75ec7e75ec7e75ec7e75e"  # a key is hex: a secret of its own
    hook = f"http\\://127.0.0.1\\:9/hook:headers=X-Api-Key={secret}|Authorization=Bearer {secret}"
    quoted = f"stream=b:headers='X-Token={secret}':webhook=http\\://u\\:{secret}@127.0.0.1\\:9/h"
    with Camera(ffmpeg) as cam:
        url = f"tcp://admin:{secret}@127.0.0.1:{cam.port}?passphrase={secret}"
        body = {
            "name": "yard",
            "chain": f"events=stream=a:webhook={hook},events={quoted}",
            "output": [
                *("-metadata", f"comment=rtmp://u:{secret}@example.org/live"),
                *("-encryption_scheme", "cenc-aes-ctr", "-encryption_key", key, "-encryption_kid", "0" * 32),
                str(tmp_path / "{source}.mp4"),
            ],
            "sources": [{"id": "cam", "url": url}],
        }
        seen = []
        r = served.client.post("/api/pipelines", json=body)
        assert r.status_code == 201, r.text
        seen.append(r.text)
        row = wait_for("running", lambda: source(served.status("yard"), "cam")["state"] == "running")
        assert row
        shown = source(served.status("yard"), "cam")["url"]
        assert shown == f"tcp://admin:***@127.0.0.1:{cam.port}?passphrase=***"
        spec = served.status("yard")["spec"]
        assert spec["chain"].startswith("events=stream=a:webhook=http\\://127.0.0.1\\:9/hook:headers=***,events=")
        assert spec["output"][4:7] == ["-encryption_key", "***", "-encryption_kid"]
        for path in ("/api/pipelines", "/api/pipelines/yard", "/api/pipelines/yard/sources/cam", "/metrics"):
            seen.append(served.client.get(path).text)
        r = served.client.post("/api/pipelines", json={**body, "name": "x y"})  # a schema error: never echoed
        assert r.status_code == 422
        seen.append(r.text)
        r = served.client.post("/api/pipelines", json={**body, "name": "bad", "chain": "nosuchfilter"})
        seen.append(r.text)
        bad_chain = f"events=stream=a:b:headers=X-Api-Key={secret}"  # an error quoting the options
        r = served.client.post("/api/pipelines", json={**body, "name": "bad", "chain": bad_chain})
        assert r.status_code == 400 and "No option name near" in r.json()["detail"]
        seen.append(r.text)
        argv = ["-decryption_key", key, "-headers", f"X-Api-Key: {secret}", "-f", "lavfi", "-i", TESTSRC]
        r = served.client.post("/api/pipelines", json={"name": "opts", "args": [*argv, "-f", "null", "-"]})
        seen.append(r.text)
        seen.append(served.client.get("/api/pipelines").text)
        seen.append(served.client.delete("/api/pipelines/yard").text)
        seen.append(served.client.get("/metrics").text)
    for text in seen:
        assert secret not in text and key not in text, text
    logged = [r.getMessage() for r in caplog.records]
    assert logged and not [m for m in logged if secret in m or key in m]
