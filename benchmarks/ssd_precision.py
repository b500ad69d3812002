"""The zoo SSD per precision: CPU per frame and agreement with the whole graph in f32, side by side.

Configurations (all OpenVINO, one synchronous request, the same frames in the same process):

* ``whole_f32`` / ``whole_bf16``: the whole TF Object Detection graph (its resize, decode and 90
  per-class NMS loops), parsed as FFmpeg's ``tf`` form; ``whole_f32`` is the reference;
* ``cut_f32`` / ``cut_bf16`` / ``cut_int8``: the graph cut before its post-processor, decoded and
  NMS'd by avdnn (``tf_ssd``); int8 is the model ``avdnn models quantize`` made (made here on
  ``--int8-clip`` when the cache has none).

Frames are the ones dnn_detect feeds (rgb24 at the clip's size: the graph resizes them itself).
CPU is the process's CPU time (every OpenVINO thread) per frame over a pass, post-processing
included; each round runs every configuration once, in a rotated order; medians over rounds.
Agreement with ``whole_f32``: recall and precision at IoU 0.7 (same class) on high-score boxes
(>= ``--high`` on one side, found >= ``--confidence`` on the other), the corner deviation of the
matched boxes in pixels (median, p95) and the largest score difference.

``--e2e`` adds, per clip, the CPU per frame of ``avdnn.run`` end to end (decode, conversion,
model, post-processing, to the null muxer) past start-up, taken as the difference of a short and a
long run, for the zoo's default chain and the whole graph in f32 on the same path, and PyAV's
decode alone:

    PYTHONPATH=src python benchmarks/ssd_precision.py --rounds 3 --e2e --json ssd_precision.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from avdnn.dnn.backends import cache
from avdnn.dnn.backends.openvino import OpenVINOBackend
from avdnn.dnn.backends.openvino.convert import INT8_KIND, material
from avdnn.dnn.detect import DetectContext, iou_matrix, parse
from avdnn.dnn.interface import DNNFunctionType, ModelConfig
from avdnn.media.detections import Detections
from avdnn.zoo import get, sample
from avdnn.zoo.table import SSD_CUT, SSD_OUTPUTS

CONFIGS = ("whole_f32", "whole_bf16", "cut_f32", "cut_bf16", "cut_int8")


def frames(clip: str, count: int) -> list[np.ndarray]:
    from avdnn.cli.models import calibration_frames

    return calibration_frames(sample(clip), count)


def load(config: str, nireq: int = 1) -> tuple[Any, str]:
    """The SSD as ``config`` says (kind_precision), with ``nireq`` requests (1: one synchronous, latency)."""
    kind, precision = config.split("_")
    outputs = SSD_OUTPUTS if kind == "whole" else SSD_CUT
    model = OpenVINOBackend.load(
        ModelConfig(
            path=ssd_path(),
            func_type=DNNFunctionType.ANALYTICS_DETECT,
            input_name="image_tensor",
            output_names=tuple(outputs.split("&")),
            options={"precision": precision},
            nireq=nireq,
        )
    )
    return model, "tf" if kind == "whole" else "tf_ssd"


def ssd_path() -> str:
    path = get("ssd_mobilenet_v2_coco").source_file()
    if path is None:
        sys.exit(get("ssd_mobilenet_v2_coco").package.pip)
    return path


def ensure_int8(clip: str, count: int) -> None:
    cut = tuple(SSD_CUT.split("&"))
    if cache.lookup(INT8_KIND, material(ssd_path(), cut)) is None:
        from avdnn.dnn.backends.openvino.quantize import quantize

        print(f"quantizing on {count} frames of {clip} (no INT8 model in {cache.cache_dir()})", flush=True)
        quantize(ssd_path(), cut, frames(clip, count), clip=sample(clip))


def detect(model: Any, model_type: str, rgb: np.ndarray, confidence: float) -> Detections:
    ctx = DetectContext(
        frame_width=rgb.shape[1], frame_height=rgb.shape[0], confidence=confidence, iou=0.6, max_det=100
    )
    return parse(model_type, model.run(rgb[None]), ctx)


def one_pass(run: Callable[[np.ndarray], Detections], pictures: list[np.ndarray]) -> tuple[float, float, list[Any]]:
    """(CPU ms per frame, wall ms per frame, detections) over every picture once."""
    out = []
    cpu, wall = time.process_time(), time.perf_counter()
    for rgb in pictures:
        out.append(run(rgb))
    n = max(1, len(pictures))
    return (time.process_time() - cpu) * 1e3 / n, (time.perf_counter() - wall) * 1e3 / n, out


def pairs(ref: Detections, test: Detections, iou: float = 0.7) -> list[tuple[int, int]]:
    """Greedy same-class matches at IoU >= ``iou``, best overlap first."""
    if not len(ref) or not len(test):
        return []
    m = iou_matrix(ref.xyxy, test.xyxy) * (ref.class_id[:, None] == test.class_id[None, :])
    found = []
    while m.size and m.max() >= iou:
        i, j = np.unravel_index(int(m.argmax()), m.shape)
        found.append((int(i), int(j)))
        m[i, :] = m[:, j] = 0
    return found


def agreement(refs: list[Detections], tests: list[Detections], high: float) -> dict[str, Any]:
    hits = {"recall": [0, 0], "precision": [0, 0]}
    deviation: list[float] = []
    scores: list[float] = []
    for ref, test in zip(refs, tests, strict=True):
        for name, (a, b) in {"recall": (ref, test), "precision": (test, ref)}.items():
            found = {i for i, _ in pairs(a, b)}
            wanted = np.flatnonzero(a.confidence >= high)
            hits[name][0] += sum(1 for i in wanted if i in found)
            hits[name][1] += len(wanted)
        for i, j in pairs(ref, test):
            deviation.append(float(np.abs(ref.xyxy[i] - test.xyxy[j]).max()))
            scores.append(abs(float(ref.confidence[i]) - float(test.confidence[j])))
    return {
        "recall": hits["recall"][0] / max(1, hits["recall"][1]),
        "precision": hits["precision"][0] / max(1, hits["precision"][1]),
        "high_score_boxes": hits["recall"][1],
        "deviation_px_median": float(np.median(deviation)) if deviation else 0.0,
        "deviation_px_p95": float(np.percentile(deviation, 95)) if deviation else 0.0,
        "score_diff_max": max(scores, default=0.0),
    }


E2E_CHAINS = {
    "avdnn zoo default": "dnn_detect=model=zoo/ssd_mobilenet_v2_coco",
    "avdnn whole f32": "dnn_detect=model=zoo/ssd_mobilenet_v2_coco:model_type=tf:precision=f32:output=" + SSD_OUTPUTS,
}


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def e2e(clip: str, chain: str, short: int = 10) -> float:
    """CPU ms per frame of avdnn.run past start-up: (long run - short run) / frame difference."""
    import avdnn

    def run(n: int | None) -> tuple[float, int]:
        start = _cpu()
        stats = avdnn.run(sample(clip), chain, output="-", format="null", frames=n)
        return _cpu() - start, int(stats.as_dict()["frames_written"]) if n is None else n

    run(short)  # warm: the model cache and the compiled blobs
    a, na = run(short)
    b, nb = run(None)
    return (b - a) * 1e3 / max(1, nb - na)


def decode_only(clip: str) -> float:
    import av

    start, n = _cpu(), 0
    with av.open(sample(clip)) as container:
        for _ in container.decode(video=0):
            n += 1
    return (_cpu() - start) * 1e3 / max(1, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", default="bikes.mp4,bigbuckbunny.mp4")
    ap.add_argument("--frames", type=int, default=40, help="frames per clip, spread over it")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--confidence", type=float, default=0.5)
    ap.add_argument("--high", type=float, default=0.6)
    ap.add_argument("--int8-clip", default="bikes.mp4", help="calibration clip when no INT8 model is cached")
    ap.add_argument("--e2e", action="store_true", help="also avdnn.run end to end per clip")
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 frames of bikes, 1 round, f32 only")
    args = ap.parse_args()
    if args.quick:
        args.clips, args.frames, args.rounds, args.configs = "bikes.mp4", 2, 1, "whole_f32,cut_f32"
    configs = args.configs.split(",")
    if "whole_f32" not in configs:
        configs.insert(0, "whole_f32")
    if "cut_int8" in configs:
        ensure_int8(args.int8_clip, 50)
    clips = {clip: frames(clip, args.frames) for clip in args.clips.split(",")}
    pictures = [p for ps in clips.values() for p in ps]
    models = {c: load(c) for c in configs}
    for model, mt in models.values():  # warm-up: first inference, anchors per size
        for size in {p.shape for p in pictures}:
            detect(model, mt, next(p for p in pictures if p.shape == size), args.confidence)
    cpu: dict[str, list[float]] = {c: [] for c in configs}
    wall: dict[str, list[float]] = {c: [] for c in configs}
    found: dict[str, list[Detections]] = {}
    for r in range(args.rounds):
        for config in configs[r % len(configs) :] + configs[: r % len(configs)]:
            model, mt = models[config]
            c, w, dets = one_pass(lambda rgb, m=model, t=mt: detect(m, t, rgb, args.confidence), pictures)
            cpu[config].append(c)
            wall[config].append(w)
            found[config] = dets
            print(f"round {r + 1} {config:<11} {c:6.1f} ms CPU/frame  {w:6.1f} ms wall", flush=True)
    rows = []
    for config in configs:
        row = {
            "config": config,
            "compiled_as": models[config][0].precision,
            "cpu_ms": statistics.median(cpu[config]),
            "wall_ms": statistics.median(wall[config]),
            "cpu_runs": cpu[config],
            **agreement(found["whole_f32"], found[config], args.high),
        }
        row["cpu_vs_whole_f32"] = row["cpu_ms"] / statistics.median(cpu["whole_f32"])
        rows.append(row)
    per_clip = ", ".join(f"{k}: {len(v)}" for k, v in clips.items())
    print(f"\n{len(pictures)} frames ({per_clip}), {args.rounds} rounds")
    print(
        "| config | compiled as | CPU ms/frame | x whole f32 | recall | precision | dev px median, p95 | score diff |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['config']} | {r['compiled_as']} | {r['cpu_ms']:.1f} | {r['cpu_vs_whole_f32']:.2f} | "
            f"{r['recall']:.3f} | {r['precision']:.3f} | {r['deviation_px_median']:.2f} / {r['deviation_px_p95']:.2f} "
            f"| {r['score_diff_max']:.3f} |"
        )
    print(f"(high-score boxes of the reference: {rows[0]['high_score_boxes']})")
    for model, _ in models.values():
        model.close()
    ends: list[dict[str, Any]] = []
    if args.e2e:
        print("\n| clip | decode only | " + " | ".join(E2E_CHAINS) + " | default / whole f32 |")
        print("|---|---|" + "---|" * (len(E2E_CHAINS) + 1))
        for clip in args.clips.split(","):
            runs = {name: [] for name in E2E_CHAINS}
            for r in range(args.rounds):
                for name in list(E2E_CHAINS)[r % 2 :] + list(E2E_CHAINS)[: r % 2]:
                    runs[name].append(e2e(clip, E2E_CHAINS[name]))
            row = {"clip": clip, "decode_ms": decode_only(clip), **{k: statistics.median(v) for k, v in runs.items()}}
            ends.append(row)
            ratio = row["avdnn zoo default"] / row["avdnn whole f32"]
            cells = " | ".join(f"{row[k]:.1f}" for k in E2E_CHAINS)
            print(f"| {clip} | {row['decode_ms']:.1f} | {cells} | {ratio:.2f} |", flush=True)
    if args.json:
        doc = {"args": vars(args), "rows": rows, "e2e": ends}
        Path(args.json).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
