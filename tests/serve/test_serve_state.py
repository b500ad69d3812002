"""``--state`` under bad files and failed writes, on the real service on loopback: a bad state file or
a kept spec that now fails its check never stops the start, and is a listed, deletable ``failed``
pipeline; a state that cannot be written rolls a create or a join back (503) and leaves a delete's
answer a warning, never a 500 with the pipeline running unsaved."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from serve_util import TESTSRC, template_body, wait_for


def _keep(state: Path, file: str, pid: object, order: int, spec: object) -> None:
    (state / "pipelines").mkdir(parents=True, exist_ok=True, mode=0o700)
    (state / "pipelines" / file).write_text(json.dumps({"id": pid, "order": order, "spec": spec}))


def test_bad_state_files_are_failed_pipelines_listed_and_deletable(serve: Any, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _keep(state, "ok.json", "ok", 0, template_body("ok", ("a", TESTSRC)))
    _keep(state, "gone.json", "gone", 1, template_body("gone", ("a", TESTSRC), chain="nosuchfilter"))
    _keep(state, "up.json", "../../x", 2, template_body("x", ("a", TESTSRC)))  # an id that climbs out
    _keep(state, "bad name.json", "bad name", 3, template_body("y", ("a", TESTSRC)))
    (state / "pipelines" / "junk.json").write_text("{not json")
    served = serve(state=state)
    listed = lambda: {r["id"]: r for r in served.client.get("/api/pipelines").json()["pipelines"]}  # noqa: E731
    rows = wait_for("ok running (its first frame)", lambda: (got := listed())["ok"]["state"] == "running" and got)
    assert {pid: r["state"] for pid, r in rows.items()} == {
        "ok": "running",
        "gone": "failed",
        "up": "failed",
        "failed1": "failed",
        "junk": "failed",
    }
    assert rows["gone"]["cause"].startswith("nosuchfilter: No such filter: 'nosuchfilter'")
    assert rows["gone"]["spec"]["chain"] == "nosuchfilter"
    assert rows["up"]["cause"].endswith("its id is not a pipeline id (letters, digits, '_' and '-', 64 at most)")
    assert rows["junk"]["cause"].startswith("its state file is not a pipeline spec: Expecting property name")
    assert rows["junk"]["spec"] is None and rows["junk"]["kind"] == "unknown"
    ready = served.client.get("/readyz").json()
    assert ready["status"] == "ready" and sorted(ready["failed"]) == ["failed1", "gone", "junk", "up"]
    assert 'avdnn_pipelines{state="failed"} 4.0' in served.client.get("/metrics").text
    assert served.client.get("/api/pipelines/gone").json()["cause"] == rows["gone"]["cause"]
    r = served.client.post("/api/pipelines/gone/sources", json={"id": "b", "url": TESTSRC})
    assert r.status_code == 409 and r.json()["detail"] == "pipeline 'gone' failed at start (delete it)"
    assert served.client.post("/api/pipelines", json=template_body("gone", ("a", TESTSRC))).status_code == 409
    for pid in ("gone", "up", "failed1", "junk"):
        r = served.client.delete(f"/api/pipelines/{pid}")
        assert r.status_code == 200 and r.json()["state"] == "failed"
        assert served.client.get(f"/api/pipelines/{pid}").status_code == 404
    assert sorted(p.name for p in (state / "pipelines").iterdir()) == ["ok.json"]
    assert not (tmp_path / "x.json").exists()
    assert served.client.post("/api/pipelines", json=template_body("gone", ("a", TESTSRC))).status_code == 201


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """``full_disk(True)``: every rename into the state directory fails with ENOSPC, as on a full disk."""
    replace = os.replace
    full = [False]

    def rename(src: Any, dst: Any, **kw: Any) -> None:
        if full[0] and str(tmp_path) in os.fspath(dst):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(src, dst, **kw)

    monkeypatch.setattr(os, "replace", rename)
    return lambda on: full.__setitem__(0, on)


def test_a_failed_state_write_rolls_back_or_warns(serve: Any, tmp_path: Path, full_disk: Any) -> None:
    state = tmp_path / "state"
    served = serve(state=state)
    c = served.client
    full_disk(True)
    r = c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC)))
    assert r.status_code == 503, r.text
    assert r.json()["detail"] == "the state could not be written (No space left on device)"
    assert c.get("/api/pipelines").json() == {"pipelines": []}
    full_disk(False)
    assert c.post("/api/pipelines", json=template_body("p", ("a", TESTSRC))).status_code == 201
    kept = (state / "pipelines" / "p.json").read_text()
    full_disk(True)
    r = c.post("/api/pipelines/p/sources", json={"id": "b", "url": TESTSRC})
    assert r.status_code == 503 and "No space left on device" in r.json()["detail"]
    status = served.status("p")
    assert [s["id"] for s in status["spec"]["sources"]] == ["a"]
    assert [s["id"] for s in status["sources"] if not s.get("departed")] == ["a"]
    r = c.delete("/api/pipelines/p/sources/a")
    assert r.status_code == 200 and r.json()["warning"].endswith("the source comes back at a restart")
    assert (state / "pipelines" / "p.json").read_text() == kept  # the old spec, whole
    full_disk(False)
    assert c.delete("/api/pipelines/p").status_code == 200
    assert not (state / "pipelines" / "p.json").exists()
