"""Start-up of the zoo SSD: a 2-frame ``avdnn`` run, cold (an empty model cache) and warm (after one).

Each round gives every (source tree, chain) a fresh ``AVDNN_CACHE``, runs the command once (cold:
it converts and compiles) and then again (warm: it reads the cache); wall seconds and the child's
CPU seconds (``resource.getrusage``) of the whole process, interpreter start included. Medians.

    PYTHONPATH=src python benchmarks/startup.py --rounds 3
    git archive <rev> src | tar -x -C /tmp/before
    python benchmarks/startup.py --rounds 3 --src before=/tmp/before/src --src after=src
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHAINS = {
    "zoo default": "dnn_detect=model=zoo/ssd_mobilenet_v2_coco",
    "openvino whole graph": "dnn_detect=model=zoo/ssd_mobilenet_v2_coco:dnn_backend=openvino:model_type=tf:"
    "output=num_detections&detection_scores&detection_classes&detection_boxes",
}


def clip(tree: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", "from avdnn.zoo import sample; print(sample('bikes.mp4'))"],
        env={**os.environ, "PYTHONPATH": tree},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def once(tree: str, chain: str, cache: str, source: str) -> tuple[float, float]:
    """(wall s, CPU s) of one 2-frame run."""
    cmd = [sys.executable, "-m", "avdnn", "-nostdin", "-loglevel", "error", "-i", source, "-frames:v", "2"]
    cmd += ["-vf", chain, "-f", "null", "-"]
    env = {**os.environ, "PYTHONPATH": tree, "AVDNN_CACHE": cache}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=900)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--src", action="append", default=[], help="NAME=TREE (repeatable; default: this src)")
    ap.add_argument("--chains", default=",".join(CHAINS), help="which of: " + ", ".join(CHAINS))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="smoke run: one round, the zoo default")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.chains = 1, "zoo default"
    trees = dict(s.split("=", 1) for s in args.src) if args.src else {"src": str(HERE.parent / "src")}
    chains = {k: CHAINS[k] for k in args.chains.split(",")}
    source = clip(next(iter(trees.values())))
    keys = [(t, c) for t in trees for c in chains]
    runs: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for tree, chain in keys[r % len(keys) :] + keys[: r % len(keys)]:
            cache = tempfile.mkdtemp(prefix="avdnn-startup-")
            try:
                for phase in ("cold", "warm"):
                    wall, cpu = once(trees[tree], chains[chain], cache, source)
                    runs.setdefault(f"{tree}|{chain}|{phase}|wall", []).append(wall)
                    runs.setdefault(f"{tree}|{chain}|{phase}|cpu", []).append(cpu)
                    print(f"round {r + 1} {tree} {chain} {phase}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    print("\n| tree | chain | cold: wall / CPU s | warm: wall / CPU s |")
    print("|---|---|---|---|")
    for tree, chain in keys:

        def cell(phase: str, tree: str = tree, chain: str = chain) -> str:
            return f"{medians[f'{tree}|{chain}|{phase}|wall']:.2f} / {medians[f'{tree}|{chain}|{phase}|cpu']:.2f}"

        print(f"| {tree} | {chain} | {cell('cold')} | {cell('warm')} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs, "medians": medians}, indent=1))


if __name__ == "__main__":
    main()
