"""The benchmark keeps working: its quick mode runs a tiny case and writes JSON (no timing asserted)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from spine_util import need_installed, need_tool

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_runs_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--quick",
            "--cases",
            "smoke,memory",
            "--no-ffmpeg",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    cases = {r["case"]: r for r in doc["results"]}
    assert set(cases) == {"smoke", "memory"}
    assert not cases["smoke"]["errors"]
    assert {"a_raw", "b_file", "b_null", "c_file", "c_null"} <= set(cases["smoke"]["fps"])
    assert cases["memory"]["frames"] > 0 and "growth_mb" in cases["memory"]
    assert doc["machine"]["nproc"] >= 1
    assert "| smoke |" in proc.stdout


def test_multistream_benchmark_quick_runs(tmp_path: Path) -> None:
    """Two live copies of carphone through one shared detector (benchmarks/multistream.py --quick)."""
    out = tmp_path / "multi.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "multistream.py"),
            *["--quick", "--variants", "shared", "--json", str(out)],
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    (row,) = doc["rounds"]["shared"]
    assert row["read"] == 240 and row["written"] + row["dropped"] == row["read"]  # every frame accounted for
    assert row["instances"][0].startswith("model_instance det: 2 streams, ")
    assert "model_instance det: 2 streams" in proc.stdout


def _quick(script: str, out: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--json", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_batch_scaling_quick_runs(tmp_path: Path) -> None:
    """The raw OpenVINO batch-vs-singles loop (benchmarks/batch_scaling.py --quick)."""
    pytest.importorskip("openvino")
    out = tmp_path / "scaling.json"
    proc = _quick("batch_scaling.py", out)
    doc = json.loads(out.read_text())
    assert set(doc["medians"]) == {"176x144 nireq=2 batch=1", "176x144 nireq=2 batch=2"}
    assert all(m["fps"] > 0 and m["cpu_ms"] > 0 for m in doc["medians"].values())
    assert "batch 2/1: fps" in proc.stdout


def test_serve_density_quick_runs(tmp_path: Path) -> None:
    """One camera into ``avdnn serve`` and into an ``avdnn`` process (benchmarks/serve_density.py --quick)."""
    for name in ("fastapi", "uvicorn", "prometheus_client", "httpx", "openvino"):
        pytest.importorskip(name)
    out = tmp_path / "density.json"
    proc = _quick("serve_density.py", out)
    doc = json.loads(out.read_text())
    rows = {r["variant"]: r for r in doc["rows"]}
    assert set(rows) == {"service", "processes"} and all(r["sources"] == 1 for r in rows.values())
    assert rows["service"]["balanced"] and sum(rows["service"]["batch_sizes"]) > 0
    assert all(r["read_fps"] > 0 and "cam1" in r["per_source"] for r in rows.values())
    assert "sources held" in proc.stdout
    limit = doc["limit"]
    assert limit["decode_ms"] > 0 and limit["model_ms"] > 0 and limit["cameras"] > 0
    assert "physical limit:" in proc.stdout


def test_serve_cluster_quick_runs(tmp_path: Path) -> None:
    """The control plane on a two-node loopback Ray cluster against one process, a node removed
    (benchmarks/serve_cluster.py --quick)."""
    for name in ("fastapi", "uvicorn", "prometheus_client", "httpx"):
        pytest.importorskip(name)
    need_installed("ray", "the cluster benchmark needs Ray: pip install 'avdnn[ray]'", kind="ray")
    need_tool(shutil.which("curl"), "the cluster benchmark reads the events with curl: apt-get install curl")
    out = tmp_path / "cluster.json"
    proc = _quick("serve_cluster.py", out, timeout=300)
    doc = json.loads(out.read_text())
    assert doc["process"]["sources"] == doc["cluster"]["sources"] == 4
    assert all(doc[v]["status_all"]["p50_ms"] > 0 and doc[v]["metrics"]["p95_ms"] > 0 for v in ("process", "cluster"))
    (moved,) = doc["cluster"]["failover"]
    assert moved["sources_moved"] > 0 and moved["running_s"] >= moved["placed_s"]
    assert doc["paper"]["nodes"] == 100 and doc["paper"]["head_cpu_ms_per_s"] > 0
    assert "paper" in proc.stdout


def test_serve_soak_quick_runs_and_accounts_for_every_frame(tmp_path: Path) -> None:
    """Two cameras into one shared instance, sampled, then deleted and checked (benchmarks/serve_soak.py --quick)."""
    for name in ("fastapi", "uvicorn", "prometheus_client", "httpx", "openvino"):
        pytest.importorskip(name)
    out = tmp_path / "soak.json"
    proc = _quick("serve_soak.py", out)
    doc = json.loads(out.read_text())
    assert doc["problems"] == [] and len(doc["samples"]) >= 3
    assert {s["id"] for s in doc["final"]["sources"]} == {"cam1", "cam2"}
    assert all(s["frames"]["read"] > 0 for s in doc["final"]["sources"])
    assert "every frame accounted, counters equal" in proc.stdout


def test_heads_benchmark_quick_runs(tmp_path: Path) -> None:
    """Each head's decoding against its model (benchmarks/heads.py --quick); no timing asserted."""
    out = tmp_path / "heads.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "heads.py"), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    heads = {r["head"] for r in rows}
    assert {"yolov8_pose", "yolov8_seg", "yolov8_obb", "yolo26", "semantic"} <= heads
    assert all(r["decode_ms"] > 0 for r in rows)
    assert "| head | model |" in proc.stdout


@pytest.mark.slow
def test_ssd_precision_quick_runs(tmp_path: Path) -> None:
    """The zoo SSD, whole graph and cut, CPU and agreement (benchmarks/ssd_precision.py --quick)."""
    need_installed("openvino", "pip install 'avdnn[openvino]'")
    out = tmp_path / "precision.json"
    proc = _quick("ssd_precision.py", out, timeout=600)
    rows = {r["config"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"whole_f32", "cut_f32"} and all(r["cpu_ms"] > 0 for r in rows.values())
    assert rows["whole_f32"]["recall"] == 1.0
    assert "| cut_f32 | f32 |" in proc.stdout


@pytest.mark.slow
def test_startup_quick_runs(tmp_path: Path) -> None:
    """A cold and a warm 2-frame run of the zoo SSD (benchmarks/startup.py --quick)."""
    need_installed("openvino", "pip install 'avdnn[openvino]'")
    out = tmp_path / "startup.json"
    proc = _quick("startup.py", out, timeout=600)
    medians = json.loads(out.read_text())["medians"]
    assert {"src|zoo default|cold|wall", "src|zoo default|warm|wall"} <= set(medians)
    assert "| src | zoo default |" in proc.stdout


def test_overhead_against_ffmpeg_quick_runs(tmp_path: Path) -> None:
    """avdnn's and FFmpeg's per-frame CPU on a 720p identity (benchmarks/overhead_ffmpeg.py --quick)."""
    out = tmp_path / "overhead.json"
    proc = _quick("overhead_ffmpeg.py", out, "--only", "avdnn onnx,ffmpeg 9")
    medians = json.loads(out.read_text())["medians"]
    assert "avdnn onnx" in medians and all(v == v for v in medians.values())
    assert "| avdnn onnx |" in proc.stdout
