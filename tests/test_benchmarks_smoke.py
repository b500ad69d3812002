"""The benchmark keeps working: its quick mode runs a tiny case and writes JSON (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
