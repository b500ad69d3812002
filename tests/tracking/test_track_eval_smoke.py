"""benchmarks/track_eval.py keeps working and its numbers stay where a working tracker puts them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spine_util import need_module

ROOT = Path(__file__).resolve().parents[2]

need_module("trackers", "pip install 'avdnn[track]'")
need_module("motmetrics", "pip install motmetrics==1.4.0")


def test_track_eval_reports_metrics_and_the_adapter_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "track_eval.py"),
            "--trackers",
            "bytetrack,sort",
            "--intervals",
            "1,3",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["compared"] > 1000 and doc["same_ids"] == doc["compared"]
    rows = {(r["sequence"], r["tracker"], r["interval"]): r for r in doc["rows"]}
    assert len(rows) == 8
    for (_, _, interval), r in rows.items():
        # 10% misses, 3% jitter, 0.5 false boxes a frame: a working tracker keeps most of the truth
        assert r["MOTA"] > (0.75 if interval == 1 else 0.6) and r["IDF1"] > 0.6 and 0.3 < r["HOTA"] <= 1
        assert abs(r["MOTA"] - r["MOTA_trackers_eval"]) < 0.02  # motmetrics and trackers' eval agree
    assert "boxes with the same id" in proc.stdout
