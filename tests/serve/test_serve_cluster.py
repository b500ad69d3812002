"""``avdnn serve --ray``: the service on a real Ray cluster on this machine (Ray's own
``ray.cluster_utils.Cluster``: a head node and two worker nodes of one CPU each, every one on
127.0.0.1), one cluster for the module. Live sources are lavfi ``-re`` graphs and real ffmpeg
cameras serving TCP; the head is ``avdnn serve --ray`` itself (a process of its own, which must
join a loopback cluster without help) or the service in this process.

What it shows: sources spread over the nodes; a worker node removed and its sources running on
the survivors, each move counted and the books balanced; a node added and used; a drain; a head
restarted with ``--state`` adopting the runs (not restarting them); a partitioned agent's run
stopped when it answers again, and a stale placement refused; every node's events and previews
through the head. Every wait is on a state, never on a time.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_util import DEADLINE, Camera, EventStream, Served, decoded_frames, source, wait_for
from spine_util import need_module
from test_serve_check import metric_values
from test_serve_events import events_chain
from test_serve_process import Process

import avdnn
from avdnn import api
from avdnn.serve.agent import Placement, StaleEpochError
from avdnn.serve.cluster import NAMESPACE, RemoteAgent, agent_name
from avdnn.serve.confine import ForbiddenError

# a driver in this process joins a loopback cluster from 127.0.0.1 (see avdnn/_util/rayinit.py)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = need_module("ray", "the cluster tests need Ray: pip install 'avdnn[ray]'", kind="ray")


LOOPBACK = "127.0.0.1"
SRC = str(Path(avdnn.__file__).resolve().parents[1])
LAVFI = ["-f", "lavfi", "-re"]
TESTSRC = "testsrc2=size=64x48:rate=10"
OUTPUT = ["-c:v", "mpeg4", "{source}.mkv"]
#: a lost node's sources run elsewhere within this (an agent silent for half of it is lost): short,
#: so a test waits little, and long enough that a busy machine's slow answer is no loss
FAILOVER = 10.0
#: a wait long enough for a node's agent to start (a worker process importing avdnn) on a busy machine
SLOW = 2 * DEADLINE


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head node and two workers, one CPU each, on loopback; this process joined as a driver."""
    from ray.cluster_utils import Cluster

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([SRC, *([old] if old else [])])  # the nodes' agents import this avdnn
    if ray.is_initialized():
        ray.shutdown()
    node = {"num_cpus": 1, "num_gpus": 0, "node_ip_address": LOOPBACK}
    c = Cluster(initialize_head=True, connect=False, head_node_args={**node, "include_dashboard": False})
    try:
        for _ in range(2):
            c.add_node(**node)
        c.wait_for_nodes()
        ray.init(
            address=c.address,
            namespace=NAMESPACE,
            _node_ip_address=LOOPBACK,
            logging_level="ERROR",
            log_to_driver=False,
        )
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture
def keepalive(monkeypatch: pytest.MonkeyPatch) -> float:
    """FastAPI's SSE keep-alive comment every 0.3 s instead of 15 (the event readers stop at a line)."""
    import fastapi.routing

    monkeypatch.setattr(fastapi.routing, "_PING_INTERVAL", 0.3)
    return 0.3


def _end_agents() -> None:
    """Kill every node's agent (a detached one outlives its head) and wait until its name is free."""
    for n in ray.nodes():
        with contextlib.suppress(ValueError):
            ray.kill(ray.get_actor(agent_name(n["NodeID"]), namespace=NAMESPACE), no_restart=True)
    for n in ray.nodes():
        wait_for("an agent's name freed", lambda n=n: not _agent_there(n["NodeID"]))  # type: ignore[misc]


def _agent_there(node: str) -> bool:
    try:
        ray.get_actor(agent_name(node), namespace=NAMESPACE)
    except ValueError:
        return False
    return True


@pytest.fixture
def head(cluster: Any, tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``head(**settings)``: the service in this process on the cluster, media root ``tmp_path``."""
    started: list[Served] = []

    def start(**settings: Any) -> Served:
        settings = {
            "ray": cluster.address,
            "media_root": tmp_path,
            "failover_timeout": FAILOVER,
            "retry_interval": 1.0,
            **settings,
        }
        served = Served(**settings).start()
        started.append(served)
        return served

    yield start
    for served in started:
        if served._thread.is_alive():
            served.stop()
    _end_agents()


def _nodes(served: Served | Process) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in served.client.get("/api/nodes").json()["nodes"]}


def _up(served: Served | Process, count: int) -> dict[str, dict[str, Any]]:
    nodes = {k: n for k, n in _nodes(served).items() if n["agent"] == "up"}
    return nodes if len(nodes) == count else {}


def _all_running(served: Served | Process, pid: str, written: int = 3) -> dict[str, Any] | None:
    st: dict[str, Any] = served.client.get(f"/api/pipelines/{pid}").json()
    rows = [s for s in st["sources"] if not s.get("departed")]
    ok = all(s["state"] == "running" and s["frames"]["written"] > written for s in rows)
    return st if ok else None


def _balanced(row: dict[str, Any]) -> None:
    f = row["frames"]
    assert row["balanced"], row["violations"]
    assert f["read"] + f["added"] == f["written"] + f["failed"] + f["dropped"] + f["unfinished"], row


def _template(name: str, *sids: str) -> dict[str, Any]:
    return {
        "name": name,
        "chain": "scale=32:24",
        "output": OUTPUT,
        "input_options": LAVFI,
        "sources": [{"id": sid, "url": TESTSRC} for sid in sids],
    }


def test_six_cameras_spread_over_the_nodes_survive_a_worker_removed(cluster: Any, ffmpeg: str, tmp_path: Path) -> None:
    """The issue's check: ``avdnn serve --ray ADDRESS --token T --media-root DIR`` (a process of its
    own, joining the loopback cluster without help from its environment), a template pipeline of six
    live cameras; their ``node`` fields name at least two nodes; a worker holding sources is removed
    and every source runs on a survivor with its move counted; DELETE answers balanced books."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    args = ["--ray", cluster.address, "--token", "T0ken-for-the-cluster", "--media-root", str(tmp_path)]
    cams = [Camera(ffmpeg).start() for _ in range(6)]
    served = Process(*args, "--retry-interval", "1", "--failover-timeout", str(FAILOVER), env=env)
    served.client.headers["Authorization"] = "Bearer T0ken-for-the-cluster"
    added = None
    try:
        assert served.client.get("/api/nodes", headers={"Authorization": "Bearer nope"}).status_code == 401
        wait_for("three agents up", lambda: _up(served, 3), deadline=SLOW)
        body = {
            "name": "lobby",
            "chain": "scale=80:60",
            "output": OUTPUT,
            "sources": [{"id": f"cam{k}", "url": cam.url} for k, cam in enumerate(cams)],
        }
        r = served.client.post("/api/pipelines", json=body)
        assert r.status_code == 201, r.text
        st = wait_for("six cameras running", lambda: _all_running(served, "lobby"), deadline=SLOW)
        placed = {s["id"]: s["node"] for s in st["sources"]}
        assert len(set(placed.values())) >= 2, placed
        held = {n: sum(1 for v in placed.values() if v == n) for n in set(placed.values())}
        worker = next(w for w in cluster.worker_nodes if held.get(w.node_id))
        cluster.remove_node(worker)

        def moved() -> dict[str, Any] | None:
            for cam in cams:  # a camera whose client went with the node serves the next one
                if cam.proc is not None and cam.proc.poll() is not None:
                    cam.start()
            st = _all_running(served, "lobby")
            return st if st and all(s["node"] != worker.node_id for s in st["sources"]) else None

        st = wait_for("every camera running on a survivor", moved, deadline=90)
        rows = {s["id"]: s for s in st["sources"]}
        for sid, node in placed.items():
            assert rows[sid]["moves"] == (1 if node == worker.node_id else 0), rows[sid]
        assert sum(r["moves"] for r in rows.values()) == held[worker.node_id]
        assert _nodes(served)[worker.node_id]["alive"] is False
        final = served.client.delete("/api/pipelines/lobby").json()
        assert final["state"] == "ended"
        for row in final["sources"]:
            _balanced(row)
            if placed[row["id"]] == worker.node_id:  # a new segment on its new node, playable
                assert row["outputs"][-1] == str(tmp_path / f"{row['id']}.1.mkv") and row["move_gap_seconds"] > 0
                assert decoded_frames(ffmpeg, tmp_path / f"{row['id']}.1.mkv") > 0
        added = cluster.add_node(num_cpus=1, num_gpus=0, node_ip_address=LOOPBACK)  # the module's shape again
        cluster.wait_for_nodes()
    finally:
        rc, err = served.terminate()
        for cam in cams:
            cam.kill()
    assert rc == 0, err
    assert "Traceback" not in err
    assert added is not None


def test_a_node_that_joins_gets_the_next_source_and_a_drain_moves_it(head: Any, cluster: Any) -> None:
    served = head()
    wait_for("three agents up", lambda: _up(served, 3), deadline=SLOW)
    assert served.client.post("/api/pipelines", json=_template("p", "a", "b", "c")).status_code == 201
    st = wait_for("three running", lambda: _all_running(served, "p"), deadline=SLOW)
    assert len({s["node"] for s in st["sources"]}) == 3  # one a node: each held none before
    joined = cluster.add_node(num_cpus=1, num_gpus=0, node_ip_address=LOOPBACK)
    try:
        cluster.wait_for_nodes()
        wait_for("the new node's agent up", lambda: _up(served, 4), deadline=SLOW)
        r = served.client.post("/api/pipelines/p/sources", json={"id": "d", "url": TESTSRC})
        assert r.status_code == 201, r.text
        assert r.json()["node"] == joined.node_id  # the one node holding none
        wait_for("d running", lambda: _all_running(served, "p"), deadline=SLOW)

        r = served.client.post(f"/api/nodes/{joined.node_id}/drain")
        assert r.status_code == 200, r.text
        assert r.json()["moved"] and r.json()["moved"][0]["source"] == "d" and r.json()["left"] == []
        st = wait_for("d running elsewhere", lambda: _all_running(served, "p", written=0), deadline=SLOW)
        d = source(st, "d")
        assert d["node"] != joined.node_id and d["moves"] == 1 and d["outputs"][-1].endswith("d.1.mkv")
        row = _nodes(served)[joined.node_id]
        assert row["draining"] and row["sources"] == []
        r = served.client.post("/api/pipelines/p/sources", json={"id": "e", "url": TESTSRC})
        assert r.status_code == 201 and r.json()["node"] != joined.node_id  # a draining node takes none
        assert served.client.delete(f"/api/nodes/{joined.node_id}/drain").json()["draining"] is False
        assert served.client.post("/api/nodes/nosuchnode/drain").status_code == 404
        final = served.client.delete("/api/pipelines/p").json()
        for row in final["sources"]:
            _balanced(row)
    finally:
        cluster.remove_node(joined)


def test_a_restarted_head_adopts_the_runs_it_finds(head: Any, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = head(state=state)
    assert first.client.post("/api/pipelines", json=_template("kept", "a", "b")).status_code == 201
    before = wait_for("both running", lambda: _all_running(first, "kept"), deadline=SLOW)
    first.stop()  # with --state on a cluster, its runs are left to the next head

    second = head(state=state)
    st = wait_for("both adopted, frames still coming", lambda: _all_running(second, "kept", written=10), deadline=SLOW)
    for row in st["sources"]:
        was = source(before, row["id"])
        assert row["node"] == was["node"] and row["runs"] == 1 and row["outputs_total"] == 1, row
        assert row["moves"] == 0 and row["frames"]["read"] >= was["frames"]["read"]
    final = second.client.delete("/api/pipelines/kept").json()
    for row in final["sources"]:
        _balanced(row)
        assert row["outputs"] == [str(tmp_path / f"{row['id']}.mkv")]  # one run, one file: never restarted
    assert not (state / "pipelines" / "kept.json").exists()


def test_a_partitioned_agent_has_its_run_stopped_when_it_answers_again(head: Any) -> None:
    served = head()
    wait_for("three agents up", lambda: _up(served, 3), deadline=SLOW)
    assert served.client.post("/api/pipelines", json=_template("cut", "a")).status_code == 201
    st = wait_for("a running", lambda: _all_running(served, "cut"), deadline=SLOW)
    node = source(st, "a")["node"]
    agent = RemoteAgent(node, ray.get_actor(agent_name(node), namespace=NAMESPACE))
    _, pid = ray.get(agent.handle.ping.remote(), timeout=DEADLINE)
    os.kill(pid, signal.SIGSTOP)  # the node's agent answers nothing: cut off from the head
    try:
        st = wait_for(
            "a running on another node",
            lambda: (s := _all_running(served, "cut", written=0)) and source(s, "a")["node"] != node and s,
            deadline=SLOW,
        )
        assert source(st, "a")["moves"] == 1
    finally:
        os.kill(pid, signal.SIGCONT)
    # it answers again with the run it still had: the head stops that one (a newer placement runs)
    wait_for("its stale run stopped", lambda: ray.get(agent.handle.view.remote(0, None)).sources == [], deadline=SLOW)
    stale = Placement("cut", "a", TESTSRC, api.Job(TESTSRC, output="a.mkv", input_format="lavfi"), epoch=1)
    with pytest.raises(StaleEpochError, match="is stale"):
        agent.place(stale)  # a placement older than one it has seen: refused, nothing runs
    # a job that reaches an agent is confined there again, against the node's own media root
    outside = Placement("cut", "z", TESTSRC, api.Job(TESTSRC, output="/etc/z.mkv", input_format="lavfi"), epoch=10**9)
    with pytest.raises(ForbiddenError, match="outside the media root"):
        agent.place(outside)
    assert ray.get(agent.handle.view.remote(0, None)).sources == []

    # the agent holding it now dies: Ray starts it again on its node, empty; the source runs again
    now = source(served.status("cut"), "a")["node"]
    _, pid = ray.get(ray.get_actor(agent_name(now), namespace=NAMESPACE).ping.remote(), timeout=DEADLINE)
    os.kill(pid, signal.SIGKILL)
    wait_for(
        "a running again after its agent died",
        lambda: (s := _all_running(served, "cut", written=0)) and source(s, "a")["moves"] == 2,
        deadline=SLOW,
    )
    wait_for("the dead agent restarted by Ray", lambda: _up(served, 3), deadline=SLOW)
    final = served.client.delete("/api/pipelines/cut").json()
    (row,) = final["sources"]
    _balanced(row)
    assert row["moves"] == 2 and row["runs"] == 3


def test_every_nodes_events_and_previews_come_through_the_head(head: Any, detector: str, keepalive: float) -> None:
    served = head(media_root=Path(detector).parent)
    wait_for("three agents up", lambda: _up(served, 3), deadline=SLOW)
    body = {
        "name": "gate",
        "chain": events_chain(detector),
        "output": ["-f", "null", "-"],
        "input_options": LAVFI,
        "sources": [{"id": "a", "url": TESTSRC}, {"id": "b", "url": TESTSRC}],
    }
    with EventStream(served) as every:
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        st = wait_for("both running", lambda: _all_running(served, "gate"), deadline=SLOW)
        assert source(st, "a")["node"] != source(st, "b")["node"]
        wait_for("each source's new event", lambda: {e["data"]["source"] for e in every.events} == {"a", "b"})
        for sid in ("a", "b"):
            snap = served.client.get(f"/api/pipelines/gate/sources/{sid}/snapshot.jpg")
            assert snap.status_code == 200 and snap.content[:2] == b"\xff\xd8"
        with served.client.stream("GET", "/api/pipelines/gate/sources/b/preview.mjpg?fps=10") as r:
            assert r.headers["content-type"] == "multipart/x-mixed-replace; boundary=frame"
            seen = b""
            for chunk in r.iter_bytes():
                seen += chunk
                if seen.count(b"--frame") >= 2:
                    break
        assert served.client.delete("/api/pipelines/gate").status_code == 200
        ends = lambda: {e["data"]["source"] for e in every.events if e["event"] == "end"}  # noqa: E731
        wait_for("both sources' end events", lambda: ends() == {"a", "b"})

        def settled() -> dict[Any, float] | None:
            """The counts once every event the runs gave has reached the client, each counted once."""
            values = metric_values(served.client.get("/metrics").text)
            counts = [values[("avdnn_events_published_total", (("sink", s),))] for s in ("listener", "relay", "sse")]
            return values if counts == [len(every.events)] * 3 else None

        values = wait_for("every event relayed, handed to the client and counted", settled)
        got = list(every.events)
    assert values[("avdnn_events_dropped_total", (("sink", "relay"),))] == 0
    assert values[("avdnn_events_dropped_total", (("sink", "listener"),))] == 0
    for sid in ("a", "b"):  # each source's events in order, none lost on the way
        seqs = [e["data"]["event"]["seq"] for e in got if e["data"]["source"] == sid]
        assert seqs == list(range(len(seqs))), (sid, seqs)
