"""Does a batch buy throughput? The zoo SSD on OpenVINO, raw (outside avdnn's engine): batch N vs N single runs.

    PYTHONPATH=src .venv/bin/python benchmarks/batch_scaling.py                 # 176x144 and 1280x720
    PYTHONPATH=src .venv/bin/python benchmarks/batch_scaling.py --sizes 176x144 --batches 1,2,4 --reps 5
    PYTHONPATH=src .venv/bin/python benchmarks/batch_scaling.py --quick         # smoke: one tiny round

The backend object is the one avdnn loads for ``dnn_detect=model=zoo:ssd_mobilenet_v2_coco:
dnn_backend=openvino`` (the same compile properties: ``nireq`` 1 is OpenVINO's latency default, one
stream over every core; ``nireq`` 2 asks for throughput with two requests: two streams of one
thread), loaded with the largest batch so that every batch size runs on the one compiled model.
For each (frame size, nireq, batch) it runs ``backend.run`` on pre-made frames from ``nireq``
threads at once, as the engine's request workers do, and reports frames per second. The
configurations are interleaved round by round (the machine is shared) and the medians kept; the
load average is recorded before and after. Frames per second that do not grow with the batch
mean a batch buys no throughput on this CPU: sharing one model then saves memory, not time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cases as C


def load(nireq: int, batch: int) -> Any:
    from avdnn.dnn.backends import backend_class
    from avdnn.dnn.interface import DNNFunctionType, ModelConfig
    from avdnn.zoo import get
    from avdnn.zoo.resolve import model_file

    spec = get("ssd_mobilenet_v2_coco")
    cls = backend_class("openvino")
    options = {o.name: o.default for o in cls.options}
    config = ModelConfig(
        path=model_file(spec, "openvino"),
        func_type=DNNFunctionType.ANALYTICS_DETECT,
        input_name="image_tensor",
        output_names=tuple(C.SSD_OUTPUTS.split("&")),
        batch_size=batch,
        options=options,
        nireq=nireq,
    )
    return cls.load(config)


def measure(backend: Any, frames: np.ndarray, batch: int, parallel: int, seconds: float) -> tuple[float, float]:
    """Frames per second of ``backend.run`` over batches of ``batch`` on ``parallel`` threads for
    about ``seconds`` (after one warm-up run per thread), and the process's CPU milliseconds per
    frame meanwhile (every thread, OpenVINO's too: what another process's load moves least)."""
    x = np.ascontiguousarray(frames[:batch])
    for _ in range(parallel):
        backend.run(x)
    done = [0] * parallel
    stop = time.perf_counter() + seconds

    def work(k: int) -> None:
        while time.perf_counter() < stop:
            backend.run(x)
            done[k] += batch

    threads = [threading.Thread(target=work, args=(k,)) for k in range(parallel)]
    t0, c0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return sum(done) / wall, 1000 * cpu / max(sum(done), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="176x144,1280x720", help="frame sizes WxH (comma-separated)")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--nireq", default="1,2", help="requests (threads) running at once; also the compile hint")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    ap.add_argument("--quick", action="store_true", help="176x144, batches 1,2, nireq 2, one short round")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.batches, args.nireq, args.reps, args.seconds = "176x144", "1,2", "2", 1, 0.5
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    nireqs = [int(n) for n in args.nireq.split(",")]
    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    backends = {n: load(n, max(batches)) for n in nireqs}
    frames = {(w, h): rng.integers(0, 256, (max(batches), h, w, 3), dtype=np.uint8) for w, h in sizes}
    configs = list(itertools.product(sizes, nireqs, batches))
    rows: dict[str, list[tuple[float, float]]] = {}
    for rep in range(args.reps):
        k = rep % len(configs)
        for (w, h), n, b in configs[k:] + configs[:k]:  # interleaved: each configuration leads once
            rows.setdefault(f"{w}x{h} nireq={n} batch={b}", []).append(
                measure(backends[n], frames[(w, h)], b, n, args.seconds)
            )
    load_after = os.getloadavg()
    print(f"SSD-MobileNet-v2 COCO, OpenVINO, {os.cpu_count()} CPUs; load {load_before[0]:.2f} -> {load_after[0]:.2f}")
    print(
        f"{'size':<10} {'nireq':>5} "
        + " ".join(f"{'batch ' + str(b):>15}" for b in batches)
        + "   (fps / CPU ms per frame)"
    )
    medians: dict[str, dict[str, float]] = {}
    for (w, h), n in itertools.product(sizes, nireqs):
        cells = []
        for b in batches:
            key = f"{w}x{h} nireq={n} batch={b}"
            got = rows[key]
            medians[key] = {"fps": statistics.median(r[0] for r in got), "cpu_ms": statistics.median(r[1] for r in got)}
            cells.append(f"{medians[key]['fps']:7.1f} / {medians[key]['cpu_ms']:5.1f}")
        one = medians[f"{w}x{h} nireq={n} batch={batches[0]}"]
        big = medians[f"{w}x{h} nireq={n} batch={batches[-1]}"]
        ratio = f"batch {batches[-1]}/{batches[0]}: fps {big['fps'] / one['fps']:.2f}"
        ratio += f", CPU {big['cpu_ms'] / one['cpu_ms']:.2f}"
        print(f"{f'{w}x{h}':<10} {n:>5} " + " ".join(cells) + f"   {ratio}")
    for backend in backends.values():
        backend.close()
    if args.json is not None:
        doc = {"rounds": rows, "medians": medians, "load": [load_before, load_after], "cpus": os.cpu_count()}
        args.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
