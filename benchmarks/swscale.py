"""Per-frame libswscale cost, fresh context vs kept reformatter, side by side (interleaved rounds).

The case of issue 12.5: a 640x360 yuv420p frame to a 300x300 rgb24 model input, as
io_analytics converts it (a new PyAV frame per call, so ``frame.reformat()`` builds a new
SwsContext each time; frames are new per iteration, as decoded frames are), against
:func:`avdnn.media.swscale.reformat` (one kept per parameters).

    PYTHONPATH=src python benchmarks/swscale.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time

import av
import numpy as np

from avdnn.media import swscale
from avdnn.media.frame import Frame

KW = {
    "width": 300,
    "height": 300,
    "format": "rgb24",
    "interpolation": "FAST_BILINEAR",
    "src_colorspace": "ITU601",
    "dst_colorspace": "ITU601",
}
N = 200


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rgb = np.random.default_rng(0).integers(0, 256, (360, 640, 3), dtype=np.uint8)
    frame = Frame.from_av(av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p"))
    fresh, kept = [], []
    for r in range(rounds):
        for name in ("fresh", "kept") if r % 2 == 0 else ("kept", "fresh"):
            frames = [Frame.from_planes(frame.planes, "yuv420p") for _ in range(N)]  # a new frame each, as decoded
            t = time.perf_counter()
            for each in frames:
                src = each.to_av()  # what every conversion starts from (same cost in both)
                if name == "fresh":
                    src.reformat(**KW)
                else:
                    swscale.reformat(src, **KW)
            (fresh if name == "fresh" else kept).append((time.perf_counter() - t) / N * 1e3)
    f, k = statistics.median(fresh), statistics.median(kept)
    print(f"640x360 yuv420p -> 300x300 rgb24, {rounds} rounds x {N} frames, medians (incl. to_av):")
    print(f"  fresh SwsContext per frame: {f:.3f} ms/frame")
    print(f"  kept reformatter          : {k:.3f} ms/frame  ({f / k:.2f}x)")


if __name__ == "__main__":
    main()
