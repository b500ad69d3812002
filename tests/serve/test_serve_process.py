"""``avdnn serve`` as a process: pipelines from ``--config``, SIGTERM stopping every pipeline cleanly
(outputs finished, trailers written), and ``--state`` bringing the pipelines back after a restart."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from serve_util import DEADLINE, announced, decoded_frames, free_port, source, wait_for

TESTSRC = "testsrc2=size=64x48:rate=10"


class Process:
    """``python -m avdnn serve ARGS`` on a free port, its stderr kept (read as it comes: a full pipe
    would stop the service at its next log line); its client carries the token of the URL it
    printed (the one it made, or kept in ``--state``)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "avdnn", "serve", "--port", str(self.port), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.url, self.err = announced(self.proc)
        self._rest: list[bytes] = []
        self._drain = threading.Thread(target=self._read_rest, name="test-serve-stderr", daemon=True)
        self._drain.start()
        self.token = parse_qs(urlsplit(self.url).query).get("token", [None])[0]
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=DEADLINE, headers=headers)
        wait_for("the service ready", self._ready)

    def _read_rest(self) -> None:
        assert self.proc.stderr is not None
        while chunk := os.read(self.proc.stderr.fileno(), 65536):
            self._rest.append(chunk)

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.err
        try:
            return self.client.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    def status(self, pid: str) -> dict[str, Any]:
        body: dict[str, Any] = self.client.get(f"/api/pipelines/{pid}").json()
        return body

    def terminate(self) -> tuple[int, str]:
        """SIGTERM, then its exit status and stderr (a hang guard bounds the wait, nothing is timed)."""
        self.client.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=DEADLINE)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._drain.join(DEADLINE)
            assert self.proc.stderr is not None
            self.proc.stderr.close()
        return self.proc.returncode, self.err + b"".join(self._rest).decode(errors="replace")


def _flowing(p: Process, pid: str, sid: str, more_than: int = 5) -> bool:
    row = source(p.status(pid), sid)
    return row["state"] == "running" and row["frames"]["written"] > more_than


def test_sigterm_stops_every_pipeline_cleanly_and_the_state_brings_them_back(ffmpeg: str, tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    out.mkdir()
    config = tmp_path / "serve.toml"
    config.write_text(
        "retry_interval = 1.0\nstop_timeout = 5.0\n\n[[pipelines]]\n"
        f'name = "cfg"\nchain = "hflip"\noutput = ["-c:v", "mpeg4", "{out}/cfg-{{source}}.mkv"]\n'
        'input_options = ["-f", "lavfi", "-re"]\n'
        f'sources = [{{id = "a", url = "{TESTSRC}"}}]\n'
    )
    served = Process("--state", str(state), "--config", str(config), "--media-root", str(tmp_path))
    made = {
        "name": "made",
        "chain": "vflip",
        "output": ["-c:v", "mpeg4", str(out / "made-{source}.mkv")],
        "input_options": ["-f", "lavfi", "-re"],
        "sources": [{"id": "b", "url": TESTSRC}],
    }
    assert served.client.post("/api/pipelines", json=made).status_code == 201
    wait_for("both pipelines running", lambda: _flowing(served, "cfg", "a") and _flowing(served, "made", "b"))
    kept = sorted(p.name for p in (state / "pipelines").iterdir())
    assert kept == ["cfg.json", "made.json"]
    for path in (state / "pipelines").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the sources' URLs as given
    assert json.loads((state / "pipelines" / "made.json").read_text())["spec"]["sources"] == made["sources"]

    rc, err = served.terminate()
    assert rc == 0, err
    assert "Traceback" not in err and "pipeline(s) stopped" in err
    first = {name: decoded_frames(ffmpeg, out / name) for name in ("cfg-a.mkv", "made-b.mkv")}
    assert all(n > 5 for n in first.values()), first  # finished: the oracle decodes every frame

    # started again on the same state: both pipelines come back (cfg once), writing beside the first files
    token = served.token
    served = Process("--state", str(state), "--config", str(config), "--media-root", str(tmp_path))
    assert served.token == token  # kept in the state: the same URL after a restart
    listed = served.client.get("/api/pipelines").json()["pipelines"]
    assert sorted(p["id"] for p in listed) == ["cfg", "made"]
    wait_for("both back", lambda: _flowing(served, "cfg", "a") and _flowing(served, "made", "b"))
    assert source(served.status("made"), "b")["outputs"] == [str(out / "made-b.1.mkv")]
    final = served.client.delete("/api/pipelines/made").json()
    assert final["sources"][0]["balanced"] and final["state"] == "ended"
    assert sorted(p.name for p in (state / "pipelines").iterdir()) == ["cfg.json"]  # a deleted one is forgotten
    assert decoded_frames(ffmpeg, out / "made-b.1.mkv") == final["sources"][0]["frames"]["written"]
    rc, err = served.terminate()
    assert rc == 0, err
    assert decoded_frames(ffmpeg, out / "cfg-a.1.mkv") > 5
    assert decoded_frames(ffmpeg, out / "cfg-a.mkv") == first["cfg-a.mkv"]  # never overwritten
    assert not os.path.exists(out / "made-b.2.mkv")
