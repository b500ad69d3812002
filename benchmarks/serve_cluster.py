"""The control plane of ``avdnn serve --ray`` at scale, simulated on this machine: the head's cost.

    PYTHONPATH=src .venv/bin/python benchmarks/serve_cluster.py                  # 8 nodes x 16 sources
    PYTHONPATH=src .venv/bin/python benchmarks/serve_cluster.py --nodes 4 --per-node 8 --json out.json
    PYTHONPATH=src .venv/bin/python benchmarks/serve_cluster.py --quick          # smoke: 2 nodes x 2 sources

Every source is a lavfi ``testsrc2`` (64x48) read live (``-re``) at ``--rate`` frames a second,
through ``dnn_detect`` on ``sleepybox`` (benchmarks/sleepy.py: a backend that only waits, 2 ms a
batch and 1 ms an image, and finds one box that keeps moving), ``track`` and ``events``: no model
CPU, and a steady flow of ``new``/``end`` events. One template pipeline holds them all, batched per
node (``model_instance``). Two variants over the same sources:

* ``process``: ``avdnn serve`` without ``--ray``, in this process: every run here;
* ``cluster``: the head in this process, on a Ray ``cluster_utils.Cluster`` of ``--nodes`` one-CPU
  nodes on 127.0.0.1 (the Ray head node is one of them); the runs are the nodes' agents'.

Measured, per variant, with one ``/api/events`` client reading (curl, a process of its own):

* ``head ms/s/source``: this process's CPU over a ``--window`` in which only that client asks, per
  second and per source; in the cluster, first with the agents idle (no source: the per-node cost
  of the pulls) and then with every source placed (the per-source cost);
* status latency (``GET /api/pipelines/ID`` with every source; ``GET`` of one source) and
  ``GET /metrics``, p50 and p95 over ``--requests`` requests each, one at a time;
* events per second through the head (``avdnn_events_published_total{sink="sse"}`` over the window,
  what the client was handed);
* in the cluster, failover: ``--fail`` worker nodes removed at once, in rounds (1, then 2...): the
  sources moved, the seconds until every one is placed again (its move counted) and until every one
  runs there (a frame written), and the median move gap the service counts.

Nothing is asserted about the figures (docs/performance.md has them); the quick mode is the tests'
smoke run. On paper, the head's cost at other sizes is ``pull * nodes + per_source * sources``
(printed for 100 nodes and 400 cameras).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src"), str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
)
os.environ.setdefault("AVDNN_SLEEP", "2,1")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the nodes and this driver on 127.0.0.1
sys.path[:0] = [str(ROOT / "src"), str(HERE)]

import httpx  # noqa: E402
import sleepy  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from avdnn.cli.serve import jobs_from_argv  # noqa: E402
from avdnn.serve import ServeConfig, make_server  # noqa: E402

DEADLINE = 300.0


def chain(batch: int) -> str:
    return (
        f"dnn_detect=dnn_backend={sleepy.BOX}:model=sleep:model_instance=det:batch_size={batch}:batch_timeout=0.05,"
        "track,events=stream={source}"
    )


class Head:
    """``avdnn serve`` in a thread of this process, its client, and a curl reading its events."""

    def __init__(self, media: Path, **settings: Any) -> None:
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.config = ServeConfig(port=port, token="bench-token", media_root=media, max_sources=4096, **settings)
        self.server = make_server(self.config, jobs_from_argv)
        self.url = f"http://127.0.0.1:{port}"
        auth = {"Authorization": "Bearer bench-token"}
        self.client = httpx.Client(base_url=self.url, headers=auth, timeout=DEADLINE)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait("the head", lambda: self.server.started)
        self.sse = subprocess.Popen(
            ["curl", "-sN", "-H", "Authorization: Bearer bench-token", f"{self.url}/api/events"],
            stdout=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        self.sse.kill()
        self.sse.wait()
        self.server.should_exit = True
        self.thread.join(DEADLINE)
        self.client.close()


def wait(what: str, check: Any, deadline: float = DEADLINE) -> Any:
    end = time.monotonic() + deadline
    while not (value := check()):
        if time.monotonic() > end:
            raise SystemExit(f"{what}: not after {deadline} s")
        time.sleep(0.1)
    return value


def metric(head: Head, name: str, labels: dict[str, str]) -> float:
    for family in text_string_to_metric_families(head.client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def running(head: Head, pid: str) -> dict[str, Any] | None:
    st: dict[str, Any] = head.client.get(f"/api/pipelines/{pid}").json()
    return st if all(s["state"] == "running" for s in st["sources"]) else None


def quiet_window(head: Head, seconds: float) -> dict[str, float]:
    """This process's CPU and the events handed to the client over ``seconds`` in which nothing else asks."""
    sent = metric(head, "avdnn_events_published_total", {"sink": "sse"})
    wall, cpu = time.monotonic(), time.process_time()
    time.sleep(seconds)  # the window itself: what is measured is what runs meanwhile
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    sent = metric(head, "avdnn_events_published_total", {"sink": "sse"}) - sent
    return {"cpu_ms_per_s": 1000 * cpu / wall, "events_per_s": sent / wall}


def latencies(head: Head, path: str, n: int) -> dict[str, float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        assert head.client.get(path).status_code == 200
        times.append(1000 * (time.perf_counter() - t))
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}


def measure(head: Head, pid: str, sources: int, args: argparse.Namespace) -> dict[str, Any]:
    body = {
        "name": pid,
        "chain": chain(args.batch),
        "output": ["-f", "null", "-"],
        "input_options": ["-f", "lavfi", "-re"],
        "sources": [{"id": f"s{k}", "url": f"testsrc2=size=64x48:rate={args.rate}"} for k in range(sources)],
    }
    t = time.monotonic()
    r = head.client.post("/api/pipelines", json=body)
    assert r.status_code == 201, r.text
    wait("every source running", lambda: running(head, pid))
    out: dict[str, Any] = {"sources": sources, "start_s": round(time.monotonic() - t, 2)}
    time.sleep(args.settle)  # past the start's bursts
    window = quiet_window(head, args.window)
    out["head_cpu_ms_per_s"] = round(window["cpu_ms_per_s"], 1)
    out["head_ms_per_s_per_source"] = round(window["cpu_ms_per_s"] / sources, 3)
    out["events_per_s"] = round(window["events_per_s"], 1)
    out["status_all"] = latencies(head, f"/api/pipelines/{pid}", args.requests)
    out["status_one"] = latencies(head, f"/api/pipelines/{pid}/sources/s0", args.requests)
    out["metrics"] = latencies(head, "/metrics", args.requests)
    return out


def process_variant(args: argparse.Namespace, media: Path) -> dict[str, Any]:
    sleepy.register()
    head = Head(media)
    try:
        return measure(head, "p", args.nodes * args.per_node, args)
    finally:
        head.client.delete("/api/pipelines/p")
        head.stop()


def cluster_variant(args: argparse.Namespace, media: Path) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    from avdnn.serve.cluster import NAMESPACE

    node = {"num_cpus": 1, "num_gpus": 0, "node_ip_address": "127.0.0.1"}
    t = time.monotonic()
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={**node, "include_dashboard": False})
    out: dict[str, Any] = {"nodes": args.nodes}
    head = None
    try:
        workers = [cluster.add_node(**node) for _ in range(args.nodes - 1)]
        cluster.wait_for_nodes()
        ray.init(
            address=cluster.address,
            namespace=NAMESPACE,
            logging_level="ERROR",
            log_to_driver=False,
            runtime_env={"worker_process_setup_hook": "sleepy.register"},  # every agent has the backend
        )
        out["cluster_start_s"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        head = Head(media, ray=cluster.address, failover_timeout=30.0)
        nodes = lambda: [n for n in head.client.get("/api/nodes").json()["nodes"] if n["agent"] == "up"]  # noqa: E731
        wait("every agent up", lambda: len(nodes()) == args.nodes)
        out["agents_start_s"] = round(time.monotonic() - t, 1)
        idle = quiet_window(head, args.window)
        out["idle_head_cpu_ms_per_s"] = round(idle["cpu_ms_per_s"], 1)
        out["pull_ms_per_s_per_node"] = round(idle["cpu_ms_per_s"] / args.nodes, 3)
        out.update(measure(head, "c", args.nodes * args.per_node, args))
        out["failover"] = [failover(head, cluster, workers, k) for k in range(1, args.fail + 1)]
        head.client.delete("/api/pipelines/c")
    finally:
        if head is not None:
            head.stop()
        ray.shutdown()
        cluster.shutdown()
    return out


def failover(head: Head, cluster: Any, workers: list[Any], count: int) -> dict[str, Any]:
    """Remove ``count`` worker nodes holding sources at once: how long until theirs run elsewhere."""
    st = head.client.get("/api/pipelines/c").json()
    where = {s["id"]: (s["node"], s["moves"]) for s in st["sources"]}
    gone = [w for w in workers if any(n == w.node_id for n, _ in where.values())][:count]
    moved = {sid for sid, (n, _) in where.items() if n in {w.node_id for w in gone}}
    t = time.monotonic()
    for w in gone:
        cluster.remove_node(w)
        workers.remove(w)
    placed_at = running_at = None
    while running_at is None:
        rows = {s["id"]: s for s in head.client.get("/api/pipelines/c").json()["sources"]}
        now = time.monotonic() - t
        if placed_at is None and all(rows[sid]["moves"] > where[sid][1] for sid in moved):
            placed_at = now
        if placed_at is not None and all(rows[sid]["state"] == "running" for sid in moved):
            running_at = now
        if now > DEADLINE:
            raise SystemExit("the sources of the removed nodes did not run again")
        time.sleep(0.1)
    gaps = [rows[sid]["move_gap_seconds"] for sid in moved]
    return {
        "nodes_removed": len(gone),
        "sources_moved": len(moved),
        "placed_s": round(placed_at, 2),
        "running_s": round(running_at, 2),
        "median_gap_s": round(statistics.median(gaps), 2) if gaps else None,
    }


def paper(cluster: dict[str, Any], nodes: int = 100, cameras: int = 400) -> dict[str, Any]:
    """The head's CPU at ``nodes`` and ``cameras`` from the measured per-node and per-source costs."""
    pull = cluster["pull_ms_per_s_per_node"]
    per_source = max(0.0, (cluster["head_cpu_ms_per_s"] - cluster["idle_head_cpu_ms_per_s"]) / cluster["sources"])
    status = cluster["status_all"]["p50_ms"] / cluster["sources"]
    metrics = cluster["metrics"]["p50_ms"] / cluster["sources"]
    return {
        "nodes": nodes,
        "cameras": cameras,
        "head_cpu_ms_per_s": round(pull * nodes + per_source * cameras, 1),
        "status_all_p50_ms": round(status * cameras, 1),
        "metrics_p50_ms": round(metrics * cameras, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--per-node", type=int, default=16, dest="per_node")
    p.add_argument("--rate", type=float, default=2.0, help="frames a second of each source")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--window", type=float, default=30.0)
    p.add_argument("--settle", type=float, default=10.0)
    p.add_argument("--requests", type=int, default=50)
    p.add_argument("--fail", type=int, default=2, help="failover rounds: 1, then 2... nodes removed at once")
    p.add_argument("--variants", default="process,cluster")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    if args.quick:
        args.nodes, args.per_node, args.window, args.settle, args.requests, args.fail = 2, 2, 3.0, 1.0, 5, 1
    doc: dict[str, Any] = {"args": vars(args), "nproc": os.cpu_count(), "load": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="avdnn-cluster-bench-") as media:
        for variant in args.variants.split(","):
            doc[variant] = (process_variant if variant == "process" else cluster_variant)(args, Path(media))
            print(variant, json.dumps(doc[variant]), flush=True)
    if "cluster" in doc:
        doc["paper"] = paper(doc["cluster"])
        print("paper", json.dumps(doc["paper"]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
