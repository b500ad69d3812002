"""drawbox/drawtext per-frame cost, side by side: the old way against the reused way, one run, interleaved.

    .venv/bin/python benchmarks/overlay_reuse.py            # 1280x720 yuv420p, 5 boxes a frame, 7 rounds
    .venv/bin/python benchmarks/overlay_reuse.py --size 640x360 --boxes 3 --rounds 5

drawbox: a throwaway libavfilter graph per frame (``run_lavfi``, what drawbox did before) against
the filter's graph reused per parameter set. drawtext with Pillow: every label into whole-frame
masks blended over whole planes (what it did before) against only the label rectangles. Both
pairs give the same pixels (tests/analytics/test_overlay_reuse.py); this prints ms per frame
(medians over rounds, the order of the two alternated each round) and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from avdnn.filters._textdraw import TextRenderer, _subsample
from avdnn.filters.options import bind_options
from avdnn.filters.overlay_bboxes import DrawBoxFilter, box_text, run_lavfi
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import lookup


def whole_frame_blend(renderer: TextRenderer, frame: Frame, texts: list[tuple[str, int, int]]) -> Frame:
    """The old Pillow path: every label into whole-frame masks, blended over whole planes."""
    box, ink = renderer._masks((frame.width, frame.height), (0, 0), texts)
    planes = [np.array(p, copy=True) for p in frame.planes]
    spec = lookup(frame.format)
    for mask, rgba in ([(box, renderer.boxcolor)] if renderer.box else []) + [(ink, renderer.fg)]:
        coverage = mask * (rgba[3] / 255.0) * renderer.alpha
        for plane, pspec, value in zip(planes, spec.planes, renderer._color(rgba, frame.format), strict=True):
            a = _subsample(coverage, pspec.log2_w, pspec.log2_h, plane.shape[:2])
            if plane.ndim == 3:
                a = a[..., None]
            mixed = plane.astype(np.float32) * (1 - a) + np.asarray(value, dtype=np.float32) * a
            plane[...] = np.clip(np.rint(mixed), 0, np.iinfo(plane.dtype).max).astype(plane.dtype)
    return frame.with_planes(planes)


def frames(width: int, height: int, count: int, boxes: int, seed: int = 0) -> list[Frame]:
    import av

    rng = np.random.default_rng(seed)
    out = []
    with av.open(f"testsrc2=s={width}x{height}:r=25:d={count / 25}", format="lavfi") as c:
        for f in c.decode(video=0):
            frame = Frame.from_av(f.reformat(format="yuv420p"))
            xy = rng.uniform(0, [width * 0.8, height * 0.8], (boxes, 2))
            wh = rng.uniform(40, 200, (boxes, 2))
            frame.side_data.detections = Detections(
                xyxy=np.concatenate([xy, np.minimum(xy + wh, [width, height])], axis=1),
                confidence=np.full(boxes, 0.9),
                class_id=np.zeros(boxes),
                labels=("person",) * boxes,
                track_id=np.arange(boxes),
                frame_size=(width, height),
            )
            out.append(frame)
    return out


def timed(fn: Callable[[Frame], Any], items: list[Frame]) -> float:
    t0 = time.perf_counter()
    for frame in items:
        fn(frame)
    return 1000 * (time.perf_counter() - t0) / len(items)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--boxes", type=int, default=5)
    ap.add_argument("--frames", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    items = frames(width, height, args.frames, args.boxes)
    opts = bind_options(
        DrawBoxFilter.options,
        [("box_source", "side_data_detection_bboxes"), ("color", "red@0.5")],
        filter_name="drawbox",
    )
    drawbox = DrawBoxFilter(opts)

    def old_box(frame: Frame) -> Frame:
        return run_lavfi(
            frame,
            [
                (
                    "drawbox",
                    {
                        "x": str(b.x),
                        "y": str(b.y),
                        "w": str(b.w),
                        "h": str(b.h),
                        "color": "red@0.5",
                        "t": "3",
                        "replace": "0",
                    },
                )
                for b in frame.detections
            ],
        )

    renderer = TextRenderer({"fontcolor": "white", "box": True, "boxcolor": "black@0.6"}, 16, label="drawtext")

    def texts(frame: Frame) -> list[tuple[str, int, int]]:
        return [(box_text(b), b.x, b.y - 16) for b in frame.detections]

    pairs: dict[str, tuple[Callable[[Frame], Any], Callable[[Frame], Any]]] = {
        "drawbox (libavfilter)": (old_box, lambda f: drawbox.filter(f)),
        "drawtext (Pillow)": (lambda f: whole_frame_blend(renderer, f, texts(f)), lambda f: renderer.draw(f, texts(f))),
    }
    print(f"{args.size} yuv420p, {args.boxes} boxes a frame, {args.frames} frames x {args.rounds} rounds")
    print(f"{'':<22} {'before ms':>10} {'now ms':>8} {'speed-up':>9}")
    for name, (before, now) in pairs.items():
        b_ms: list[float] = []
        n_ms: list[float] = []
        for r in range(args.rounds):
            for which in (before, now) if r % 2 == 0 else (now, before):
                (b_ms if which is before else n_ms).append(timed(which, items))
        b, n = statistics.median(b_ms), statistics.median(n_ms)
        print(f"{name:<22} {b:>10.2f} {n:>8.2f} {b / n:>8.1f}x")
    drawbox.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
