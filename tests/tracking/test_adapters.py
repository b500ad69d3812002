"""The tracker seam: the table matches the installed trackers, the adapter loses nothing, predict works."""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

import numpy as np
import pytest
from spine_util import need_module

from avdnn.errors import BackendUnavailableError, InvalidArgumentError
from avdnn.media.detections import Detections
from avdnn.tracking import KNOWN_TRACKERS, Tracker, TrackSummary, create_tracker
from avdnn.tracking.base import TrackerSpec, register_tracker

trackers = need_module("trackers", "pip install 'avdnn[track]'")
sv = pytest.importorskip("supervision")

FPS = 25.0


def scene(frames: int = 40, seed: int = 0, objects: int = 4, late: int = 0) -> list[Detections]:
    """``objects`` boxes moving in straight lines with a little jitter, shuffled per frame.

    With ``late``, the last object appears only from that frame on (a newcomer among tracked ones).
    """
    rng = np.random.default_rng(seed)
    start = rng.uniform(20, 300, (objects, 2))
    speed = rng.uniform(-3, 3, (objects, 2))
    out = []
    for f in range(frames):
        xy = start + speed * f + rng.normal(0, 0.5, (objects, 2))
        xyxy = np.concatenate([xy, xy + 40], axis=1)
        order = rng.permutation(objects)
        if f < late:
            order = order[order != objects - 1]
        out.append(
            Detections(
                xyxy=xyxy[order],
                confidence=rng.uniform(0.75, 0.95, objects)[order],
                class_id=order,
                labels=tuple(f"obj{k}" for k in order),
                frame_size=(400, 400),
                pts=f,
            )
        )
    return out


@pytest.mark.parametrize("name", sorted(KNOWN_TRACKERS))
def test_table_defaults_are_the_librarys(name: str) -> None:
    spec = KNOWN_TRACKERS[name]
    module, _, cls = spec.target.partition(":")
    sig = inspect.signature(getattr(importlib.import_module(module), cls).__init__).parameters
    for ours, theirs in spec.params.items():
        assert sig[theirs].default == pytest.approx(spec.defaults[ours]), (ours, theirs)
    assert sig["frame_rate"].default == 30.0


@pytest.mark.parametrize("name", sorted(KNOWN_TRACKERS))
def test_adapter_gives_the_ids_trackers_gives(name: str) -> None:
    """The same detections fed to trackers directly and through the adapter: the same ids, box for box."""
    frames = scene()
    ours = create_tracker(name, FPS)
    assert isinstance(ours, Tracker)
    spec = KNOWN_TRACKERS[name]
    module, _, cls = spec.target.partition(":")
    direct = getattr(importlib.import_module(module), cls)(frame_rate=FPS)
    confirmed = 0
    for i, det in enumerate(frames):
        got = ours.update(det, i / FPS)
        svd = sv.Detections(xyxy=det.xyxy.copy(), confidence=det.confidence.copy(), class_id=det.class_id.copy())
        want = direct.update(svd, timestamp=i / FPS)
        # the adapter keeps the input order; trackers may reorder: match rows by box
        want_ids = {tuple(np.round(b, 3)): int(t) for b, t in zip(want.xyxy, want.tracker_id, strict=True)}
        assert got.track_ids.tolist() == [want_ids.get(tuple(np.round(b, 3)), -1) for b in det.xyxy]
        assert got.labels == det.labels and np.array_equal(got.xyxy, det.xyxy)
        assert not got.predicted_mask.any()
        confirmed += int((got.track_ids >= 0).sum())
    assert confirmed > len(frames) * 2  # the scene is trackable: most boxes got ids


def test_ids_follow_objects() -> None:
    """Each object keeps one id (its label is the truth) once confirmed."""
    t = create_tracker("bytetrack", FPS)
    seen: dict[str, set[int]] = {}
    for i, det in enumerate(scene(seed=3)):
        out = t.update(det, i / FPS)
        for label, tid in zip(out.labels, out.track_ids.tolist(), strict=True):
            if tid >= 0:
                seen.setdefault(label, set()).add(tid)
    assert len(seen) == 4 and all(len(ids) == 1 for ids in seen.values())
    assert len({next(iter(v)) for v in seen.values()}) == 4


def test_predict_fills_skipped_frames_and_keeps_tracks_alive() -> None:
    """Detections on every 3rd frame only: ids still get confirmed (also for an object arriving while others
    are tracked), skipped frames get predicted boxes."""
    frames = scene(frames=45, seed=5, late=10)
    t = create_tracker("bytetrack", FPS)
    ids_by_label: dict[str, set[int]] = {}
    predicted_frames = 0
    for i, det in enumerate(frames):
        if i % 3 == 0:
            out = t.update(det, i / FPS)
        else:
            out = t.predict(i / FPS)
            if len(out):
                predicted_frames += 1
                assert out.predicted_mask.all() and (out.track_ids >= 0).all()
                truth = {lb: det.xyxy[j] for j, lb in enumerate(det.labels)}
                for box, label in zip(out.xyxy, out.labels, strict=True):
                    assert np.abs(box - truth[label]).max() < 8  # near where the object really is
        for label, tid in zip(out.labels, out.track_ids.tolist(), strict=True):
            if tid >= 0:
                ids_by_label.setdefault(label, set()).add(tid)
    assert predicted_frames >= 25
    assert len(ids_by_label) == 4 and all(len(v) == 1 for v in ids_by_label.values())


def test_unknown_parameter_and_tracker_are_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="has no parameter high_conf_det_threshold"):
        create_tracker("sort", FPS, high_conf_det_threshold=0.5)
    with pytest.raises(InvalidArgumentError, match=r"unknown tracker .deepsort.*bytetrack"):
        create_tracker("deepsort", FPS)
    with pytest.raises(InvalidArgumentError, match="already registered"):
        register_tracker(KNOWN_TRACKERS["sort"])


def test_the_librarys_parameter_refusal_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgumentError, match="tracker 'bytetrack': lost_track_buffer must be") as info:
        create_tracker("bytetrack", FPS, lost_track_buffer=-5)
    assert isinstance(info.value.__cause__, ValueError)


def test_missing_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = TrackerSpec(
        name="nolib",
        adapter="roboflow:RoboflowTracker",
        target="no_such_lib:Tracker",
        requires="no_such_lib_avdnn",
        extra="track",
        params={},
        defaults={},
        description="",
    )
    monkeypatch.setitem(KNOWN_TRACKERS, "nolib", spec)
    assert importlib.util.find_spec("no_such_lib_avdnn") is None
    with pytest.raises(BackendUnavailableError, match=r"pip install 'avdnn\[track\]'") as info:
        create_tracker("nolib", FPS)
    assert isinstance(info.value, ImportError)


def test_parameters_reach_the_library() -> None:
    t = create_tracker(
        "bytetrack", 10.0, lost_track_buffer=60, minimum_consecutive_frames=1, track_activation_threshold=0.3
    )
    lib = t.tracker  # type: ignore[attr-defined]
    assert lib.maximum_frames_without_update == 20 and lib.minimum_consecutive_frames == 1
    assert lib.track_activation_threshold == 0.3 and lib.maximum_time_without_update == 2.0


def test_summary_votes_and_counts() -> None:
    s = TrackSummary()
    base: dict[str, Any] = {"xyxy": [[0, 0, 10, 10], [20, 20, 30, 30]], "class_id": [0, 1], "frame_size": (64, 64)}
    s.add(Detections(**base, confidence=[0.9, 0.5], labels=("cat", "dog"), track_id=[0, -1]), 10, 0.4)
    s.add(Detections(**base, confidence=[0.7, 0.5], labels=("dog", "dog"), track_id=[0, 1]), 11, 0.44)
    s.add(
        Detections(**base, confidence=[0.8, 0.6], labels=("cat", "dog"), track_id=[0, 1], predicted=[True, False]),
        12,
        0.48,
    )
    s.add(Detections(**base, confidence=[0.8, 0.6], labels=("cat", "dog"), track_id=[0, 1]), 13, 0.52)
    first, second = s.records()
    assert (first.track_id, first.first_pts, first.last_pts, first.frames, first.detected) == (0, 10, 13, 4, 3)
    assert first.label == "cat" and first.mean_confidence == pytest.approx((0.9 + 0.7 + 0.8) / 3, rel=1e-6)
    assert (second.track_id, second.first_pts, second.frames, second.label) == (1, 11, 3, "dog")
    assert second.to_dict()["labels"] == {"dog": 3} and first.to_dict()["first_time"] == 0.4


def test_import_avdnn_does_not_import_the_tracker_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, avdnn, avdnn.filters.track; "
        "print([m for m in ('trackers', 'supervision', 'cv2') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"
