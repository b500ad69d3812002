"""The README's main job: real models on real clips, through avdnn's own command line.

``python -m avdnn.cli.demo [OUT] [--frames N]`` (scripts/demo.sh runs it) does two jobs, each
an ``avdnn`` command a user could type, and prints each one's frame accounting:

* faces: carphone_pristine.mp4 -> waifu2x 2x super-resolution -> BlazeFace face detection ->
  FER emotion of each face -> JSON Lines -> boxes and labels drawn -> ``OUT/faces.mp4`` and
  ``OUT/faces.jsonl``;
* style: bigbuckbunny.mp4 scaled to 640x360 -> multistyle26 style 19 -> ``OUT/style.mp4``.

Then it checks what it wrote (decodes the videos, parses the JSON Lines) and says where the
files are. The commands are data (:data:`JOBS`) so the test-suite runs the very same ones on a
few frames.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

FACES_CHAIN = (
    "dnn_processing=model=zoo:waifu2x_upconv7,"
    "dnn_detect=model=zoo:blazeface,"
    "dnn_classify=model=zoo:fer,"
    "metadata_jsonl=file={out}/faces.jsonl,"
    "format=yuv420p,"
    "drawbox=box_source=side_data_detection_bboxes:color=lime:thickness=3,"
    "drawtext=text_source=side_data_detection_bboxes:fontcolor=white:fontsize=16:box=1:boxcolor=black@0.6"
)
STYLE_CHAIN = "scale=640:360,dnn_processing=model=zoo:multistyle26?style=19,format=yuv420p"


@dataclass(frozen=True)
class Job:
    """One ``avdnn`` command: input sample clip, filter chain, output file (under OUT)."""

    name: str
    clip: str
    chain: str
    output: str

    def argv(self, out: str, frames: int | None = None) -> list[str]:
        from avdnn.zoo import sample

        limit = ["-frames:v", str(frames)] if frames else []
        return [
            "-hide_banner",
            "-nostats",
            "-y",
            "-i",
            sample(self.clip),
            "-vf",
            self.chain.format(out=out),
            *limit,
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            os.path.join(out, self.output),
        ]


JOBS: tuple[Job, ...] = (
    Job("faces", "carphone_pristine.mp4", FACES_CHAIN, "faces.mp4"),
    Job("style", "bigbuckbunny.mp4", STYLE_CHAIN, "style.mp4"),
)


def check(out: str) -> dict[str, int]:
    """Decode every video and parse the JSON Lines in ``out``: {file: frames or lines}."""
    import av

    counts: dict[str, int] = {}
    for job in JOBS:
        path = os.path.join(out, job.output)
        with av.open(path) as container:
            counts[job.output] = sum(1 for _ in container.decode(video=0))
    with open(os.path.join(out, "faces.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    counts["faces.jsonl"] = len(records)
    counts["faces found"] = sum(len(r["boxes"]) for r in records)
    return counts


def run(out: str, frames: int | None = None, log: Sequence[str] = ()) -> dict[str, int]:
    """Run every job (``frames`` caps each), then :func:`check`; raises on the first failure."""
    from avdnn.cli.command import main

    os.makedirs(out, exist_ok=True)
    for job in JOBS:
        argv = job.argv(out, frames)
        print(f"\n== {job.name}: avdnn {shlex.join(argv)}", flush=True)
        start = time.monotonic()
        status = main([*log, *argv])
        if status:
            raise SystemExit(f"demo job '{job.name}' failed (exit {status})")
        print(f"== {job.name}: {time.monotonic() - start:.1f} s", flush=True)
    return check(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    frames = None
    if "--frames" in args:
        i = args.index("--frames")
        frames = int(args[i + 1])
        del args[i : i + 2]
    out = args[0] if args else "out"
    counts = run(out, frames)
    print("\nwrote:")
    for name, n in counts.items():
        what = "frames decoded" if name.endswith(".mp4") else "records" if name.endswith(".jsonl") else ""
        label = os.path.join(out, name) if what else name
        print(f"  {label}: {n} {what}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
