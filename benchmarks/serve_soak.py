"""Soak of ``avdnn serve``: live sources into one shared SSD instance for minutes, sampled, every frame accounted.

    PYTHONPATH=src .venv/bin/python benchmarks/serve_soak.py --json soak.json        # 8 sources, 10 minutes
    PYTHONPATH=src .venv/bin/python benchmarks/serve_soak.py --minutes 2 --sources 4
    PYTHONPATH=src .venv/bin/python benchmarks/serve_soak.py --quick                 # smoke: 2 sources, 15 s

The sources are cameras of carphone (176x144 h264, 29.97 fps, looped by a real ffmpeg at its
native rate on loopback TCP, benchmarks/servekit.py) into one template pipeline of ``avdnn
serve`` whose chain is the zoo SSD on OpenVINO with ``model_instance=ssd`` and ``batch_size``. On
2 cores eight such streams offer far more frames than the detector runs, so most are dropped by
the live queues: the point is that each drop is counted, by cause, and that memory and latency
stay flat. Every ``--every`` seconds: the service's RSS and CPU, per source its frames read /
written / failed / dropped (``GET /api/pipelines/soak``) and its p95 latency over the interval
(``/metrics``' histogram, as Prometheus' ``histogram_quantile`` reads it), the instance's batches.
At the end the pipeline is deleted and checked: per source ``read + added == written + failed +
dropped + unfinished`` (the service's ``balanced``), and every ``/metrics`` counter (frames by stage
and cause, the instance's inferences and batches) equal to that final accounting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import servekit as K
from serve_density import histogram, quantile

PID = "soak"


def sample(svc: K.Service, t0: float, before: dict[Any, float] | None) -> tuple[dict[str, Any], dict[Any, float]]:
    """One sample of the service now; ``before``: the previous scrape (for the interval's p95)."""
    status, metrics = svc.status(PID), svc.metrics()
    out: dict[str, Any] = {
        "t": round(time.monotonic() - t0, 2),
        "rss_mb": round(K.rss_mb(svc.proc.pid), 1),
        "cpu_s": round(K.cpu_seconds(svc.proc.pid), 2),
        "load": os.getloadavg()[0],
        "sources": {},
    }
    for s in status["sources"]:
        edges, now = histogram(metrics, "avdnn_latency_seconds", pipeline=PID, source=s["id"])
        old = histogram(before, "avdnn_latency_seconds", pipeline=PID, source=s["id"])[1] if before else []
        p95 = quantile(0.95, edges, old or [0.0] * len(now), now) if edges else None
        out["sources"][s["id"]] = {
            "state": s["state"],
            **{k: s["frames"][k] for k in ("read", "written", "failed", "dropped", "unfinished")},
            "p95_ms": None if p95 is None else round(1000 * p95, 1),
            "p95_run_ms": None if s["latency"]["p95"] is None else round(1000 * s["latency"]["p95"], 1),
        }
    inst = status["instances"][0] if status["instances"] else {}
    out["instance"] = {k: inst.get(k) for k in ("inferences", "batches", "mixed_batches", "batch_sizes")}
    return out, metrics


def check(final: dict[str, Any], metrics: dict[Any, float]) -> list[str]:
    """What does not add up in the final accounting, or between it and /metrics (empty: all of it)."""
    problems: list[str] = []

    def metric(name: str, **labels: str) -> float:
        return sum(
            v for (n, lbl), v in metrics.items() if n == name and all(dict(lbl).get(k) == x for k, x in labels.items())
        )

    for s in final["sources"]:
        sid, f = s["id"], s["frames"]
        if f["read"] + f["added"] != f["written"] + f["failed"] + f["dropped"] + f["unfinished"]:
            problems.append(f"{sid}: read + added != written + failed + dropped + unfinished: {f}")
        if not s["balanced"]:
            problems.append(f"{sid}: not balanced: {s['violations']}")
        if sum(s["dropped"].values()) != f["dropped"] or sum(s["failed"].values()) != f["failed"]:
            problems.append(f"{sid}: the causes do not sum to the counts")
        ids = {"pipeline": PID, "source": sid}
        for stage in ("read", "written"):
            if metric("avdnn_frames_total", stage=stage, **ids) != f[stage]:
                problems.append(
                    f"{sid}: /metrics {stage} {metric('avdnn_frames_total', stage=stage, **ids)} != {f[stage]}"
                )
        for stage in ("failed", "dropped"):
            for cause, n in s[stage].items():
                got = metric("avdnn_frames_total", stage=stage, cause=cause, **ids)
                if got != n:
                    problems.append(f"{sid}: /metrics {stage} '{cause}' {got} != {n}")
    for inst in final["instances"]:
        ids = {"pipeline": PID, "instance": inst["name"]}
        for key in ("inferences", "batches"):
            got = metric(f"avdnn_instance_{key}_total", **ids)
            if got != inst[key]:
                problems.append(f"instance {inst['name']}: /metrics {key} {got} != {inst[key]}")
    return problems


def at_minute(samples: list[dict[str, Any]], minute: float) -> dict[str, Any]:
    return min(samples, key=lambda s: abs(s["t"] - 60 * minute))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--sources", type=int, default=8)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    ap.add_argument("--batch", type=int, default=4, help="the shared instance's batch_size")
    ap.add_argument("--clip", default=None, help="the cameras' clip (default: carphone_pristine.mp4)")
    ap.add_argument("--quick", action="store_true", help="2 sources, 15 s, a sample every 5 s (a smoke run)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.minutes, args.sources, args.every = 0.25, 2, 5.0
    args.clip = args.clip or K.clip("carphone_pristine.mp4")
    chain = f"{K.DETECT}:model_instance=ssd:batch_size={args.batch}"
    load_start = os.getloadavg()
    svc = K.Service("--max-sources", str(args.sources))
    cams = [K.Camera(args.clip) for _ in range(args.sources)]
    samples: list[dict[str, Any]] = []
    try:
        sources = [{"id": f"cam{k + 1}", "url": c.url} for k, c in enumerate(cams)]
        body = {"name": PID, "chain": chain, "output": ["-f", "null", "-"], "sources": sources}
        svc.call("POST", "/api/pipelines", json=body)
        svc.wait_running(PID, [s["id"] for s in sources])
        t0 = time.monotonic()
        before: dict[Any, float] | None = None
        while True:
            row, before = sample(svc, t0, before)
            samples.append(row)
            print(json.dumps({k: row[k] for k in ("t", "rss_mb", "load")}), file=sys.stderr)
            if row["t"] >= 60 * args.minutes:
                break
            time.sleep(max(0.0, args.every - (time.monotonic() - t0 - row["t"])))
        final = svc.call("DELETE", f"/api/pipelines/{PID}")
        metrics = svc.metrics()  # an ended pipeline's counters stay in /metrics
    finally:
        for cam in cams:
            cam.stop()
        svc.close()
    problems = check(final, metrics)
    totals = {k: sum(s["frames"][k] for s in final["sources"]) for k in ("read", "written", "failed", "dropped")}
    causes: dict[str, int] = {}
    for s in final["sources"]:
        for cause, n in s["dropped"].items():
            causes[cause] = causes.get(cause, 0) + n
    first, last = at_minute(samples, 1.0), samples[-1]
    print(f"{args.sources} cameras of {os.path.basename(args.clip)}, {chain}, {os.cpu_count()} CPUs")
    print(f"load average {load_start[0]:.2f} at the start, {last['load']:.2f} at the end")
    print(f"RSS {first['rss_mb']:.0f} MB at {first['t']:.0f} s, {last['rss_mb']:.0f} MB at {last['t']:.0f} s")
    print(f"frames: {totals}; dropped by cause: {causes}")
    print(f"{'t s':>6} {'RSS MB':>7} {'written/s':>9} {'p95 ms (worst source, interval)':>32}")
    prev = None
    for s in samples:
        written = sum(v["written"] for v in s["sources"].values())
        rate = (written - prev[0]) / (s["t"] - prev[1]) if prev and s["t"] > prev[1] else 0.0
        p95s = [v["p95_ms"] for v in s["sources"].values() if v["p95_ms"] is not None]
        print(f"{s['t']:6.0f} {s['rss_mb']:7.0f} {rate:9.1f} {max(p95s) if p95s else float('nan'):32.0f}")
        prev = (written, s["t"])
    print(
        "accounting and /metrics: " + ("every frame accounted, counters equal" if not problems else "; ".join(problems))
    )
    if args.json is not None:
        doc = {"samples": samples, "final": final, "problems": problems, "chain": chain, "clip": args.clip}
        args.json.write_text(json.dumps(doc, indent=2))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
