"""Per-object tables on a 24/7 input: bounded by recency, and still exact in their totals.

A tracker hands out a new id for every object it ever sees. The summary (``track``'s and
``metadata_jsonl``'s) and ``dnn_classify``'s reclassify tables hold a bounded number of them: the
least recently seen close first, every closed track is still reported once, and the totals count
every track ever seen.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from analytics_models import make_filter, mean_classifier, run_filter

from avdnn.filters import dnn_classify
from avdnn.filters.metadata_jsonl import MetadataJsonlFilter
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame
from avdnn.tracking import summary as summary_module
from avdnn.tracking.summary import TrackRecord, TrackSummary


def _boxes(ids: list[int], *, predicted: list[bool] | None = None) -> Detections:
    n = len(ids)
    return Detections(
        xyxy=[[0, 0, 10, 10]] * n,
        confidence=[0.5] * n,
        class_id=[0] * n,
        labels=("car",) * n,
        frame_size=(64, 64),
        track_id=ids,
        predicted=predicted,
    )


def _stream(frames: int) -> list[list[int]]:
    """A long input: object 0 stays all along, and every frame a new object comes for 3 frames."""
    return [[0, *(t for t in range(max(1, k - 2), k + 1))] for k in range(1, frames + 1)]


def test_the_summary_is_bounded_and_its_totals_exact() -> None:
    closed: list[TrackRecord] = []
    s = TrackSummary(max_tracks=16, on_closed=closed.append)
    held_most = 0
    for k, ids in enumerate(_stream(2000)):
        s.add(_boxes(ids), pts=k, time=k / 25)
        held_most = max(held_most, len(s.records()))
    assert held_most <= 16  # 2001 tracks went by
    t = s.totals
    assert (t.tracks, len(s), t.first_id, t.last_id) == (2001, 2001, 0, 2000)
    assert t.frames == sum(len(ids) for ids in _stream(2000)) and t.detected == t.frames
    assert t.closed == len(closed) == 2001 - len(s.records())
    every = {r.track_id: r for r in [*closed, *s.records()]}
    assert sorted(every) == list(range(2001))  # each track reported exactly once
    assert every[0].frames == 2000 and every[0] in s.records()  # seen on every frame: never closed
    assert all(every[i].frames == min(3, 2001 - i) for i in range(1, 2001))
    assert every[500].first_pts == 499 and every[500].last_pts == 501


def test_the_summary_closes_tracks_idle_for_max_idle_seconds() -> None:
    closed: list[int] = []
    s = TrackSummary(max_idle=1.0, on_closed=lambda r: closed.append(r.track_id))
    s.add(_boxes([1, 2]), pts=0, time=0.0)
    s.add(_boxes([2]), pts=1, time=0.8)
    s.add(_boxes([2]), pts=2, time=1.5)  # track 1 was last seen 1.5 s ago
    assert closed == [1] and [r.track_id for r in s.records()] == [2]
    s.add(_boxes([3], predicted=[True]), pts=3, time=4.0)
    assert closed == [1, 2] and s.totals.tracks == 3 and s.totals.detected == 4 and s.totals.frames == 5
    s.close_all()
    assert closed == [1, 2, 3] and not s.records()


def test_metadata_jsonl_writes_every_track_once_past_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_module, "MAX_TRACKS", 8)
    out = tmp_path / "t.jsonl"
    f = MetadataJsonlFilter({"file": str(out)})
    assert f.summary is not None and f.summary._tracks.limit == 8
    for k, ids in enumerate(_stream(300)):
        frame = Frame.from_ndarray(np.zeros((64, 64, 3), np.uint8), "rgb24", pts=k)
        frame.side_data.detections = _boxes(ids)
        f.filter(frame)
    f.flush()
    f.close()
    tracks = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "track"]
    assert sorted(r["track_id"] for r in tracks) == list(range(301))
    assert next(r for r in tracks if r["track_id"] == 0)["frames"] == 300


def test_dnn_classify_tables_are_bounded_and_reuse_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Track 7 lives on every frame (classified once: reclassify_interval=0), a new track passes each frame."""
    monkeypatch.setattr(dnn_classify, "MAX_TRACKS", 4)
    model = mean_classifier(tmp_path)
    frames = []
    for k in range(40):
        img = np.zeros((64, 96, 3), np.uint8)
        img[8:40, 8:40] = 10 + k
        img[8:40, 50:82] = 100 + k
        f = Frame.from_ndarray(img, "rgb24", pts=k)
        f.side_data.detections = Detections(
            xyxy=[[8, 8, 40, 40], [50, 8, 82, 40]],
            confidence=[0.9, 0.9],
            class_id=[0, 0],
            frame_size=(96, 64),
            track_id=[7, 100 + k],
        )
        frames.append(f)
    filt = make_filter("dnn_classify", model=model, confidence=0, reclassify_interval=0)
    out = run_filter(filt, frames)
    assert len(filt._ages) <= 4 and len(filt._labels) <= 4 and filt._ages.evicted >= 36
    assert [o.detections[0].classify[0][0] for o in out] == ["10"] * 40  # track 7's labels, reused
    assert [o.detections[1].classify[0][0] for o in out] == [str(100 + k) for k in range(40)]
