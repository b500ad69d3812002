"""The OpenAPI schema tells the truth: a property-based run of it (Schemathesis) against the real
``avdnn serve`` on loopback, with its token, finds no 5xx and no answer the schema does not list
(status, media type, body, ``Allow``; a request that breaks the schema refused); the streams and
the JPEGs are documented as what they are; ``/docs`` is Swagger UI served from the package.

The run is bounded: 25 examples an operation (derandomized, so every run sends the same requests),
the service limited to 2 pipelines of 1 source, started in a scratch directory (a body that
happens to be a valid template can only start a source that fails to open a file there). The
schema is the app's, built here at collection (Schemathesis' lazy ``from_fixture`` needs a pytest
internal that pytest 9 no longer has), and checked equal to the one the live service serves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from test_serve_process import Process

from avdnn.serve import ServeConfig, Service, create_app

SCHEMA = create_app(Service(ServeConfig(no_auth=True))).openapi()
#: a body over max_body is refused with 413 before its schema is read: a refusal too
CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {
        "checks": {
            "negative_data_rejection": {"expected-statuses": [400, 404, 405, 409, 413, 422]},
            # a body that fits the schema may still be refused for what it says: a chain that does
            # not parse or an output whose muxer cannot be chosen (400), a path outside the media
            # root (403), a pipeline or source that is not there (404), a limit or a name taken (409)
            "positive_data_acceptance": {"expected-statuses": [200, 201, 204, 400, 403, 404, 409]},
        }
    }
)
#: GET /api/events and GET .../preview.mjpg answer a stream that ends only with the service (or
#: the pipeline): a request the run makes would never complete; their refusals and media types
#: are checked below instead
STREAMS = ("/api/events", "/api/pipelines/{pid}/sources/{sid}/preview.mjpg")
schema = schemathesis.openapi.from_dict(SCHEMA, config=CONFIG).exclude(path=list(STREAMS))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    served = Process("--max-pipelines", "2", "--max-sources", "1", cwd=tmp_path_factory.mktemp("schema"))
    assert served.token and served.client.get("/openapi.json").json() == SCHEMA
    yield served
    rc, err = served.terminate()
    assert rc == 0, err
    assert "Traceback" not in err and "Exception in ASGI application" not in err


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_the_schema_tells_the_truth(case: Any, live: Process) -> None:
    case.call_and_validate(
        base_url=f"http://127.0.0.1:{live.port}", headers={"Authorization": f"Bearer {live.token}"}, timeout=30
    )


def test_every_route_lists_what_it_answers() -> None:
    ops = {(m.upper(), p): op for p, methods in SCHEMA["paths"].items() for m, op in methods.items()}
    media = {key: list(op["responses"]["200"]["content"]) for key, op in ops.items() if "200" in op["responses"]}
    assert media[("GET", "/metrics")] == ["text/plain"]
    assert media[("GET", "/api/pipelines/{pid}/sources/{sid}/snapshot.jpg")] == ["image/jpeg"]
    assert media[("GET", STREAMS[1])] == ["multipart/x-mixed-replace"]
    assert media[("GET", STREAMS[0])] == ["text/event-stream"]
    error = {"$ref": "#/components/schemas/ErrorModel"}
    for (method, path), op in ops.items():
        codes = set(op["responses"])
        assert "400" in codes, (method, path)  # a foreign Host, everywhere
        assert ("401" in codes) == (path not in ("/healthz", "/readyz")) == bool(op.get("security")), path
        for code, response in op["responses"].items():
            if (code >= "400" and code not in ("422", "503")) or (code == "503" and path != "/readyz"):
                assert response["content"] == {"application/json": {"schema": error}}, (method, path, code)
        if op.get("parameters") or op.get("requestBody"):
            assert op["responses"]["422"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/SchemaErrorModel"
            }
    assert {"403", "409", "413", "503"} <= set(ops[("POST", "/api/pipelines")]["responses"])
    assert {"403", "409", "413", "503"} <= set(ops[("POST", "/api/pipelines/{pid}/sources")]["responses"])
    assert {"404", "409"} <= set(ops[("DELETE", "/api/pipelines/{pid}")]["responses"])
    assert set(SCHEMA["components"]["securitySchemes"]) == {"bearer", "session"}
    assert "HTTPValidationError" not in SCHEMA["components"]["schemas"]  # FastAPI's 422, never sent


def test_the_streams_answer_as_documented(serve: Any) -> None:
    served = serve()
    c = served.client
    with c.stream("GET", "/api/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    r = c.get("/api/events", params={"backlog": -1})
    assert r.status_code == 422 and [e["loc"] for e in r.json()["detail"]] == [["query", "backlog"]]
    r = c.get("/api/pipelines/nope/sources/a/preview.mjpg")
    assert r.status_code == 404 and r.json() == {"detail": "no pipeline 'nope'", "code": -2}
    r = c.get("/api/pipelines/p/sources/a/preview.mjpg", params={"q": 99})
    assert r.status_code == 422 and r.headers["content-type"] == "application/json"
    r = c.get("/nowhere")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found", "code": -2}
    r = c.put("/api/pipelines/p")
    assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET"  # every method of the path


def test_the_docs_page_works_offline(serve: Any) -> None:
    served = serve()
    page = served.client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*["']([^"']+)["']""", page.text)
    assert sorted(urls) == [
        "/docs/assets/favicon-32x32.png",
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/swagger-ui.css",
        "/openapi.json",
    ]
    assert not re.search(r"https?://|//cdn|jsdelivr", page.text)
    assert '"validatorUrl": null' in page.text  # Swagger UI asks no validator service either
    for url in urls:
        assert served.client.get(url).status_code == 200, url
    js = served.client.get("/docs/assets/swagger-ui-bundle.js")
    assert "javascript" in js.headers["content-type"] and len(js.content) > 500_000  # the real bundle
    assert served.client.get("/redoc").status_code == 404  # no ReDoc (it would load from a CDN)
    with httpx.Client(base_url=served.url, timeout=30) as bare:
        assert bare.get("/docs").status_code == 401 and bare.get("/openapi.json").status_code == 401
