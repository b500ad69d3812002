"""Keeping it up: a camera killed and restarted (reconnecting, offline, running again), a network
output that drops (reopened with back-off, its gap counted), a bug (failed, with its traceback,
while the others run on) and a run that gives no frame (restarted by the watchdog)."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from serve_util import Camera, Served, decoded_frames, free_port, source, tcp_listening, wait_for

from avdnn.filters.base import Filter
from avdnn.media.frame import Frame
from avdnn.serve.agent import LOCAL
from avdnn.serve.host import LocalAgent

LAVFI = ["-f", "lavfi", "-re"]
TESTSRC = "testsrc2=size=96x64:rate=25"


def _in(served: Served, pid: str, sid: str, *states: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        row = source(served.status(pid), sid)
        return row if row["state"] in states else None

    return check


def _frames_flow(served: Served, pid: str, sid: str, more_than: int) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        row = source(served.status(pid), sid)
        return row if row["state"] == "running" and row["frames"]["written"] > more_than else None

    return check


def test_a_camera_killed_is_reconnecting_then_offline_then_running_again(
    serve: Any, ffmpeg: str, tmp_path: Path
) -> None:
    served = serve(stall_after=0.5, retry_interval=1.0)
    cam = Camera(ffmpeg).start()
    try:
        body = {
            "name": "door",
            "output": ["-c:v", "mpeg4", str(tmp_path / "{source}.mkv")],
            "input_options": ["-reconnect_attempts", "10", "-reconnect_delay", "0.5", "-live_timeout", "3"],
            "sources": [{"id": "cam", "url": cam.url}],
        }
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        wait_for("running", _frames_flow(served, "door", "cam", 5))

        # killed: the live input reopens (reconnecting); restarted in time: the same run goes on
        cam.kill()
        wait_for("reconnecting", _in(served, "door", "cam", "reconnecting"))
        assert served.status("door")["state"] == "reconnecting"
        cam.start()
        row = wait_for("running again", _frames_flow(served, "door", "cam", 0))
        wait_for("reopened", lambda: source(served.status("door"), "cam")["reconnects"] >= 1)
        assert source(served.status("door"), "cam")["runs"] == 1

        # killed for longer: the input gives up, the source is offline and tried every retry_interval
        written = row["frames"]["written"]
        cam.kill()
        row = wait_for("offline", _in(served, "door", "cam", "offline"), deadline=90)
        assert row["cause"] == "the input ended" and served.status("door")["state"] == "offline"
        cam.start()
        row = wait_for("back from offline", _frames_flow(served, "door", "cam", written))
        assert row["restarts"]["offline"] >= 1 and row["runs"] >= 2 and row["gap_seconds"] > 0
        final = served.client.delete("/api/pipelines/door").json()
    finally:
        cam.kill()
    (row,) = final["sources"]
    assert row["balanced"], row["violations"]
    assert len(row["outputs"]) == row["runs"]  # each run wrote its own file: cam.mkv, cam.1.mkv ...
    files = [tmp_path / "cam.mkv", *(tmp_path / f"cam.{n}.mkv" for n in range(1, row["runs"]))]
    assert [str(f) for f in files] == row["outputs"]
    assert sum(decoded_frames(ffmpeg, f) for f in files if f.exists()) == row["frames"]["written"]


def test_a_network_output_is_kept_up_when_it_cannot_open_and_when_its_peer_goes_away(serve: Any, ffmpeg: str) -> None:
    served = serve(stall_after=1.0, retry_interval=2.0, backoff=0.25)
    port = free_port()
    listen = f"tcp://127.0.0.1:{port}?listen=1"

    def receiver() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [ffmpeg, "-hide_banner", "-loglevel", "quiet", "-nostdin", "-f", "mpegts", "-i", listen, "-f", "null", "-"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        tcp_listening(port)
        return proc

    body = {
        "name": "relay",
        "output": ["-c:v", "mpeg4", "-f", "mpegts", f"tcp://127.0.0.1:{port}"],
        "input_options": LAVFI,
        "sources": [{"id": "src", "url": TESTSRC}],
    }
    # nobody listens yet: the run cannot open its output, and is started again with back-off
    assert served.client.post("/api/pipelines", json=body).status_code == 201
    row = wait_for("refused", _in(served, "relay", "src", "reconnecting"))
    assert "Connection refused" in row["cause"]
    rx = receiver()
    try:
        row = wait_for("sending", _frames_flow(served, "relay", "src", 5))
        assert row["restarts"]["output"] >= 1 and row["gap_seconds"] > 0
        runs, gap = row["runs"], row["gap_seconds"]

        # the peer goes away mid-run: the same run reconnects its output when the peer is back
        rx.kill()
        rx.wait()
        row = wait_for("the peer went away", _in(served, "relay", "src", "reconnecting"))
        rx = receiver()
        row = wait_for(
            "reconnected", lambda: (r := _frames_flow(served, "relay", "src", 0)()) and r["output_reopens"] and r
        )
        assert row["runs"] == runs and row["gap_seconds"] > gap  # no new run: the input and the chain went on
        final = served.client.delete("/api/pipelines/relay").json()
    finally:
        rx.kill()
        rx.wait()
    (row,) = final["sources"]
    assert row["balanced"], row["violations"]
    assert row["outputs"] == [f"tcp://127.0.0.1:{port}"] * row["runs"]  # a network output is reopened as it is


class _Bug(Filter):
    name = "avdnn_test_serve_bug"
    description = "Raises a Python error (a bug) on its 10th frame."

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.n = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        self.n += 1
        if self.n == 10:
            raise ZeroDivisionError("the chain's code divided by zero")
        return (frame,)


def test_a_bug_fails_its_pipeline_with_its_traceback_while_the_others_run_on(
    serve: Any, register: Callable[[type], type], tmp_path: Path
) -> None:
    register(_Bug)
    served = serve()
    for name, chain in (("good", "hflip"), ("bad", "avdnn_test_serve_bug")):
        body = {
            "name": name,
            "chain": chain,
            "output": ["-f", "null", "-"],
            "input_options": LAVFI,
            "sources": [{"id": "a", "url": TESTSRC}],
        }
        assert served.client.post("/api/pipelines", json=body).status_code == 201
    row = wait_for("failed", _in(served, "bad", "a", "failed"))
    assert row["cause"] == "bug: ZeroDivisionError: the chain's code divided by zero"
    assert "Traceback" in row["traceback"] and "ZeroDivisionError" in row["traceback"]
    assert "test_serve_keepup.py" in row["traceback"]  # where the code raised
    bad = served.status("bad")
    assert bad["state"] == "failed" and bad["cause"] == row["cause"] and bad["traceback"] == row["traceback"]
    assert row["frames"]["failed"] == 1 and row["failed"] == {"avdnn_test_serve_bug: bug: ZeroDivisionError": 1}
    good = wait_for("the other runs on", _frames_flow(served, "good", "a", 20))
    assert good["cause"] is None
    for pid in ("good", "bad"):
        final = served.client.delete(f"/api/pipelines/{pid}").json()
        assert final["sources"][0]["balanced"], final["sources"][0]["violations"]


class _Stuck(Filter):
    name = "avdnn_test_serve_stuck"
    description = "Holds its 10th frame for a while, once per process (a stage that hangs)."
    held = threading.Event()
    release = threading.Event()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.count = 0

    def filter(self, frame: Frame) -> Sequence[Frame]:
        if not _Stuck.held.is_set():
            self.count += 1
            if self.count == 10:
                _Stuck.held.set()
                _Stuck.release.wait(30)  # let go once the watchdog has stopped the run
        return (frame,)


def test_the_watchdog_restarts_a_run_that_gives_no_frame(
    serve: Any, register: Callable[[type], type], ffmpeg: str, tmp_path: Path
) -> None:
    register(_Stuck)
    _Stuck.held.clear()
    _Stuck.release.clear()
    served = serve(watchdog=1.0, stall_after=0.5)
    body = {
        "name": "hang",
        "chain": "avdnn_test_serve_stuck",
        "output": ["-c:v", "mpeg4", str(tmp_path / "{source}.mkv")],
        "input_options": LAVFI,
        "sources": [{"id": "a", "url": TESTSRC}],
    }
    assert served.client.post("/api/pipelines", json=body).status_code == 201
    try:
        wait_for("held", _Stuck.held.is_set)
        agent = served.service.nodes.agent(LOCAL)
        assert isinstance(agent, LocalAgent)
        wait_for("the watchdog stopped it", lambda: (run := agent.hosted("hang", "a")) and run._restart_reason)
    finally:
        _Stuck.release.set()
    row = wait_for("a second run", lambda: (r := _frames_flow(served, "hang", "a", 10)()) and r["runs"] == 2 and r)
    assert row["restarts"] == {"watchdog": 1} and row["state"] == "running"
    final = served.client.delete("/api/pipelines/hang").json()
    (row,) = final["sources"]
    assert row["balanced"], row["violations"]
    assert row["outputs"] == [str(tmp_path / "a.mkv"), str(tmp_path / "a.1.mkv")]
    written = decoded_frames(ffmpeg, tmp_path / "a.mkv") + decoded_frames(ffmpeg, tmp_path / "a.1.mkv")
    assert written == row["frames"]["written"]
