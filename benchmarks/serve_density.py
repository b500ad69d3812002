"""Density of ``avdnn serve``: how many live 720p sources one shared SSD instance holds, against one process per source.

    PYTHONPATH=src .venv/bin/python benchmarks/serve_density.py                    # up to 4 sources, 20 s windows
    PYTHONPATH=src .venv/bin/python benchmarks/serve_density.py --max-sources 3 --window 30 --json out.json
    PYTHONPATH=src .venv/bin/python benchmarks/serve_density.py --quick            # smoke: 1 source, short window

Each source is a camera (benchmarks/servekit.py): bigbuckbunny.mp4 (1280x720 h264, 25 fps) looped
by a real ffmpeg at its native rate on loopback TCP. Two variants, on the same cameras' streams:

* ``service``: one ``avdnn serve``; per step, a template pipeline whose chain is the zoo SSD on
  OpenVINO with ``model_instance=ssd`` (one model for every source) and ``batch_size``; created with
  one source, the others added one at a time through ``POST /api/pipelines/{id}/sources``; its
  accounting read from ``GET /api/pipelines/{id}`` and ``/metrics``; deleted after the window;
* ``processes``: one ``python -m avdnn -i tcp://... -vf dnn_detect=... -f null`` per source, read
  from its status line (``frame=`` written, ``drop=`` dropped by the live queue).

Step N runs both variants with N sources, one after the other (the order alternates per step, so
neither always runs on a warmer machine), each after ``--settle`` seconds and then until the live
queues have dropped nothing for ``QUIET`` seconds (at most ``--settle-max``): a source that joins
gets the stream its socket buffered while the model loaded, a burst the live queue drops, which
is the start, not the steady state. Then over a ``--window`` of seconds: per source, frames read
per second (written + dropped for a process), written per second, the share dropped by the live
queue. A variant holds N when every source read at least 95% of the camera's rate and dropped at
most 5% (with ``--detect-fps`` or ``--detect-step``, also wrote at least 95% of that rate); the
ramp goes on while either variant holds. A process's status line does not count the frames its
``fps`` or ``framestep`` filter drops by design, so then its read rate is the camera's (what the
camera offered over the window) and its drop share is of those frames.

Beside the ramp, the physical limit, measured in the same run before it: PyAV's decode alone of
the clip (CPU ms per frame) and the model alone as the chain runs it (the zoo SSD on OpenVINO, cut
at its post-processor, at the zoo's default precision, with its decoding and NMS: CPU ms per
detection, on frames of the clip; the cheaper of one synchronous request on every core and the
shared instance's default requests each on a stream of its own, kept busy), so that
``CPUs * 1000 / (rate * decode + detect rate * model)`` cameras is what the hardware holds with
nothing else running; the sources held are given as a share of it.

``--detect-fps 5`` is Frigate's way (``fps=5`` before the detector); ``--detect-step 5`` takes
every 5th frame (``framestep=5``). Past capacity they differ: ``fps`` fills the gaps the live
queue leaves with duplicates, so the detector's work does not fall with the frames it gets, and
a source that falls behind drops nearly everything; ``framestep`` degrades with the load. Also per
window: the CPU milliseconds per frame written (the processes' CPU summed), RSS, the load average,
and for the service the batches formed and p95 latency from its histogram over the window.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import servekit as K

VARIANTS = ("service", "processes")
HELD_DROP = 0.05  # at most this share dropped
HELD_RATE = 0.95  # at least this share of the camera's rate read
QUIET = 3.0  # seconds without a live-queue drop that end the settling


def clip_rate(path: str) -> float:
    import av

    with av.open(path) as c:
        rate = c.streams.video[0].average_rate
        return float(rate) if rate else 25.0


def quantile(q: float, edges: list[float], before: list[float], after: list[float]) -> float | None:
    """Prometheus' histogram_quantile over the samples added between two scrapes of one histogram
    (cumulative bucket counts at ``edges``, +Inf last): linear within the bucket it falls in."""
    counts = [a - b for a, b in zip(after, before, strict=True)]
    if not counts or counts[-1] <= 0:
        return None
    rank, low, seen = q * counts[-1], 0.0, 0.0
    for edge, n in zip(edges, counts, strict=True):
        if n >= rank:
            if edge == float("inf"):
                return low
            return low + (edge - low) * ((rank - seen) / (n - seen) if n > seen else 0.0)
        low, seen = edge, n
    return low


def histogram(metrics: dict[Any, float], name: str, **labels: str) -> tuple[list[float], list[float]]:
    """(edges, cumulative counts) of one histogram series in parsed /metrics."""
    rows = []
    for (metric, lbl), value in metrics.items():
        d = dict(lbl)
        if metric == f"{name}_bucket" and all(d.get(k) == v for k, v in labels.items()):
            rows.append((float(d["le"]), value))
    rows.sort()
    return [e for e, _ in rows], [v for _, v in rows]


def _sources(status: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per source: frames read and written, and dropped by its live queue (not by a filter's design:
    ``--detect-fps`` drops frames on purpose)."""
    return {
        s["id"]: {
            "read": s["frames"]["read"],
            "written": s["frames"]["written"],
            "dropped": sum(n for cause, n in s["dropped"].items() if "live queue" in cause),
        }
        for s in status["sources"]
    }


def chain(args: argparse.Namespace) -> str:
    """The chain every variant runs: the SSD, on every frame, at ``--detect-fps`` or every ``--detect-step``th frame."""
    if args.detect_step:
        return f"framestep={args.detect_step}," + K.DETECT
    return (f"fps={args.detect_fps:g}," if args.detect_fps else "") + K.DETECT


def detect_rate(args: argparse.Namespace, rate: float) -> float:
    """Frames per second the detector is meant to get from one source (0: every frame)."""
    return args.detect_fps or (rate / args.detect_step if args.detect_step else 0.0)


def model_alone(clip: str, pictures: int) -> dict[str, float]:
    """The model alone, CPU ms per detection (decoding and NMS included), the two ways OpenVINO runs it.

    ``latency``: one synchronous request using every core; ``throughput``: the requests a shared
    instance gets by default (nireq auto), each on its own stream, kept busy by as many threads (the
    way the service runs it). The best of 3 passes each.
    """
    from concurrent.futures import ThreadPoolExecutor

    import ssd_precision as P

    from avdnn.cli.models import calibration_frames
    from avdnn.dnn.tasks import auto_nireq

    rgbs = calibration_frames(clip, pictures)
    out: dict[str, float] = {}
    for way, nireq in (("latency", 1), ("throughput", auto_nireq())):
        model, kind = P.load("cut_auto", nireq=nireq)

        def detect(rgb: Any, model: Any = model, kind: str = kind) -> Any:
            return P.detect(model, kind, rgb, 0.5)

        with ThreadPoolExecutor(nireq) as pool:
            list(pool.map(detect, rgbs[: 2 * nireq]))  # warm: the compiled blob, the buffers, each request
            best = float("inf")
            for _ in range(3):
                start = P._cpu()
                list(pool.map(detect, rgbs))
                best = min(best, (P._cpu() - start) * 1e3 / len(rgbs))
        out[way] = best
    return out


def physical_limit(args: argparse.Namespace, rate: float, pictures: int = 30) -> dict[str, float]:
    """Decode alone and the model alone (the cheaper way), CPU ms per frame, and the cameras they fit."""
    import av
    import ssd_precision as P

    def decode_pass() -> float:
        start, n = P._cpu(), 0
        with av.open(args.clip) as container:
            for _ in container.decode(video=0):
                n += 1
                if n >= 10 * pictures:
                    break
        return (P._cpu() - start) * 1e3 / max(1, n)

    decode_ms = min(decode_pass() for _ in range(3))  # the best of 3 (os.times ticks at 10 ms)
    ways = model_alone(args.clip, pictures)
    model_ms = min(ways.values())
    detect = detect_rate(args, rate) or rate
    cpus = len(os.sched_getaffinity(0))
    per_camera = rate * decode_ms + detect * model_ms  # CPU ms a camera costs each second
    return {
        "decode_ms": decode_ms,
        "model_ms": model_ms,
        **{f"model_ms_{way}": ms for way, ms in ways.items()},
        "cpus": cpus,
        "cameras": cpus * 1000 / per_camera,
    }


def settle(dropped: Callable[[], int], args: argparse.Namespace) -> float:
    """Sleep ``--settle`` s, then until ``dropped()`` holds still for QUIET s (at most ``--settle-max`` s
    in all: a variant that cannot keep up drops for ever, and is measured so); the seconds taken."""
    t0 = time.monotonic()
    time.sleep(args.settle)
    last, since = dropped(), time.monotonic()
    while time.monotonic() - t0 < args.settle_max and time.monotonic() - since < QUIET:
        time.sleep(0.5)
        now = dropped()
        if now != last:
            last, since = now, time.monotonic()
    return time.monotonic() - t0


def run_service(svc: K.Service, n: int, args: argparse.Namespace, rate: float) -> dict[str, Any]:
    """N sources into one pipeline (added one at a time), measured over the window, then deleted."""
    cams = [K.Camera(args.clip) for _ in range(n)]
    batch = args.batch or n
    pid = f"density{n}"
    shared = f"{chain(args)}:model_instance=ssd:batch_size={batch}"
    body = {"name": pid, "chain": shared, "output": ["-f", "null", "-"], "sources": []}
    try:
        body["sources"] = [{"id": "cam1", "url": cams[0].url}]
        svc.call("POST", "/api/pipelines", json=body)
        svc.wait_running(pid, ["cam1"])
        for k in range(1, n):
            svc.call("POST", f"/api/pipelines/{pid}/sources", json={"id": f"cam{k + 1}", "url": cams[k].url})
            svc.wait_running(pid, [f"cam{k + 1}"])
        settled = settle(lambda: sum(s["dropped"] for s in _sources(svc.status(pid)).values()), args)
        s0, m0, c0, t0 = svc.status(pid), svc.metrics(), K.cpu_seconds(svc.proc.pid), time.monotonic()
        time.sleep(args.window)
        s1, m1, c1, t1 = svc.status(pid), svc.metrics(), K.cpu_seconds(svc.proc.pid), time.monotonic()
        rss = K.rss_mb(svc.proc.pid)
        final = svc.call("DELETE", f"/api/pipelines/{pid}")
    finally:
        for cam in cams:
            cam.stop()
    a, b = _sources(s0), _sources(s1)
    per = {
        sid: _row(b[sid]["read"] - a[sid]["read"], b[sid]["written"] - a[sid]["written"], t1 - t0)
        | {"dropped_n": b[sid]["dropped"] - a[sid]["dropped"]}
        for sid in b
    }
    for sid, row in per.items():
        row["drop_share"] = row["dropped_n"] / max(b[sid]["read"] - a[sid]["read"], 1)
        edges, before = histogram(m0, "avdnn_latency_seconds", pipeline=pid, source=sid)
        _, after = histogram(m1, "avdnn_latency_seconds", pipeline=pid, source=sid)
        row["p95_ms"] = _ms(quantile(0.95, edges, before, after)) if edges else None
    inst0, inst1 = s0["instances"][0], s1["instances"][0]
    batches = inst1["batches"] - inst0["batches"]
    out = _summary("service", n, per, rate, (c1 - c0) * 1000, rss, t1 - t0, detect_rate(args, rate))
    out["batch_size"] = batch
    out["mean_batch"] = (inst1["inferences"] - inst0["inferences"]) / batches if batches else None
    out["mixed_share"] = (inst1["mixed_batches"] - inst0["mixed_batches"]) / batches if batches else None
    out["batch_sizes"] = [y - x for x, y in zip(inst0["batch_sizes"], inst1["batch_sizes"], strict=True)]
    secs = inst1["inference_seconds"] - inst0["inference_seconds"]
    out["ms_per_batch"] = 1000 * secs / batches if batches else None
    out["balanced"] = all(s["balanced"] for s in final["sources"])
    out["settled_s"] = settled
    return out


def run_processes(n: int, args: argparse.Namespace, rate: float) -> dict[str, Any]:
    """N ``avdnn`` processes, one per source, measured over the window from their status lines."""
    cams = [K.Camera(args.clip) for _ in range(n)]
    runs: list[K.CliRun] = []
    try:
        runs = [K.CliRun(cam.url, chain(args)) for cam in cams]
        for run in runs:
            run.wait_written()
        settled = settle(lambda: sum(r.latest[2] for r in runs if r.latest is not None), args)
        a = [r.latest for r in runs]
        c0 = sum(K.cpu_seconds(r.proc.pid) for r in runs)
        time.sleep(args.window)
        b = [r.latest for r in runs]
        c1 = sum(K.cpu_seconds(r.proc.pid) for r in runs)
        rss = sum(K.rss_mb(r.proc.pid) for r in runs)
    finally:
        for run in runs:
            run.close()
        for cam in cams:
            cam.stop()
    per: dict[str, dict[str, Any]] = {}
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x is not None and y is not None
        written, dropped, span = y[1] - x[1], y[2] - x[2], y[0] - x[0]
        # a thinning filter's drops are not on the status line: the camera's offer stands for the read
        read = round(rate * span) if detect_rate(args, rate) else written + dropped
        row = _row(read, written, span)
        row.update(dropped_n=dropped, drop_share=dropped / max(read, 1), p95_ms=None)
        per[f"cam{k + 1}"] = row
    spans = [y[0] - x[0] for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    out = _summary("processes", n, per, rate, (c1 - c0) * 1000, rss, max(spans), detect_rate(args, rate))
    out["settled_s"] = settled
    return out


def _row(read: int, written: int, seconds: float) -> dict[str, Any]:
    return {"read_fps": read / seconds, "written_fps": written / seconds}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else 1000 * seconds


def _summary(
    variant: str,
    n: int,
    per: dict[str, dict[str, Any]],
    rate: float,
    cpu_ms: float,
    rss: float,
    seconds: float,
    detect: float,
) -> dict[str, Any]:
    written = sum(r["written_fps"] for r in per.values()) * seconds
    held = all(
        r["drop_share"] <= HELD_DROP and r["read_fps"] >= HELD_RATE * rate and r["written_fps"] >= HELD_RATE * detect
        for r in per.values()
    )
    return {
        "variant": variant,
        "sources": n,
        "held": held,
        "read_fps": sum(r["read_fps"] for r in per.values()),
        "written_fps": sum(r["written_fps"] for r in per.values()),
        "worst_drop_share": max(r["drop_share"] for r in per.values()),
        "worst_read_share": min(r["read_fps"] for r in per.values()) / rate,
        "cpu_ms_per_frame": cpu_ms / written if written else None,
        "rss_mb": rss,
        "load": os.getloadavg()[0],
        "per_source": per,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-sources", type=int, default=4)
    ap.add_argument("--window", type=float, default=20.0, help="seconds measured per step and variant")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds at least between the start and the window")
    ap.add_argument("--settle-max", type=float, default=40.0, help="seconds at most waiting for the drops to stop")
    ap.add_argument("--batch", type=int, default=0, help="the shared instance's batch_size (0: the step's sources)")
    ap.add_argument("--detect-fps", type=float, default=0, help="detect at this rate (an fps filter first)")
    ap.add_argument(
        "--detect-step", type=int, default=0, help="detect every Kth frame (a framestep filter first: no duplicates)"
    )
    ap.add_argument("--min-sources", type=int, default=1, help="the ramp's first step")
    ap.add_argument("--clip", default=None, help="the camera's clip (default: bigbuckbunny.mp4, 1280x720)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--quick", action="store_true", help="1 source, carphone, 3 s window (a smoke run)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.max_sources, args.window, args.settle, args.settle_max = 1, 3.0, 1.0, 5.0
        args.clip = args.clip or K.clip("carphone_pristine.mp4")
    args.clip = args.clip or K.clip("bigbuckbunny.mp4")
    rate = clip_rate(args.clip)
    variants = [v for v in VARIANTS if v in args.variants.split(",")]
    rows: list[dict[str, Any]] = []
    limit = physical_limit(args, rate)
    print(json.dumps({"limit": limit}), file=sys.stderr)
    holding = set(variants)
    svc = K.Service("--max-sources", str(max(args.max_sources, 1))) if "service" in variants else None
    try:
        for n in range(args.min_sources, args.max_sources + 1):
            order = variants if n % 2 else variants[::-1]
            for variant in order:
                if variant not in holding:
                    continue
                before = os.getloadavg()[0]
                row = run_service(svc, n, args, rate) if variant == "service" and svc else run_processes(n, args, rate)
                row["load_before"] = before
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "per_source"}), file=sys.stderr)
                if not row["held"]:
                    holding.discard(variant)
            if not holding:
                break
    finally:
        if svc is not None:
            svc.close()
    print(f"{os.path.basename(args.clip)} ({rate:g} fps) cameras, {chain(args)}, {os.cpu_count()} CPUs")
    heads = ("N", "held", "read fps", "written", "drop %", "read %", "CPU ms/f", "RSS MB", "load")
    print(f"{'variant':<10} " + " ".join(f"{h:>8}" for h in heads))
    for r in rows:
        cells = [
            str(r["sources"]),
            "yes" if r["held"] else "no",
            f"{r['read_fps']:.1f}",
            f"{r['written_fps']:.1f}",
            f"{100 * r['worst_drop_share']:.1f}",
            f"{100 * r['worst_read_share']:.0f}",
            f"{r['cpu_ms_per_frame']:.1f}" if r["cpu_ms_per_frame"] else "-",
            f"{r['rss_mb']:.0f}",
            f"{r['load_before']:.1f}-{r['load']:.1f}",
        ]
        print(f"{r['variant']:<10} " + " ".join(f"{c:>8}" for c in cells))
    held = {v: max([r["sources"] for r in rows if r["variant"] == v and r["held"]], default=0) for v in variants}
    print(
        "sources held (every one >= 95% of its rate read, and of the detect rate written, <= 5% dropped): "
        + ", ".join(f"{v} {held[v]}" for v in held)
    )
    print(
        f"physical limit: {limit['cameras']:.1f} cameras on {limit['cpus']} CPUs "
        f"(decode alone {limit['decode_ms']:.2f} ms/frame at {rate:g} fps, "
        f"the model alone {limit['model_ms']:.1f} ms/detection (latency {limit['model_ms_latency']:.1f}, "
        f"throughput {limit['model_ms_throughput']:.1f}) at "
        f"{detect_rate(args, rate) or rate:g}/s); held: "
        + ", ".join(f"{v} {100 * held[v] / limit['cameras']:.0f}%" for v in held)
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps({"rows": rows, "held": held, "limit": limit, "rate": rate, "clip": args.clip}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
