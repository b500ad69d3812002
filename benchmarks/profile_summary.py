"""Summarise a py-spy ``--format raw`` profile: where each thread spends its samples.

    py-spy record -r 200 --threads -f raw -o prof.txt -- python -m benchmarks.run ...
    python benchmarks/profile_summary.py prof.txt [--top 12]

Prints, per thread, the share of samples whose innermost *avdnn/numpy/PyAV/runtime* frame is
each function (self time), so GIL-released native work (decode, encode, inference) shows
up under the Python call that entered it.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::(?P<line>\d+))?\)$")


def _short(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("site-packages/", "src/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{m.group('func')} ({path})"


def _is_python(frame: str) -> bool:
    m = _FRAME.match(frame.strip())
    return (bool(m) and m.group("file").endswith(".py")) or "(<frozen" in frame


def summarise(path: str, top: int = 12, python_only: bool = False) -> str:
    per_thread: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    totals: collections.Counter[str] = collections.Counter()
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            frames = stack.split(";")
            if python_only:
                frames = frames[:1] + [f for f in frames[1:] if _is_python(f)]
            thread = re.sub(r" \(0x[0-9a-f]+\)", "", frames[0]).strip().strip('"')
            leaf = _short(frames[-1]) if len(frames) > 1 else "(idle)"
            n = int(count)
            per_thread[thread][leaf] += n
            totals[thread] += n
    all_samples = sum(totals.values()) or 1
    out = []
    for thread, n in totals.most_common():
        out.append(f"{thread}: {n} samples ({100 * n / all_samples:.0f}% of all)")
        for leaf, k in per_thread[thread].most_common(top):
            out.append(f"  {100 * k / n:5.1f}%  {leaf}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--python", action="store_true", help="charge native frames (--native) to their Python caller")
    args = ap.parse_args(argv)
    print(summarise(args.profile, args.top, args.python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
