"""A source's history (``GET .../sources/{source}/history``): one sample a second while it runs,
its frame totals never going back and ending on the final accounting, ``seconds=`` and the
``history`` setting bounding it, and a source that left taking its history with it. Live sources
are the oracle ffmpeg on loopback; the bound is checked on :class:`History` with a clock of its own."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from serve_util import Camera, Served, source, wait_for

from avdnn.errors import InvalidArgumentError
from avdnn.serve.config import MAX_HISTORY, ServeConfig, load_config
from avdnn.serve.history import History


def _add(history: History, t: float, read: int = 0, dropped: dict[str, int] | None = None) -> None:
    history.add(t, state="running", fps=10.0, p95=0.02, read=read, written=read, dropped=dropped or {})


def test_the_history_keeps_its_last_seconds_only() -> None:
    history = History(5)
    for t in range(100, 110):  # a clock of the test's: one sample a second for 10 s
        _add(history, float(t), read=t)
    kept = history.since(None, 109.5)
    assert [s.t for s in kept] == [105.0, 106.0, 107.0, 108.0, 109.0] and len(history) == 5
    assert [s.t for s in history.since(2, 109.5)] == [108.0, 109.0]
    assert history.since(1, 200.0) == []  # nothing in the last second of a later clock
    _add(history, 120.0, read=120)  # the sampler held up for 11 s: what is older than 5 s goes
    assert [s.t for s in history.since(None, 120.0)] == [120.0]
    for t in range(121, 200):
        _add(history, t * 1.0)
        assert len(history) <= 5
    assert History(1).seconds == 1


def test_each_sample_counts_the_drops_since_the_one_before() -> None:
    history = History(10)
    _add(history, 1.0, dropped={"queue": 2})
    _add(history, 2.0, dropped={"queue": 2})
    _add(history, 3.0, dropped={"queue": 5, "late": 1})
    shown = [s.as_dict() for s in history.since(None, 3.0)]
    assert [(s["dropped"], s["dropped_by"]) for s in shown] == [
        (2, {"queue": 2}),
        (0, {}),
        (4, {"queue": 3, "late": 1}),
    ]
    assert set(shown[0]) == {"t", "state", "fps", "dropped", "dropped_by", "p95", "read", "written"}
    json.dumps(shown)


def test_the_history_setting_is_bounded(tmp_path: Path) -> None:
    assert ServeConfig().history == 300
    for bad in (0, -1, MAX_HISTORY + 1, 2.5, True):
        with pytest.raises(InvalidArgumentError, match="Invalid history"):
            ServeConfig(history=bad)  # type: ignore[arg-type]
    path = tmp_path / "serve.toml"
    path.write_text("history = 60\nevents_queue = 8\n")
    assert load_config(path).history == 60


def _history(served: Served, pid: str, sid: str, **params: Any) -> list[dict[str, Any]]:
    r = served.client.get(f"/api/pipelines/{pid}/sources/{sid}/history", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["pipeline"], body["source"], body["interval"], body["history"]) == (pid, sid, 1.0, 300)
    samples: list[dict[str, Any]] = body["samples"]
    assert all(s["t"] <= body["now"] for s in samples)
    return samples


def _never_back(samples: list[dict[str, Any]]) -> None:
    for before, after in itertools.pairwise(samples):
        assert after["t"] > before["t"], (before, after)
        assert after["read"] >= before["read"] and after["written"] >= before["written"], (before, after)


def test_a_sources_history_while_it_runs_and_after(serve: Any, ffmpeg: str) -> None:
    served: Served = serve()
    with Camera(ffmpeg) as cam1, Camera(ffmpeg) as cam2:
        body = {
            "name": "hall",
            "chain": "hflip",
            "output": ["-f", "null", "-"],
            "sources": [{"id": "cam1", "url": cam1.url}, {"id": "cam2", "url": cam2.url}],
        }
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        wait_for(
            "cam1 sampled running 6 times",
            lambda: sum(s["state"] == "running" for s in _history(served, "hall", "cam1")) >= 6,
        )
        samples = _history(served, "hall", "cam1")
        _never_back(samples)
        gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(samples)]
        assert min(gaps) >= 0.9  # one sample a second at most: one timer, not one per frame or per request
        assert statistics.median(gaps) < 3.0  # and about one a second (a hang guard: a loaded machine lags)
        assert samples[-1]["written"] > samples[0]["written"] and samples[-1]["fps"] > 0
        assert {s["state"] for s in samples} <= {"starting", "running"}

        # seconds= keeps the last N seconds only
        last = _history(served, "hall", "cam1", seconds=2)
        assert 1 <= len(last) <= 3 and len(last) < len(samples)
        assert served.client.get("/api/pipelines/hall/sources/cam1/history", params={"seconds": 0}).status_code == 422
        too_long = {"seconds": 10**6}
        assert served.client.get("/api/pipelines/hall/sources/cam1/history", params=too_long).status_code == 422

        # a source that leaves takes its history with it; unknown ids are 404s
        wait_for("cam2 sampled", lambda: _history(served, "hall", "cam2"))
        assert served.client.delete("/api/pipelines/hall/sources/cam2").status_code == 200
        for path in ("hall/sources/cam2", "hall/sources/nope", "nope/sources/cam1"):
            r = served.client.get(f"/api/pipelines/{path}/history")
            assert r.status_code == 404 and "no " in r.json()["detail"], path

        # deleted, the pipeline stays readable: its history ends on its final accounting
        r = served.client.delete("/api/pipelines/hall")
        assert r.status_code == 200
        final = source(r.json(), "cam1")
        samples = _history(served, "hall", "cam1")
        _never_back(samples)
        assert samples[-1]["state"] == "ended"
        assert (samples[-1]["read"], samples[-1]["written"]) == (final["frames"]["read"], final["frames"]["written"])
        assert sum(s["dropped"] for s in samples) == final["frames"]["dropped"]  # every drop in some second
