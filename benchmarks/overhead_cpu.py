"""Process CPU per frame of the overhead case (ONNX identity, bigbuckbunny 1280x720 -> null).

Each measurement runs in a fresh interpreter: 20 frames and 130 frames, and the difference is
divided by 110 so that start-up and model load cancel out. ``--src`` names other source trees
(e.g. an export of an older commit) to measure side by side, interleaved round by round:

    PYTHONPATH=src python benchmarks/overhead_cpu.py --rounds 5 --src /tmp/before/src --src src

(``git archive <rev> src | tar -x -C /tmp/before`` makes such a tree.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import logging, os, sys, tempfile, pathlib
sys.path.insert(0, {bench!r})
import cases as C, avdnn
logging.getLogger("avdnn").setLevel(logging.ERROR)
model = C.onnx_identity(pathlib.Path(tempfile.mkdtemp()))
src = C.clip("bigbuckbunny.mp4")
def cpu(n):
    t = os.times()
    avdnn.run(src, f"format=rgb24,dnn_processing=model={{model}}", output="-", format="null", frames=n)
    return sum(os.times()[:4]) - sum(t[:4])
cpu(5)
print((cpu(130) - cpu(20)) / 110 * 1e3)
"""


def measure(src: str) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(bench=str(HERE))],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", help="a source tree to measure (repeatable; default: src)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    trees = args.src or [str(HERE.parent / "src")]
    runs: dict[str, list[float]] = {t: [] for t in trees}
    for r in range(args.rounds):
        for tree in trees[r % len(trees) :] + trees[: r % len(trees)]:
            runs[tree].append(measure(tree))
        print(
            f"round {r + 1}: " + ", ".join(f"{t} {v[-1]:.2f}" for t, v in runs.items()) + f" ms/frame; "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    for tree, values in runs.items():
        print(f"{tree}: median {statistics.median(values):.2f} ms CPU per frame")


if __name__ == "__main__":
    main()
