"""Every bound held, on the real service on loopback: departed sources folded past ``keep_departed``
(the accounting still balanced, ``/metrics`` equal to it and its series bounded), a source's output
names, ``/api/events`` clients and MJPEG viewers capped (503), free-text cause labels bounded; and
the small request-handling holes: an odd ``Last-Event-ID``, a preview rate near zero, an output
whose muxer cannot be chosen."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from serve_util import DEADLINE, LAVFI, TESTSRC, EventStream, Served, free_port, source, template_body, wait_for
from test_serve_check import frames_metric, metric_values

from avdnn.serve.metrics import CauseLabels
from avdnn.serve.source import KEEP_OUTPUTS


@pytest.fixture
def keepalive(monkeypatch: pytest.MonkeyPatch) -> None:
    """FastAPI's SSE keep-alive every 0.3 s (the test readers stop at a line)."""
    import fastapi.routing

    monkeypatch.setattr(fastapi.routing, "_PING_INTERVAL", 0.3)


def test_departed_sources_fold_into_one_row_and_still_balance(serve: Any) -> None:
    served = serve(keep_departed=2)
    c = served.client
    assert c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC))).status_code == 201
    for k in range(5):
        assert c.post("/api/pipelines/p/sources", json={"id": f"s{k}", "url": TESTSRC}).status_code == 201
        wait_for("a frame", lambda k=k: source(served.status("p"), f"s{k}")["frames"]["written"] > 0)  # type: ignore[misc]
        assert c.delete(f"/api/pipelines/p/sources/s{k}").status_code == 200
    final = c.delete("/api/pipelines/p").json()
    assert [(s["id"], s.get("departed", False)) for s in final["sources"]] == [("a", False), ("s3", True), ("s4", True)]
    folded = final["departed_earlier"]
    assert folded["sources"] == 3 and folded["runs"] == 3 and folded["balanced"]
    assert folded["frames"]["read"] >= 3
    values = metric_values(c.get("/metrics").text)
    shown = {dict(labels)["source"] for (name, labels), _ in values.items() if name == "avdnn_frames_total"}
    assert shown == {"a", "s3", "s4", "_departed"}
    rows = [*final["sources"], {"id": "_departed", **folded}]
    for row in rows:
        for stage in ("read", "written", "failed", "dropped"):
            assert frames_metric(values, "p", row["id"], stage) == row["frames"][stage], (row["id"], stage)


def test_a_restarting_source_shows_its_last_output_names_and_counts_them_all(serve: Any) -> None:
    served = serve(retry_interval=0.05)
    dead = f"tcp://127.0.0.1:{free_port()}"  # nothing listens: offline, tried again and again
    body = template_body("p", ("a", dead), input_options=["-reconnect_attempts", "0"])
    assert served.client.post("/api/pipelines", json=body).status_code == 201
    row = wait_for(
        "many restarts", lambda: (r := source(served.status("p"), "a"))["outputs_total"] > KEEP_OUTPUTS and r
    )
    assert len(row["outputs"]) == KEEP_OUTPUTS and row["outputs"] == ["-"] * KEEP_OUTPUTS


def test_an_odd_last_event_id_is_ignored(serve: Any, keepalive: None) -> None:
    served = serve()
    odd_id = "²".encode("latin-1")  # HTTP headers are latin-1: the service reads "²", a digit to str.isdigit
    for value in (odd_id, b"9" * 5000, b"-1", b"0x10"):
        with EventStream(served, headers={"Last-Event-ID": value}) as stream:  # type: ignore[dict-item]
            assert stream.status == 200 and "avdnn events" in stream.comments, value[:20]


def test_event_clients_are_capped(serve: Any, keepalive: None) -> None:
    served = serve(max_event_clients=2)
    with EventStream(served) as one, EventStream(served) as other:
        r = served.client.get("/api/events")
        assert r.status_code == 503
        assert r.json()["detail"] == "2 event streams (max_event_clients) open: the limit, try again later"
        assert one.status == other.status == 200
    wait_for("the slots given back", lambda: served.service.events.slots.taken == 0)
    with EventStream(served) as again:
        assert again.status == 200


def _stream(served: Served, path: str, got: list[Any], first: threading.Event) -> None:
    client = httpx.Client(base_url=served.url, timeout=DEADLINE, headers=served.client.headers)
    with client, client.stream("GET", path) as r:
        got.append(r.status_code)
        for _ in r.iter_bytes():
            first.set()
    first.set()


def test_a_preview_rate_near_zero_is_refused_and_a_viewer_ends_with_its_source(serve: Any) -> None:
    served = serve()
    c = served.client
    assert c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC))).status_code == 201
    assert c.get("/api/pipelines/p/sources/a/preview.mjpg", params={"fps": 1e-300}).status_code == 422
    wait_for("a frame", lambda: source(served.status("p"), "a")["frames"]["written"] > 0)
    got: list[Any] = []
    first = threading.Event()
    path = "/api/pipelines/p/sources/a/preview.mjpg?fps=0.1"
    viewer = threading.Thread(target=_stream, args=(served, path, got, first))
    viewer.start()
    assert first.wait(DEADLINE) and got == [200]
    assert c.delete("/api/pipelines/p").status_code == 200
    viewer.join(5.0)  # a hang guard: at 0.1 fps its wait is 10 s; it looks at its source meanwhile
    assert not viewer.is_alive(), "the preview outlived its pipeline"


def test_previews_are_capped(serve: Any) -> None:
    served = serve(max_viewers=1)
    c = served.client
    assert c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC), ("b", TESTSRC))).status_code == 201
    wait_for("a frame", lambda: source(served.status("p"), "a")["frames"]["written"] > 0)
    got: list[Any] = []
    first = threading.Event()
    viewer = threading.Thread(target=_stream, args=(served, "/api/pipelines/p/sources/a/preview.mjpg", got, first))
    viewer.start()
    assert first.wait(DEADLINE) and got == [200]
    r = c.get("/api/pipelines/p/sources/b/preview.mjpg")
    assert r.status_code == 503
    assert r.json()["detail"] == "1 MJPEG previews (max_viewers) open: the limit, try again later"
    assert c.delete("/api/pipelines/p/sources/a").status_code == 200
    viewer.join(DEADLINE)
    wait_for("its slot given back", lambda: served.service.viewers.taken == 0)
    wait_for("b's frame", lambda: source(served.status("p"), "b")["frames"]["written"] > 0)
    with c.stream("GET", "/api/pipelines/p/sources/b/preview.mjpg") as r:
        assert r.status_code == 200


def test_an_output_whose_muxer_cannot_be_chosen_is_refused_before_201(serve: Any) -> None:
    served = serve()
    c = served.client
    for output in ([""], ["x"], ["out.unknownext"]):
        r = c.post("/api/pipelines", json={**template_body("p", ("a", TESTSRC)), "output": output})
        assert r.status_code == 400, r.text
        assert r.json()["detail"] == (
            f"Unable to choose an output format for '{output[0]}'; use a standard extension for the filename "
            "or specify the format manually."
        )
    r = c.post("/api/pipelines", json={"args": [*LAVFI, "-i", TESTSRC, "x"]})
    assert r.status_code == 400 and r.json()["detail"].startswith("Unable to choose an output format for 'x'")
    r = c.post("/api/pipelines", json={**template_body("p", ("a", TESTSRC)), "output": ["-f", "mp4", ""]})
    assert r.status_code == 400 and "No such file or directory" in r.json()["detail"]
    assert served.client.get("/api/pipelines").json() == {"pipelines": []}


def test_cause_labels_are_the_first_distinct_ones_then_other() -> None:
    labels = CauseLabels(limit=2)
    counts = {"a: broke": 1, "b: broke": 2, "c: broke": 3, "d: token=s3cr3t": 4}
    assert labels.sums(counts) == {"a: broke": 1, "b: broke": 2, "other": 7}
    assert labels("a: broke") == "a: broke" and labels("c: broke") == "other"  # kept as first chosen
    assert CauseLabels()("x " * 200).startswith("x x") and len(CauseLabels()("x " * 200)) == 160
    assert CauseLabels()("d: token=s3cr3t") == "d: token=***"
