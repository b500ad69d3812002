"""drawbox/drawtext do per-frame work once: one libavfilter graph per parameter set; text blends only labels."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from analytics_models import lavfi_frames, make_filter, run_filter

from avdnn.filters import overlay_bboxes
from avdnn.filters.overlay_bboxes import run_lavfi
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame

# the old whole-frame blend, the reference; loaded by path so benchmarks/ never shadows a module
_spec = importlib.util.spec_from_file_location(
    "avdnn_bench_overlay_reuse", Path(__file__).resolve().parents[2] / "benchmarks" / "overlay_reuse.py"
)
assert _spec is not None and _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)
whole_frame_blend = _bench.whole_frame_blend

BOXES = [
    [[16, 16, 48, 48]],
    [[2, 3, 30, 40], [40, 10, 60, 60], [0, 0, 5, 5]],
    [[10, 10, 20, 20], [30, 30, 50, 40]],
    [[1, 1, 63, 63], [5, 5, 9, 9], [20, 20, 40, 44]],
    [[33, 7, 50, 20]],
]


def boxed(fmt: str) -> list[Frame]:
    frames = lavfi_frames(fmt, 64, 64, count=len(BOXES))
    for f, boxes in zip(frames, BOXES, strict=True):
        f.side_data.detections = Detections(
            xyxy=boxes, confidence=[0.9] * len(boxes), class_id=[0] * len(boxes), frame_size=(64, 64)
        )
    return frames


@pytest.mark.parametrize("fmt", ["yuv420p", "rgb24"])
def test_drawbox_builds_one_graph_and_draws_ffmpegs_pixels(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = overlay_bboxes._NodeGraph.__init__

    def counting(self: Any, *args: Any) -> None:
        built.append(args[-1])
        original(self, *args)

    monkeypatch.setattr(overlay_bboxes._NodeGraph, "__init__", counting)
    inputs = boxed(fmt)
    outs = run_filter(make_filter("drawbox", box_source="side_data_detection_bboxes", color="red@0.7", t=2), inputs)
    assert built == [1, 3]  # grown once to the most boxes seen, then reused for every frame
    for out, ref in zip(outs, boxed(fmt), strict=True):
        want = run_lavfi(
            ref,
            [
                ("drawbox", {"x": str(b.x), "y": str(b.y), "w": str(b.w), "h": str(b.h), "color": "red@0.7", "t": "2"})
                for b in ref.detections
            ],
        )
        for a, b in zip(out.planes, want.planes, strict=True):
            np.testing.assert_array_equal(a, b)
    for given, fresh in zip(inputs, boxed(fmt), strict=True):  # drawn on a copy: the input frames are intact
        for a, b in zip(given.planes, fresh.planes, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fmt", ["yuv420p", "nv12", "rgb24", "yuv444p"])
def test_text_blends_only_the_labels_with_the_whole_frame_result(fmt: str) -> None:
    pytest.importorskip("PIL")
    from avdnn.filters._textdraw import TextRenderer

    renderer = TextRenderer(
        {"fontcolor": "yellow@0.8", "boxcolor": "blue@0.5", "box": True, "boxborderw": "3"}, 14, label="drawtext"
    )
    frame = lavfi_frames(fmt, 97, 65)[0]  # odd sizes: chroma blocks at the right and bottom edges
    texts = [("face, happy", 3, -4), ("#12 cat", 20, 6), ("dog", 80, 55), ("edge", -10, 30)]  # overlaps, edges
    out = renderer.draw(frame, texts)
    rects = renderer.rects(97, 65, (2, 2), texts)
    assert sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in rects) < 97 * 65 * 0.75
    for a, b in zip(out.planes, whole_frame_blend(renderer, frame, texts).planes, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(out.planes[0], frame.planes[0])


def test_no_import_circle_between_the_overlay_modules() -> None:
    import ast
    import inspect

    from avdnn.filters import _textdraw

    tree = ast.parse(inspect.getsource(_textdraw))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.endswith("overlay_bboxes") for m in imported)
