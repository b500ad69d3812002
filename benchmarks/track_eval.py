"""Tracking evaluation: MOT metrics of avdnn's trackers on MOTChallenge ground truth, per tracker and interval.

    .venv/bin/python benchmarks/track_eval.py                 # both sequences, every tracker, intervals 1 2 3 5
    .venv/bin/python benchmarks/track_eval.py --trackers bytetrack,sort --intervals 1,3 --json out.json
    .venv/bin/python benchmarks/track_eval.py --speed --intervals 1,3   # SSD + track on bikes.mp4 (~2 min)

The ground truth is what ``motmetrics`` ships (TUD-Campus, 71 frames; TUD-Stadtmitte, 179
frames; pedestrians, 640x480, 25 fps). It is turned into detections with a seeded generator:
each true box is missed with probability ``--miss``, its corners jittered by ``--jitter`` of its
size, its confidence drawn in 0.5..1; ``--fp`` false boxes per frame on average (confidence
0.3..0.8). The detections go through :mod:`avdnn.tracking` exactly as the ``track`` filter
drives it: ``update`` on frames the detector runs on (every ``interval``-th), ``predict`` on the
others. Boxes with a confirmed id are the hypotheses. Reported per sequence, tracker and
interval: MOTA, IDF1, ID switches (motmetrics, IoU >= 0.5), HOTA (trackers' TrackEval-checked
eval) and the tracker's time per frame.

``--speed`` instead times the real chain ``dnn_detect=model=zoo:ssd_mobilenet_v2_coco:interval=N,track``
over 100 frames of bikes.mp4 for each interval, alternating the order each round (medians, one
run; the model is loaded once per run, before the clock starts).

The adapter check: with interval 1, the same detections fed to ``trackers`` directly (its own
``update`` with the same timestamps) must give the same id for every box; the script prints
the number of boxes compared and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from avdnn.media.detections import Detections
from avdnn.tracking import KNOWN_TRACKERS, create_tracker

FPS = 25.0
SIZE = (640, 480)


def sequences() -> dict[str, np.ndarray]:
    """motmetrics' ground truth, (frame, id, x, y, w, h) rows, by sequence name."""
    import motmetrics  # type: ignore[import-untyped]

    root = Path(motmetrics.__file__).parent / "data"
    out = {}
    for name in ("TUD-Campus", "TUD-Stadtmitte"):
        gt = np.loadtxt(root / name / "gt.txt", delimiter=",")
        out[name] = gt[:, :6]
    return out


def detections(gt: np.ndarray, seed: int, miss: float, jitter: float, fp: float) -> list[Detections]:
    """One Detections per frame (1-based frames become indices 0..n-1), seeded."""
    rng = np.random.default_rng(seed)
    frames = int(gt[:, 0].max())
    out = []
    for f in range(1, frames + 1):
        rows = gt[gt[:, 0] == f]
        rows = rows[rng.random(len(rows)) >= miss]
        xywh = rows[:, 2:6].copy()
        xywh[:, :2] += rng.normal(0, jitter, (len(rows), 2)) * xywh[:, 2:]
        xywh[:, 2:] *= 1 + rng.normal(0, jitter, (len(rows), 2))
        conf = rng.uniform(0.5, 1.0, len(rows))
        n_fp = rng.poisson(fp)
        fxy = rng.uniform(0, 1, (n_fp, 2)) * np.array(SIZE)
        fwh = rng.uniform(30, 120, (n_fp, 2)) * np.array([0.5, 1.2])
        xywh = np.concatenate([xywh, np.concatenate([fxy, fwh], axis=1)])
        conf = np.concatenate([conf, rng.uniform(0.3, 0.8, n_fp)])
        xyxy = np.concatenate([xywh[:, :2], xywh[:, :2] + np.maximum(xywh[:, 2:], 1)], axis=1)
        out.append(
            Detections(
                xyxy=xyxy,
                confidence=conf,
                class_id=np.zeros(len(conf)),
                labels=("person",) * len(conf),
                frame_size=SIZE,
                pts=f - 1,
            )
        )
    return out


def track(name: str, dets: list[Detections], interval: int) -> tuple[list[Detections], float]:
    """The track filter's calls over one sequence; (records, seconds in the tracker)."""
    tracker = create_tracker(name, FPS)
    out, spent = [], 0.0
    for i, det in enumerate(dets):
        t0 = time.perf_counter()
        rec = tracker.update(det, i / FPS) if i % interval == 0 else tracker.predict(i / FPS)
        spent += time.perf_counter() - t0
        out.append(rec)
    return out, spent


def direct_ids(name: str, dets: list[Detections]) -> list[list[int]]:
    """Ids from ``trackers`` itself (no adapter), per frame in input box order."""
    import supervision as sv

    module, _, cls = KNOWN_TRACKERS[name].target.partition(":")
    tracker = getattr(importlib.import_module(module), cls)(frame_rate=FPS)
    out = []
    for i, det in enumerate(dets):
        res = tracker.update(
            sv.Detections(xyxy=det.xyxy.copy(), confidence=det.confidence.copy(), class_id=det.class_id.copy()),
            timestamp=i / FPS,
        )
        by_box = {tuple(b): int(t) for b, t in zip(res.xyxy.tolist(), res.tracker_id.tolist(), strict=True)}
        out.append([by_box.get(tuple(b), -1) for b in det.xyxy.tolist()])
    return out


def mot_lines(recs: list[Detections]) -> list[str]:
    """MOTChallenge rows (1-based frames) of the boxes with a confirmed id."""
    lines = []
    for f, rec in enumerate(recs, start=1):
        for (x0, y0, x1, y1), tid in zip(rec.xyxy.tolist(), rec.track_ids.tolist(), strict=True):
            if tid >= 0:
                lines.append(f"{f},{tid + 1},{x0:.2f},{y0:.2f},{x1 - x0:.2f},{y1 - y0:.2f},1,-1,-1,-1")
    return lines


def metrics(gt: np.ndarray, recs: list[Detections], work: Path) -> dict[str, float]:
    import motmetrics as mm
    from trackers.eval import box_iou, evaluate_mot_sequence

    acc = mm.MOTAccumulator(auto_id=True)
    for f, rec in enumerate(recs, start=1):
        rows = gt[gt[:, 0] == f]
        keep = rec.track_ids >= 0
        hyp = rec.xyxy[keep]
        hyp_xywh = np.concatenate([hyp[:, :2], hyp[:, 2:] - hyp[:, :2]], axis=1)
        # motmetrics 1.4.0's iou_matrix calls np.asfarray (gone in numpy 2): trackers' box_iou instead
        iou = (
            box_iou(rows[:, 2:6], hyp_xywh, box_format="xywh")
            if len(rows) and len(hyp)
            else np.zeros((len(rows), len(hyp)))
        )
        dist = np.where(iou >= 0.5, 1 - iou, np.nan)
        acc.update(rows[:, 1].astype(int).tolist(), rec.track_ids[keep].tolist(), dist)
    summary = mm.metrics.create().compute(acc, metrics=["mota", "idf1", "num_switches"], name="s")
    gt_file, hyp_file = work / "gt.txt", work / "hyp.txt"
    gt_file.write_text("".join(f"{int(r[0])},{int(r[1])},{r[2]},{r[3]},{r[4]},{r[5]},1,1,1\n" for r in gt))
    hyp_file.write_text("\n".join(mot_lines(recs)) + "\n")
    res = evaluate_mot_sequence(gt_file, hyp_file, metrics=["CLEAR", "HOTA", "Identity"])
    assert res.HOTA is not None and res.CLEAR is not None  # both were asked for
    return {
        "MOTA": float(summary["mota"].iloc[0]),
        "IDF1": float(summary["idf1"].iloc[0]),
        "IDSW": int(summary["num_switches"].iloc[0]),
        "HOTA": float(res.HOTA.HOTA),
        "MOTA_trackers_eval": float(res.CLEAR.MOTA),
    }


def speed(intervals: list[int], rounds: int, frames: int = 100) -> int:
    """Frames per second of the SSD + track chain per interval, side by side."""
    import statistics

    import avdnn
    from avdnn.zoo import sample

    clip = sample("bikes.mp4")
    times: dict[int, list[float]] = {n: [] for n in intervals}
    for r in range(rounds):
        for n in intervals if r % 2 == 0 else intervals[::-1]:
            stream = avdnn.run(clip, f"dnn_detect=model=zoo:ssd_mobilenet_v2_coco:interval={n},track", frames=frames)
            it = iter(stream)
            next(it)  # the first frame pays the model load
            t0 = time.perf_counter()
            count = 1 + sum(1 for _ in it)
            times[n].append(time.perf_counter() - t0)
            assert count == frames
    base = statistics.median(times[intervals[0]])
    print(f"{'interval':>8} {'s per run':>10} {'fps':>7} {'vs interval ' + str(intervals[0]):>16}")
    for n in intervals:
        med = statistics.median(times[n])
        print(f"{n:>8} {med:>10.2f} {(frames - 1) / med:>7.1f} {base / med:>15.2f}x")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trackers", default=",".join(KNOWN_TRACKERS))
    ap.add_argument("--intervals", default="1,2,3,5")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--miss", type=float, default=0.1)
    ap.add_argument("--jitter", type=float, default=0.03)
    ap.add_argument("--fp", type=float, default=0.5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--speed", action="store_true", help="time SSD + track on bikes.mp4 per interval instead")
    ap.add_argument("--rounds", type=int, default=3, help="--speed rounds")
    args = ap.parse_args(argv)
    if args.speed:
        return speed([int(v) for v in args.intervals.split(",")], args.rounds)
    names = args.trackers.split(",")
    intervals = [int(v) for v in args.intervals.split(",")]
    rows: list[dict[str, Any]] = []
    same = compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seq, gt in sequences().items():
            dets = detections(gt, args.seed, args.miss, args.jitter, args.fp)
            for name in names:
                for interval in intervals:
                    recs, spent = track(name, dets, interval)
                    row = {
                        "sequence": seq,
                        "tracker": name,
                        "interval": interval,
                        **metrics(gt, recs, Path(tmp)),
                        "ms_per_frame": 1000 * spent / len(dets),
                    }
                    rows.append(row)
                    if interval == 1:
                        want = direct_ids(name, dets)
                        got = [r.track_ids.tolist() for r in recs]
                        compared += sum(len(w) for w in want)
                        same += sum(a == b for w, g in zip(want, got, strict=True) for a, b in zip(w, g, strict=True))
    print(
        f"{'sequence':<15} {'tracker':<10} {'interval':>8} {'MOTA':>7} {'IDF1':>7} {'HOTA':>7} {'IDSW':>5} "
        f"{'ms/frame':>9}"
    )
    for r in rows:
        print(
            f"{r['sequence']:<15} {r['tracker']:<10} {r['interval']:>8} {r['MOTA']:>7.3f} {r['IDF1']:>7.3f} "
            f"{r['HOTA']:>7.3f} {r['IDSW']:>5} {r['ms_per_frame']:>9.2f}"
        )
    print(f"adapter vs trackers directly (interval 1): {same}/{compared} boxes with the same id")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "same_ids": same, "compared": compared}, indent=1))
    return 0 if same == compared else 1


if __name__ == "__main__":
    sys.exit(main())
