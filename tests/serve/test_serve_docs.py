"""docs/serve.md runs as printed (its curl session, on a free port instead of 8080) and names what
the service has: every route, every metric family, every setting. The session is the issue's
check again with a zoo model: three sources sharing it, one joining, one leaving, the final
accounting balanced and every output playable."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from serve_util import decoded_frames, free_port
from spine_util import avdnn_script, missing, need_installed, need_tool

import avdnn
from avdnn.serve import ServeConfig, Service, create_app
from avdnn.serve.metrics import registry_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"


def test_the_curl_session_runs_as_printed(ffmpeg: str, tmp_path: Path) -> None:
    need_installed("ai_edge_litert", "the session's face detector runs on LiteRT: pip install 'avdnn[tflite]'")
    from avdnn.zoo import get

    spec = get("blazeface")
    if spec.source_file() is None:
        missing("models", spec.package.pip)
    need_tool(shutil.which("curl"), "the session needs curl: apt-get install curl")
    avdnn_script()
    (session,) = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
    # the harness's own line: the service started in the background goes with the script, whatever fails
    script = "set -euo pipefail\ntrap 'kill %1 2>/dev/null || true' EXIT\n" + session.replace("8080", str(free_port()))
    (tmp_path / "out").mkdir()
    package_root = str(Path(avdnn.__file__).resolve().parents[1])  # this avdnn, whatever the working directory
    path = os.pathsep.join([package_root, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}", PYTHONPATH=path)
    env.pop("AVDNN_SERVE_TOKEN", None)  # the session uses the token the service makes
    res = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert 'avdnn_frames_total{cause=""' in res.stdout
    assert (tmp_path / "cam3.jpg").read_bytes()[:2] == b"\xff\xd8"
    assert (tmp_path / "events.txt").read_text().startswith(": avdnn events\n")  # the stream ended with the service
    *_, left, final = _objects(res.stdout)  # the two DELETEs' final accounting
    assert left["id"] == "cam2" and final["id"] == "lobby" and final["state"] == "ended"
    (inst,) = final["instances"]
    assert inst["name"] == "faces" and inst["stream_count"] == 3 and inst["failures"] == 0
    for row in [left, *final["sources"]]:
        assert row["balanced"] and row["state"] == "ended", row
        assert decoded_frames(ffmpeg, tmp_path / "out" / f"{row['id']}.mkv") == row["frames"]["written"]
    assert list((tmp_path / "state" / "pipelines").iterdir()) == []  # deleted: forgotten by the state
    token = (tmp_path / "state" / "token").read_text().strip()  # the one it made, printed once
    assert res.stderr.count(token) == 1 and f"/?token={token}\n" in res.stderr
    assert "Traceback" not in res.stderr


def _objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects printed one after the other (curl prints no newline between them)."""
    decoder, out, at = json.JSONDecoder(), [], 0
    while (at := text.find("{", at)) >= 0:
        try:
            obj, end = decoder.raw_decode(text, at)
        except ValueError:
            at += 1
            continue
        out.append(obj)
        at = end
    return out


def test_the_doc_names_every_route_metric_and_setting() -> None:
    text = DOC.read_text()
    app = create_app(Service(ServeConfig()))
    for route in app.routes:
        path = getattr(route, "path", "")
        if path.startswith(("/api", "/metrics", "/healthz", "/readyz")):
            shown = path.replace("{pid}", "{id}").replace("{sid}", "{source}")
            for method in sorted(getattr(route, "methods", ())):
                assert f"`{method} {shown}`" in text, (method, shown)
    families = {m.name for m in registry_for(Service(ServeConfig())).collect()}
    for name in families:
        counter = f"`{name}_total`" in text or f"`avdnn_events_{name[13:]}_total`" in text
        assert f"`{name}`" in text or counter, name
    for field in dataclasses.fields(ServeConfig):
        if field.name not in ("host", "port", "token", "state", "pipelines"):
            assert f"{field.name} = " in text, field.name
