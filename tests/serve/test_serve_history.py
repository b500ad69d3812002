"""A source's history (``GET .../sources/{source}/history``): one sample a second while it runs,
each with its fields, its frame totals following the status's accounting, never going back across
the source's runs and ending on the final accounting, ``seconds=`` answering exactly the samples of
that window, the ``history`` setting bounding it, and a source that left taking its history with it.
Live sources are the oracle ffmpeg on loopback; the bound is checked on :class:`History` with a
clock of its own."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
from serve_util import DEADLINE, Camera, Served, source, wait_for

from avdnn.errors import InvalidArgumentError
from avdnn.serve.config import MAX_HISTORY, ServeConfig, load_config
from avdnn.serve.history import History
from avdnn.serve.source import STATES


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


#: the fields of a sample, as GET .../history answers them (docs/serve.md)
FIELDS = {"t", "state", "fps", "dropped", "dropped_by", "p95", "read", "written"}


def _history_at(served: Served, pid: str, sid: str, **params: Any) -> tuple[float, list[dict[str, Any]]]:
    """The service's ``now`` and its samples (each well formed, oldest first, none after ``now``)."""
    r = served.client.get(f"/api/pipelines/{pid}/sources/{sid}/history", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["pipeline"], body["source"], body["interval"], body["history"]) == (pid, sid, 1.0, 300)
    samples: list[dict[str, Any]] = body["samples"]
    for s in samples:
        assert set(s) == FIELDS, s
        assert isinstance(s["t"], float) and s["t"] <= body["now"], (s, body["now"])
        assert s["state"] in STATES and isinstance(s["fps"], float | int) and s["fps"] >= 0, s
        assert s["dropped"] == sum(s["dropped_by"].values()) and all(n > 0 for n in s["dropped_by"].values()), s
        assert s["p95"] is None or 0 < s["p95"] < DEADLINE, s
        assert 0 <= s["written"] <= s["read"], s  # hflip: nothing written that was not read
    _never_back(samples)
    return body["now"], samples


def _history(served: Served, pid: str, sid: str, **params: Any) -> list[dict[str, Any]]:
    return _history_at(served, pid, sid, **params)[1]


def _never_back(samples: list[dict[str, Any]]) -> None:
    for before, after in itertools.pairwise(samples):
        assert after["t"] > before["t"], (before, after)
        assert after["read"] >= before["read"] and after["written"] >= before["written"], (before, after)


def _in_state(served: Served, sid: str, state: str) -> dict[str, Any] | None:
    row = source(served.status("hall"), sid)
    return row if row["state"] == state else None


def test_a_sources_history_while_it_runs_and_after(serve: Any, ffmpeg: str) -> None:
    served: Served = serve(retry_interval=0.5)
    with Camera(ffmpeg) as cam1, Camera(ffmpeg) as cam2:
        body = {
            "name": "hall",
            "chain": "hflip",
            "output": ["-f", "null", "-"],
            "sources": [{"id": "cam1", "url": cam1.url}, {"id": "cam2", "url": cam2.url}],
        }
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        wait_for(
            "cam1 sampled running 4 times",
            lambda: sum(s["state"] == "running" for s in _history(served, "hall", "cam1")) >= 4,
        )
        # the samples follow the accounting: those shown before a status are at most its counts,
        # those taken after it at least them
        before = _history(served, "hall", "cam1")
        row = source(served.status("hall"), "cam1")
        after_status = time.time()
        wait_for("a sample after the status", lambda: _history(served, "hall", "cam1")[-1]["t"] > after_status)
        samples = _history(served, "hall", "cam1")
        assert samples[: len(before)] == before  # kept as they were, the new ones after them
        frames = row["frames"]
        for s in before:
            assert s["read"] <= frames["read"] and s["written"] <= frames["written"], (s, frames)
        assert sum(s["dropped"] for s in before) <= frames["dropped"]
        for s in samples:
            if s["t"] > after_status:
                assert s["read"] >= frames["read"] and s["written"] >= frames["written"], (s, frames)

        gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(samples)]
        assert min(gaps) >= 0.9  # one sample a second at most: one timer, not one per frame or per request
        assert statistics.median(gaps) < 3.0  # and about one a second (a hang guard: a loaded machine lags)
        running = [s for s in samples if s["state"] == "running"]
        assert running[-1]["written"] > running[0]["written"] and all(s["fps"] > 0 for s in running[1:])
        assert {s["state"] for s in samples} <= {"starting", "running"}
        # p95 is over the frames written since the sample before: there whenever some were
        for a, b in itertools.pairwise(samples):
            if b["written"] - a["written"] > 2:
                assert b["p95"] is not None, (a, b)

        # seconds= keeps the samples of the last N seconds of the service's clock, and all of them
        now, last = _history_at(served, "hall", "cam1", seconds=2.5)
        assert last and all(now - 2.5 < s["t"] <= now for s in last), (now, last)
        full = _history(served, "hall", "cam1")
        first = full.index(last[0])
        assert full[first : first + len(last)] == last  # the same samples, not others
        assert first == 0 or full[first - 1]["t"] <= now - 2.5  # none older in the window left out
        later = full[first + len(last) :]
        assert all(s["t"] > now - 1.0 for s in later), (now, later)  # taken since (or as it answered)
        assert served.client.get("/api/pipelines/hall/sources/cam1/history", params={"seconds": 0}).status_code == 422
        too_long = {"seconds": 10**6}
        assert served.client.get("/api/pipelines/hall/sources/cam1/history", params=too_long).status_code == 422

        # the camera goes away and comes back: a second run, whose counts add to the first's
        cam1.kill()
        row = wait_for("cam1 offline", lambda: _in_state(served, "cam1", "offline"))
        written = row["frames"]["written"]  # the first run's, all of them
        cam1.start()
        wait_for(
            "cam1 sampled running again",
            lambda: (s := _history(served, "hall", "cam1")[-1])["state"] == "running" and s["written"] > written,
        )

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
    assert final["runs"] >= 2  # and its samples never went back across its runs
    assert samples[-1]["state"] == "ended"
    assert (samples[-1]["read"], samples[-1]["written"]) == (final["frames"]["read"], final["frames"]["written"])
    assert sum(s["dropped"] for s in samples) == final["frames"]["dropped"]  # every drop in some second
