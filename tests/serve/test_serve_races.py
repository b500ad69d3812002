"""Check-then-act under concurrency, on the real service on loopback: concurrent joins of one id
(one run, never two writing one file), ``max_sources`` and ``max_pipelines`` held under a burst,
runs left behind past ``stop_timeout`` counted until they end (a listening input's socket shut
from outside), and a create racing the service's stop."""

from __future__ import annotations

import socket
import threading
from dataclasses import fields
from typing import Any

import httpx
import pytest
from serve_util import DEADLINE, TESTSRC, Served, free_port, tcp_listening, template_body, wait_for

from avdnn import api
from avdnn.serve import ServeConfig
from avdnn.serve.agent import LOCAL
from avdnn.serve.host import LocalAgent
from avdnn.serve.pipeline import ServedPipeline

#: listening inputs are refused unless allowed (w-confine's --allow-listen), where that exists
LISTEN = {"allow_listen": True} if "allow_listen" in {f.name for f in fields(ServeConfig)} else {}


def _burst(served: Served, n: int, request: Any) -> list[httpx.Response]:
    """``request(client, k)`` from ``n`` threads released at once; the answers in order."""
    barrier = threading.Barrier(n)
    answers: list[httpx.Response | None] = [None] * n

    def one(k: int) -> None:
        with httpx.Client(base_url=served.url, timeout=DEADLINE, headers=served.client.headers) as client:
            barrier.wait()
            answers[k] = request(client, k)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE)
    assert all(a is not None for a in answers)
    return [a for a in answers if a is not None]


@pytest.fixture
def slow_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each job's check takes a while: a request's check-then-start is wide open to the others."""
    check = api.check_job
    gate = threading.Event()

    def slow(job: api.Job) -> None:
        gate.wait(0.2)  # never set: a pause, not a timing
        check(job)

    monkeypatch.setattr(api, "check_job", slow)


def _local_agent(served: Served) -> LocalAgent:
    agent = served.service.nodes.agent(LOCAL)
    assert isinstance(agent, LocalAgent)
    return agent


def _running_outputs(served: Served, pid: str) -> int:
    assert isinstance(served.service.get(pid), ServedPipeline)
    return len(_local_agent(served).running_outputs(pid))


def test_concurrent_joins_of_one_id_start_one_run_and_max_sources_holds(serve: Any, slow_check: None) -> None:
    served = serve(max_sources=4)
    assert served.client.post("/api/pipelines", json=template_body("p")).status_code == 201
    answers = _burst(served, 12, lambda c, k: c.post("/api/pipelines/p/sources", json={"id": "a", "url": TESTSRC}))
    assert sorted(r.status_code for r in answers) == [201] + [409] * 11
    assert all("has a source 'a' already" in r.json()["detail"] for r in answers if r.status_code == 409)
    status = served.status("p")
    assert [s["id"] for s in status["sources"]] == ["a"] and [s["id"] for s in status["spec"]["sources"]] == ["a"]
    assert _running_outputs(served, "p") == 1
    answers = _burst(served, 8, lambda c, k: c.post("/api/pipelines/p/sources", json={"id": f"b{k}", "url": TESTSRC}))
    assert sorted(r.status_code for r in answers) == [201] * 3 + [409] * 5
    assert all("the limit (max_sources)" in r.json()["detail"] for r in answers if r.status_code == 409)
    assert len(served.status("p")["sources"]) == 4 and _running_outputs(served, "p") == 4
    assert len(served.status("p")["spec"]["sources"]) == 4
    assert served.client.delete("/api/pipelines/p").status_code == 200


def _listening(port: int) -> bool:
    want = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            if any(r.split()[1].endswith(want) and r.split()[3] == "0A" for r in fh.readlines()[1:]):
                return True
    return False


def _left_behind(served: Served, pid: str) -> list[str]:
    rows = served.client.get("/api/pipelines").json()["pipelines"]
    found: list[str] = next(r["left_behind"] for r in rows if r["id"] == pid)
    return found


def test_a_run_left_behind_counts_against_max_pipelines_until_it_ends(serve: Any) -> None:
    """A peer that accepts and sends nothing, read with no bound (-live_timeout 0): the run stays
    blocked in its open past stop_timeout; it holds its slot until the peer hangs up."""
    served = serve(max_pipelines=2, stop_timeout=0.3)
    with socket.create_server(("127.0.0.1", 0)) as peer:
        port = peer.getsockname()[1]
        body = template_body("blocked", ("a", f"tcp://127.0.0.1:{port}"), input_options=["-live_timeout", "0"])
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        conn, _ = peer.accept()
        with conn:
            final = served.client.delete("/api/pipelines/blocked").json()
            assert final["left_behind"] == ["a"]
            assert final["sources"][0]["cause"] == "still blocked in its input after 0.3 s: left behind"
            assert _left_behind(served, "blocked") == ["a"]
            assert served.client.post("/api/pipelines", json=template_body("x1", ("a", TESTSRC))).status_code == 201
            r = served.client.post("/api/pipelines", json=template_body("x2", ("a", TESTSRC)))
            assert r.status_code == 409 and r.json()["detail"] == (
                "2 pipelines run (1 left behind, blocked in their input): the limit (max_pipelines)"
            )
            assert "avdnn_runs_left_behind 1.0" in served.client.get("/metrics").text
        wait_for("the run ended once its peer hung up", lambda: _left_behind(served, "blocked") == [])
    assert served.client.post("/api/pipelines", json=template_body("x2", ("a", TESTSRC))).status_code == 201


def test_a_listening_input_left_behind_has_its_socket_shut_and_ends(serve: Any) -> None:
    """tcp ?listen=1 waits for its peer without a bound: deleting it shuts the socket from outside."""
    served = serve(max_pipelines=1, stop_timeout=0.3, **LISTEN)
    for k in range(3):
        port = free_port()
        body = template_body(f"l{k}", ("a", f"tcp://127.0.0.1:{port}?listen=1"), input_options=[])
        r = served.client.post("/api/pipelines", json=body)
        assert r.status_code == 201, r.text
        tcp_listening(port)
        assert served.client.delete(f"/api/pipelines/l{k}").status_code == 200
        assert not _listening(port)  # shut by the delete itself
        wait_for("its run ended", lambda k=k: _left_behind(served, f"l{k}") == [])  # type: ignore[misc]


def test_a_create_racing_the_stop_is_stopped_and_later_ones_refused(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() (SIGTERM's) runs while a create is between its check and its start: the create
    fails (503), nothing it would have started runs; creates and joins after it: 503."""
    served = serve()
    assert served.client.post("/api/pipelines", json=template_body("early", ("a", TESTSRC))).status_code == 201
    entered, go = threading.Event(), threading.Event()
    caught: list[ServedPipeline] = []
    check = ServedPipeline.check

    def held(self: ServedPipeline) -> None:
        if self.id == "late":
            caught.append(self)
            entered.set()
            assert go.wait(DEADLINE)
        check(self)

    monkeypatch.setattr(ServedPipeline, "check", held)
    answer: list[httpx.Response] = []
    poster = threading.Thread(
        target=lambda: answer.append(served.client.post("/api/pipelines", json=template_body("late", ("a", TESTSRC))))
    )
    poster.start()
    assert entered.wait(DEADLINE)
    served.service.close()  # what the lifespan runs at SIGTERM
    go.set()
    poster.join(DEADLINE)
    assert answer[0].status_code == 503, answer[0].text
    assert _local_agent(served).running_outputs("late") == [] and caught[0].current() == []
    r = served.client.post("/api/pipelines", json=template_body("after", ("a", TESTSRC)))
    assert r.status_code == 503 and r.json()["detail"] == "the service is stopping"
    r = served.client.post("/api/pipelines/early/sources", json={"id": "b", "url": TESTSRC})
    assert r.status_code == 503 and r.json()["detail"] == "the service is stopping"
