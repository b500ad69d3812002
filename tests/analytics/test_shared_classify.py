"""dnn_classify on a shared model_instance: tasks of several inferences (one per box) from two
streams on two threads batch together and come back to their own stream, box by box."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from analytics_models import make_filter, mean_classifier, run_filter
from test_filters_classify import boxed_frame

from avdnn.dnn.shared import InstanceScope

BOXES = [(4, 4, 16, 16), (30, 8, 20, 20), (60, 30, 24, 24)]


def frames(base: int, count: int = 9) -> list[Any]:
    """Frames whose boxes are painted base + 3*frame + box: every crop has its own mean."""
    return [
        boxed_frame(BOXES[: 1 + i % 3], ["obj"] * (1 + i % 3), [base + 3 * i + k for k in range(1 + i % 3)], pts=i)
        for i in range(count)
    ]


def classes(out: list[Any]) -> list[list[int]]:
    """The top-1 class of every box (the crop's mean), frame after frame."""
    return [[int(b.classify[0][0]) for b in f.detections] for f in out]


def test_two_streams_classify_through_one_instance(tmp_path: Path) -> None:
    model = mean_classifier(tmp_path)
    inputs = [frames(10), frames(150)]
    solo = [
        classes(run_filter(make_filter("dnn_classify", model=model, confidence=0, batch_size=4), f)) for f in inputs
    ]
    assert solo[0][:3] == [[10], [13, 14], [16, 17, 18]] and solo[1][0] == [150]
    got: list[Any] = [None, None]
    with InstanceScope() as scope:
        opts = {"model": model, "confidence": 0, "batch_size": 4, "model_instance": "cls", "batch_timeout": "1"}
        filters = [make_filter("dnn_classify", f"dnn_classify@{k}", **opts) for k in range(2)]

        lockstep = threading.Barrier(2, timeout=30)  # each frame pushed once both pushed the last: batches mix

        def stepped(frames: list[Any]) -> Iterator[Any]:
            for frame in frames:
                lockstep.wait()
                yield frame

        def work(k: int) -> None:
            got[k] = classes(run_filter(filters[k], stepped(inputs[k])))

        threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
            assert not t.is_alive()
    assert got == solo
    (report,) = scope.reports()
    boxes = sum(len(f.detections) for f in inputs[0]) * 2
    assert report.inferences == boxes and report.batches < boxes
    assert np.isclose(report.mean_batch, boxes / report.batches)
    assert report.mixed_batches > 0, report
