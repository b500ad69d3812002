"""A two-node Ray cluster on this machine (``ray start --head`` + ``ray start --address``), joined with --address.

Both nodes listen on 127.0.0.1 and authenticate with a token made for the test; each has one
CPU, so the two one-CPU workers land one on each node, and the report's ``node`` field shows
both. Teardown kills exactly the process groups this test started (``ray stop`` would also
stop any other Ray on the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_util import CORPUS, make_corpus
from spine_util import need_tool

pytest.importorskip("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_cli() -> str:
    return need_tool(
        shutil.which("ray", path=os.path.dirname(sys.executable)),
        "the ray command is not installed next to this Python",
    )


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            pytest.fail(f"ray start exited {proc.returncode}:\n{path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    pytest.fail(f"ray start did not come up in {timeout}s:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def cluster(ray_env: None) -> Iterator[tuple[str, dict[str, str]]]:
    """(address, env) of a head node plus a second node, both on loopback; stopped after."""
    ray = _ray_cli()
    root = Path(tempfile.mkdtemp(prefix="avr", dir="/tmp"))  # short: Ray's socket paths live under it
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), RAY_USAGE_STATS_ENABLED="0")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--num-gpus", "0", "--block"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i, args in enumerate(
            (
                ["--head", "--port", str(port), "--include-dashboard=false", "--temp-dir", str(root / "t")],
                ["--address", address],
            )
        ):
            log = root / f"node{i}.log"
            with open(log, "wb") as fh:
                procs.append(
                    subprocess.Popen(
                        [ray, "start", *args, *common],
                        stdout=fh,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                )
            _wait_for(log, "Ray runtime started", procs[-1])
        yield address, env
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the node and every process it started
            proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


def test_a_two_node_cluster_runs_files_on_both(cluster: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    address, env = cluster
    corpus = make_corpus(tmp_path, bad=False)
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "avdnn",
            "batch",
            "--address",
            address,
            "--workers",
            "2",
            "--report",
            str(report),
            "-i",
            *[str(corpus / f"{s}.mp4") for s in ("c1", "c2", "c4", "c5")],
            "-f",
            "framemd5",
            "-o",
            str(tmp_path / "out/{stem}.framemd5"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(report.read_text())
    assert data["address"] == address
    assert [f["status"] for f in data["files"]] == ["ok"] * 4
    assert len({f["node"] for f in data["files"]}) == 2, data["files"]  # one worker on each node
    assert set(CORPUS) >= {Path(f["input"]).stem for f in data["files"]}


def test_a_driver_of_its_own_joins_a_loopback_cluster(ray_env: None, tmp_path: Path) -> None:
    """``avdnn batch --address`` to a cluster whose nodes are on 127.0.0.1 (Ray's own
    ``cluster_utils.Cluster``), from a process whose environment says nothing of loopback: it joins
    as 127.0.0.1 and runs the files (it used to wait a minute at the machine's own address, where
    the cluster does not listen, and report every file unfinished)."""
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "num_gpus": 0, "node_ip_address": "127.0.0.1"}
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        corpus = make_corpus(tmp_path, bad=False)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        inputs = [str(corpus / f"{s}.mp4") for s in ("c1", "c2")]
        out = str(tmp_path / "out/{stem}.framemd5")
        argv = ["batch", "--address", cluster.address, "--workers", "2", "-i", *inputs, "-f", "framemd5", "-o", out]
        proc = subprocess.run(
            [sys.executable, "-m", "avdnn", *argv], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    finally:
        cluster.shutdown()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ok 2, failed 0" in proc.stderr, proc.stderr[-3000:]
