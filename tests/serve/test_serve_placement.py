"""Placement and its guards without a cluster: the node with the most room (by the agents' own
figures, what the source asks for, the per-node cap), an agent's epochs and its own confinement,
the relay of a node's events, and the service's one node when it runs without ``--ray``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from serve_util import free_port, wait_for
from spine_util import need_installed, run_cli_subprocess

from avdnn import api
from avdnn.cli.serve import jobs_from_argv
from avdnn.serve import ServeConfig
from avdnn.serve.accounting import Totals
from avdnn.serve.agent import LOCAL, NodeView, Placement, SourceView, StaleEpochError
from avdnn.serve.confine import ForbiddenError
from avdnn.serve.errors import LimitError
from avdnn.serve.host import LocalAgent
from avdnn.serve.placed import PlacedSource
from avdnn.serve.placement import NodeInfo, choose
from avdnn.serve.rayagent import Relay

TESTSRC = "testsrc2=size=64x48:rate=25"


class _NoAgents:
    def agent(self, node: str) -> None:
        return None


def _source(sid: str = "s", *, node: str | None = None, **resources: float) -> PlacedSource:
    placed = PlacedSource("p", sid, "url", lambda node: api.Job("x", output="y"), _NoAgents(), resources=resources)
    if node is not None:
        placed.bind(node, 1)
    return placed


def _node(
    nid: str, *, cpu: float = 0.0, cpus: float = 1.0, behind: bool = False, **more: float
) -> tuple[NodeInfo, NodeView]:
    sources = [SourceView("p", "x", 1, {}, Totals(), 0.0, "running", behind=behind)] if behind else []
    return NodeInfo(nid, "127.0.0.1", True, {"CPU": cpus, **more}), NodeView(nid, "i", sources, cpu=cpu)


def test_the_node_with_the_most_room_by_its_figures() -> None:
    table = [_source("a", node="n1"), _source("b", node="n1"), _source("c", node="n2")]
    up = [_node("n1"), _node("n2"), _node("n3")]
    assert choose(_source(), up, table, None) == "n3"  # a node that just joined holds none: it gets the next
    up = [_node("n1"), _node("n2")]
    assert choose(_source(), up, table, None) == "n2"  # the fewest sources
    assert choose(_source(), [_node("n1", cpus=4.0), _node("n2")], table, None) == "n1"  # per CPU: 0.5 < 1
    assert choose(_source(), [_node("n1"), _node("n2", behind=True)], table, None) == "n1"  # n2 drops frames
    assert choose(_source(), [_node("n1"), _node("n2", cpu=0.95)], table, None) == "n1"  # n2 saturated
    assert choose(_source(), [_node("n4", cpu=0.5), _node("n3", cpu=0.2)], [], None) == "n3"  # then the least load


def test_a_source_never_goes_where_it_does_not_fit() -> None:
    up = [_node("cpu1"), _node("gpu1", GPU=1.0)]
    table = [_source("a", node="gpu1"), _source("b", node="gpu1")]
    assert choose(_source(GPU=1), up, table, None) == "gpu1"  # the busier node: the only one with a GPU
    with pytest.raises(LimitError, match=r"no node has room for source 's' \(asking GPU 2\): 2 node\(s\) up"):
        choose(_source(GPU=2), up, table, None)
    assert choose(_source(), up, table, 2) == "cpu1"
    with pytest.raises(LimitError, match=r"at most 2 per node \(max_sources_per_node\)"):
        choose(_source(GPU=1), up, table, 2)
    with pytest.raises(LimitError, match=r": 0 node\(s\) up"):
        choose(_source(), [], table, None)


def _placement(epoch: int, output: str, sid: str = "cam") -> Placement:
    (job,) = jobs_from_argv(["-f", "lavfi", "-re", "-i", TESTSRC, "-c:v", "mpeg4", output])  # as the head hands it
    return Placement("p", sid, TESTSRC, job, epoch)


def test_an_agent_runs_one_placement_of_a_source_and_confines_what_it_is_handed(tmp_path: Path) -> None:
    published: list[Any] = []
    agent = LocalAgent(LOCAL, ServeConfig(media_root=tmp_path), lambda *event: published.append(event))
    agent.start()
    try:
        agent.place(_placement(2, "cam.mkv"))
        wait_for("its first frames", lambda: (v := agent.view("p", "cam")) and v.totals.written > 2)
        with pytest.raises(StaleEpochError, match="placement 1 is stale"):
            agent.place(_placement(1, "cam.mkv"))  # a late, older placement: refused
        with pytest.raises(StaleEpochError, match="stop 1 is stale"):
            agent.unplace("p", "cam", 1, 5.0)  # a late, older stop: the run goes on
        final = agent.unplace("p", "cam", 2, 5.0)
        assert final is not None and final.state == "ended" and final.epoch == 2 and final.samples is not None
        assert agent.view("p", "cam") is None
        with pytest.raises(StaleEpochError):
            agent.place(_placement(2, "cam.mkv"))  # the same placement again (a retried call): refused
        agent.place(_placement(3, "cam.mkv"))  # a newer one: a new segment beside the first
        wait_for("its second run", lambda: (v := agent.view("p", "cam")) and v.totals.written > 0)
        assert agent.unplace("p", "cam", 3, 5.0) is not None
        assert sorted(p.name for p in tmp_path.iterdir()) == ["cam.1.mkv", "cam.mkv"]
        with pytest.raises(ForbiddenError, match="outside the media root"):
            agent.place(_placement(4, "/etc/avdnn-cam.mkv", sid="out"))  # the node's own check
        assert agent.node_view().sources == []
    finally:
        agent.close(5.0)


def test_the_relay_keeps_the_newest_events_and_counts_those_it_lost() -> None:
    relay = Relay(keep=3)
    for n in range(5):
        relay.put("p", "s", {"seq": n})
    events, cursor, lost = relay.since(0)
    assert [e[3]["seq"] for e in events] == [2, 3, 4] and cursor == 5 and lost == 2
    assert relay.since(cursor) == ([], 5, 0)
    relay.put("p", "s", {"seq": 5})
    events, cursor, lost = relay.since(5, limit=10)
    assert [e[0] for e in events] == [6] and lost == 0


def test_one_node_without_ray_listed_and_a_resource_it_lacks_refused(serve: Any, tmp_path: Path) -> None:
    served = serve(media_root=tmp_path)
    body = {
        "name": "p",
        "chain": "scale=32:24",
        "output": ["-f", "null", "-"],
        "input_options": ["-f", "lavfi", "-re"],
        "sources": [{"id": "a", "url": TESTSRC}],
        "resources": {"GPU": 64},
    }
    r = served.client.post("/api/pipelines", json=body)
    assert r.status_code == 409 and r.json()["detail"] == (
        "no node has room for source 'a' (asking GPU 64): 1 node(s) up"
    )
    assert served.client.post("/api/pipelines", json={**body, "resources": {"GPU ": 1}}).status_code == 422
    del body["resources"]
    assert served.client.post("/api/pipelines", json=body).status_code == 201
    (node,) = served.client.get("/api/nodes").json()["nodes"]
    assert node["id"] == LOCAL and node["alive"] and node["sources"] == ["p/a"] and node["resources"]["CPU"] >= 1
    assert served.status("p")["sources"][0]["node"] == LOCAL
    drained = served.client.post(f"/api/nodes/{LOCAL}/drain").json()  # nowhere to go: it runs on
    assert drained["moved"] == [] and [r["source"] for r in drained["left"]] == ["a"]
    assert served.status("p")["sources"][0]["moves"] == 0


def test_a_cluster_that_is_not_there_is_one_line_before_anything_serves() -> None:
    need_installed("ray", "avdnn serve --ray needs Ray: pip install 'avdnn[ray]'", kind="ray")
    res = run_cli_subprocess(["serve", "--ray", f"127.0.0.1:{free_port()}", "--port", str(free_port())])
    assert res.rc != 0 and res.err.strip().endswith("Connection refused"), res.err
    assert "cannot reach the Ray cluster at '127.0.0.1:" in res.err and "Traceback" not in res.err
