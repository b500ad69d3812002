"""Several live streams through one shared detector, against separate processes and instances.

    .venv/bin/python benchmarks/multistream.py                      # 4 streams, 3 rounds
    .venv/bin/python benchmarks/multistream.py --streams 4 --loops 2 --reps 3 --json out.json
    .venv/bin/python benchmarks/multistream.py --quick              # smoke: 2 streams, 1 round
    .venv/bin/python benchmarks/multistream.py --batch 4,1          # the shared variant at batch 4 and at 1
    .venv/bin/python benchmarks/multistream.py --variants shared --sleep 0,25 --src before=/tmp/b/src,after=src

Every stream is a copy of carphone (176x144, 29.97 fps, 4 s; ``--loops`` more passes) read at
its native rate (``-re``: a live input, so when the detector falls behind, the default drop
policy drops the oldest queued frame and counts it). The detector is SSD-MobileNet-v2 COCO from
the zoo on OpenVINO. The variants run in turn, interleaved round by round:

* ``shared``: one process, one output per stream, every ``dnn_detect`` naming
  ``model_instance=det`` with ``batch_size`` = streams: one model, batches across the streams;
* ``instances``: one process, one output per stream, each ``dnn_detect`` its own model;
* ``processes``: one process per stream (what running ``avdnn`` per camera gives).

Figures per variant (medians over the rounds): total fps (frames written per second, summed over
the streams, in the window where every stream was running: steady state, without model loading
or the staggered starts of separate processes), overall fps (all frames written over the
stream time), frames dropped by the
live queue, p50/p95 latency from a frame leaving the decoder to its write (the streams' worst),
peak RSS (summed over the processes), and wall time including model loading. The ratio that
matters is shared / processes total fps (goal on 2 cores: at least 1.3).

``CPU ms/f`` is the CPU time of the variant's processes per frame written in the steady window:
the work, which the other helpers' load on this shared VM moves far less than the wall fps (the
load average is printed per round). ``--sleep FIXED,PER_ITEM`` swaps the model for a backend that
only waits ``FIXED + n * PER_ITEM`` ms per batch of n (benchmarks/sleepy.py): no CPU, so the
shared engine's batching alone is measured, undisturbed; ``--src`` runs the shared variants once
per tree of avdnn (a change side by side, interleaved).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DETECT = "dnn_detect=model=zoo:ssd_mobilenet_v2_coco:dnn_backend={backend}"
VARIANTS = ("shared", "instances", "processes")
#: more options of the shared instance (AVDNN_BENCH_SHARED, e.g. ":nireq=1"), to try its settings
EXTRA = os.environ.get("AVDNN_BENCH_SHARED", "")
CLIP_SECONDS = 120 / (30000 / 1001)  # carphone: 120 frames at 29.97 fps


def clip() -> str:
    from avdnn.zoo import sample

    return sample("carphone_pristine.mp4")


def worker(streams: int, loops: int, shared: bool, backend: str, batch: int) -> dict[str, Any]:
    """Run ``streams`` live copies of the clip in this process; the accounting and each output's
    write times (CLOCK_MONOTONIC: one clock for every process of the machine) as JSON."""
    import avdnn

    detect = DETECT.format(backend=backend)
    if os.environ.get("AVDNN_SLEEP"):  # --sleep: a backend that only waits (benchmarks/sleepy.py)
        import sleepy

        sleepy.register()
        detect = f"dnn_detect=dnn_backend={sleepy.NAME}:model=sleep"
    chain = f"{detect}:model_instance=det:batch_size={batch or streams}{EXTRA}" if shared else detect
    path = clip()
    times: list[list[float]] = [[] for _ in range(streams)]
    cpu: list[tuple[float, float]] = []  # (monotonic, this process's CPU seconds) at every write

    def stamp(k: int) -> Any:
        def tick(stats: Any, frame: Any) -> None:
            now = time.monotonic()
            times[k].append(now)
            cpu.append((now, time.process_time()))

        return tick

    jobs = [
        avdnn.Job(
            path,
            chain,
            output=os.devnull,
            format="null",
            source_options={"realtime": True, "stream_loop": loops},
            overwrite=True,
            progress=stamp(k),
        )
        for k in range(streams)
    ]
    report = avdnn.run_many(jobs)
    outs = []
    for o in report.outputs:
        st = o.stats
        assert st is not None
        outs.append(
            {
                "read": st.frames_read,
                "written": st.frames_written,
                "dropped": sum(st.frames_dropped.values()),
                "latency": st.latency.as_dict(),
                "times": times[len(outs)],
            }
        )
    sizes = [list(r.batch_sizes) for r in report.instances]
    return {"outputs": outs, "instances": list(report.instance_lines), "batch_sizes": sizes, "cpu": cpu}


def _spawn(
    streams: int, loops: int, shared: bool, backend: str, batch: int = 0, src: str | None = None
) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(Path(__file__)), "--worker", str(streams), "--loops", str(loops), "--backend", backend]
    argv += ["--batch", str(batch)]
    if shared:
        argv.append("--shared")
    env = dict(os.environ, PYTHONPATH=src) if src else None  # another tree's avdnn (--src)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


def _collect(proc: subprocess.Popen[bytes]) -> tuple[dict[str, Any], int]:
    """The worker's JSON and its peak RSS in KiB (from wait4, so it is the child's own)."""
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"worker failed with exit {proc.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1]), usage.ru_maxrss


def steady_window(times: list[list[float]]) -> tuple[float, float] | None:
    """While every stream was running: from the latest first write to the earliest last one
    (model loading and the streams' staggered starts and ends left out)."""
    if not times or any(len(t) < 2 for t in times):
        return None
    start, end = max(t[0] for t in times), min(t[-1] for t in times)
    if end - start < 1.0:
        return None  # the streams hardly overlapped: no steady state to measure
    return start, end


def steady_fps(times: list[list[float]]) -> float | None:
    """Frames written per second, summed over the streams, in the steady window."""
    window = steady_window(times)
    if window is None:
        return None
    start, end = window
    return sum(sum(1 for x in t if start <= x <= end) for t in times) / (end - start)


def steady_cpu_ms(times: list[list[float]], cpus: list[list[list[float]]]) -> float | None:
    """CPU milliseconds per frame written in the steady window, every process of the variant
    summed (what another process's load moves least: the work, not the wall time)."""
    window = steady_window(times)
    if window is None:
        return None
    start, end = window
    spent = 0.0
    for samples in cpus:
        inside = [c for t, c in samples if start <= t <= end]
        if len(inside) >= 2:
            spent += inside[-1] - inside[0]
    frames = sum(sum(1 for x in t if start <= x <= end) for t in times)
    return 1000 * spent / frames if frames else None


def measure(
    variant: str, streams: int, loops: int, backend: str, batch: int = 0, src: str | None = None
) -> dict[str, Any]:
    """One run of a variant: every stream's counts, the worst latency, summed peak RSS, wall."""
    start = time.perf_counter()
    if variant == "processes":
        procs = [_spawn(1, loops, shared=False, backend=backend, src=src) for _ in range(streams)]
    else:
        shared = variant.startswith("shared")
        procs = [_spawn(streams, loops, shared=shared, backend=backend, batch=batch, src=src)]
    results = [_collect(p) for p in procs]
    wall = time.perf_counter() - start
    outs = [o for data, _ in results for o in data["outputs"]]
    stream_time = CLIP_SECONDS * (loops + 1)
    p50 = [o["latency"]["p50"] for o in outs if o["latency"]["p50"] is not None]
    p95 = [o["latency"]["p95"] for o in outs if o["latency"]["p95"] is not None]
    times = [o["times"] for o in outs]
    return {
        "total_fps": steady_fps(times),
        "cpu_ms": steady_cpu_ms(times, [data["cpu"] for data, _ in results]),
        "overall_fps": sum(o["written"] for o in outs) / stream_time,
        "written": sum(o["written"] for o in outs),
        "read": sum(o["read"] for o in outs),
        "dropped": sum(o["dropped"] for o in outs),
        "p50_ms": 1000 * max(p50) if p50 else None,
        "p95_ms": 1000 * max(p95) if p95 else None,
        "peak_rss_mb": sum(rss for _, rss in results) / 1024,
        "wall_s": wall,
        "instances": [line for data, _ in results for line in data["instances"]],
        #: per shared instance, its batches by size (element n - 1: batches of n)
        "batch_sizes": [sizes for data, _ in results for sizes in data["batch_sizes"]],
    }


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--loops", type=int, default=2, help="extra passes of the 4 s clip per stream")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2 streams, no loop, 1 round")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--backend", default="openvino", help="tensorflow or openvino (the zoo model's two)")
    ap.add_argument(
        "--batch",
        default="0",
        help="the shared instance's batch_size (0: --streams); several (4,1): one shared variant each, shared_b4...",
    )
    ap.add_argument("--variants", default=",".join(VARIANTS), help="which to run (comma-separated)")
    ap.add_argument(
        "--sleep",
        default="",
        help="FIXED_MS,PER_ITEM_MS: a backend that only waits that long per batch (the engine's scheduling alone)",
    )
    ap.add_argument(
        "--src",
        default="",
        help="LABEL=PATH,...: the shared variants once per tree of avdnn's src (a change side by side, "
        "e.g. before=/tmp/before/src,after=src); the others run the last",
    )
    ap.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--shared", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.loops, args.shared, args.backend, int(args.batch))))
        return 0
    if args.quick:
        args.streams, args.loops, args.reps = 2, 0, 1
    if args.sleep:
        os.environ["AVDNN_SLEEP"] = args.sleep  # the workers inherit it
    batches = [int(b) or args.streams for b in args.batch.split(",")]
    wanted = args.variants.split(",")
    trees = [t.partition("=")[::2] for t in args.src.split(",")] if args.src else [("", "")]
    chosen: list[tuple[str, int, str | None]] = []  # (variant, the shared instance's batch_size, tree)
    for v in VARIANTS:
        if v not in wanted:
            continue
        if v == "shared":
            for label, tree in trees:
                name = "shared" if len(batches) == 1 else "shared_b{}"
                name += f"@{label}" if len(trees) > 1 else ""
                chosen += [(name.format(b), b, os.path.abspath(tree) if tree else None) for b in batches]
        else:
            chosen.append((v, 0, os.path.abspath(trees[-1][1]) if trees[-1][1] else None))
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v, _, _ in chosen}
    load = [os.getloadavg()[0]]
    for rep in range(args.reps):
        k = rep % len(chosen)
        for variant, batch, tree in chosen[k:] + chosen[:k]:  # interleaved: each variant leads once
            rows[variant].append(measure(variant, args.streams, args.loops, args.backend, batch, tree))
            print(f"round {rep + 1} {variant}: {json.dumps(_brief(rows[variant][-1]))}", file=sys.stderr)
        load.append(os.getloadavg()[0])
    keys = ("total_fps", "cpu_ms", "overall_fps", "dropped", "p50_ms", "p95_ms", "peak_rss_mb", "wall_s")
    table = {v: {k: _median(rows[v], k) for k in keys} for v in rows}
    detect = DETECT.format(backend=args.backend) if not args.sleep else f"a backend sleeping {args.sleep} ms"
    print(f"{args.streams} live streams of carphone (x{args.loops + 1}), {detect}, {os.cpu_count()} CPUs")
    print("load average (1 min) before and after each round: " + ", ".join(f"{x:.2f}" for x in load))
    heads = ("total fps", "CPU ms/f", "overall", "dropped", "p50 ms", "p95 ms", "RSS MB", "wall s")
    print(f"{'variant':<16} " + " ".join(f"{h:>9}" for h in heads))
    for v in rows:
        t = table[v]
        print(f"{v:<16} " + " ".join(f"{t[k]:9.1f}" if t[k] is not None else f"{'-':>9}" for k in keys))
    ratios: dict[str, float] = {}
    for v in rows:
        if not v.startswith("shared"):
            continue
        for other in ("processes", "instances"):
            mine, theirs = table[v]["total_fps"], table.get(other, {}).get("total_fps")
            if mine and theirs:
                ratios[f"{v}_vs_{other}"] = mine / theirs
                print(f"{v} / {other} total fps: {mine / theirs:.2f}")
        for line, sizes in zip(rows[v][-1]["instances"], rows[v][-1]["batch_sizes"], strict=False):
            print(f"{v}: {line}; batches of 1, 2...: {sizes}")
    if args.json is not None:
        doc = {"rounds": rows, "medians": table, "ratios": ratios, "load": load}
        args.json.write_text(json.dumps(doc, indent=2))
    return 0


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items() if k != "instances"}


if __name__ == "__main__":
    raise SystemExit(main())
