"""Helpers of the events tests: scripted tracks, a real mosquitto on loopback, a subscriber, a webhook server.

Every server is started by the test on a free loopback port and stopped by it: Debian's
``mosquitto`` (``.ci/run`` installs it) with a config file of its own, and an ``http.server`` on a
thread for webhooks. Readiness is waited for with a bound; nothing is asserted on time.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from spine_util import need_module, need_tool

from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame

MOSQUITTO = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)


# -- scripted tracks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Obj:
    """One object of a script: its track id, label, box size and where its box's top-left is per frame."""

    track_id: int
    label: str
    path: dict[int, tuple[float, float]]  # frame -> (x0, y0)
    size: tuple[float, float] = (8.0, 10.0)
    score: float = 0.9
    predicted: frozenset[int] = frozenset()


def det_at(objs: Sequence[Obj], n: int, frame_size: tuple[int, int] = (64, 64)) -> Detections:
    """The detections of frame ``n`` of a script."""
    rows = [(o, o.path[n]) for o in objs if n in o.path]
    xyxy = [[x, y, x + o.size[0], y + o.size[1]] for o, (x, y) in rows]
    labels = tuple(o.label for o, _ in rows)
    return Detections(
        xyxy=xyxy,
        confidence=[o.score for o, _ in rows],
        class_id=[sorted({"car", "person", "bicycle", "truck"}).index(o.label) for o, _ in rows],
        labels=labels,
        frame_size=frame_size,
        track_id=[o.track_id for o, _ in rows],
        predicted=[n in o.predicted for o, _ in rows],
    )


def horizontal(track_id: int, label: str, start: int, frames: int, x0: float, step: float, y: float = 20) -> Obj:
    """An object moving right by ``step`` px a frame from ``x0``, seen on frames start..start+frames-1."""
    return Obj(track_id, label, {start + k: (x0 + k * step, y) for k in range(frames)})


def script_filter(objs: Sequence[Obj], name: str = "script") -> type[Filter]:
    """A test-only filter that puts the script's boxes (with their ids) on every frame."""

    class Script(Filter):
        options: ClassVar[tuple[Option, ...]] = ()

        def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
            super().__init__(values, label=label)
            self.n = 0

        def filter(self, frame: Frame) -> list[Frame]:
            det = dataclasses.replace(det_at(objs, self.n, (frame.width, frame.height)), pts=frame.pts)
            self.n += 1
            frame.side_data = frame.side_data.copy()
            frame.side_data.detections = det
            return [frame]

    Script.name = name
    return Script


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def jsonl_events(path: Path) -> list[dict[str, Any]]:
    """The events a metadata_jsonl file holds, in file order."""
    return [r["event"] for r in jsonl(path) if r["type"] == "event"]


# -- mosquitto -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, up: bool = True, bound: float = 10.0) -> None:
    """Until the port accepts (or refuses) connections, at most ``bound`` seconds."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                if up:
                    return
        except OSError:
            if not up:
                return
        time.sleep(0.05)
    raise AssertionError(f"port {port} never became {'open' if up else 'closed'}")


@dataclass
class Broker:
    """A mosquitto of the test's own: start, stop (SIGTERM, its sessions saved), kill (SIGKILL)."""

    folder: Path
    port: int = field(default_factory=free_port)
    users: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    def config(self) -> Path:
        conf = self.folder / "mosquitto.conf"
        lines = [
            f"listener {self.port} 127.0.0.1",
            f"allow_anonymous {'false' if self.users else 'true'}",
            "persistence true",
            f"persistence_location {self.folder}/",
            f"log_dest file {self.folder}/mosquitto.log",
        ]
        if os.geteuid() == 0:
            lines.append("user root")  # or mosquitto drops to the 'mosquitto' user, who cannot write here
        if self.users:
            pw = self.folder / "passwords"
            for k, (user, password) in enumerate(self.users.items()):
                flags = ["-b", "-c"] if k == 0 else ["-b"]
                subprocess.run(["mosquitto_passwd", *flags, str(pw), user, password], check=True, capture_output=True)
            lines.append(f"password_file {pw}")
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def start(self) -> Broker:
        assert MOSQUITTO is not None
        cmd = [MOSQUITTO, "-c", str(self.config())]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=10)
        self.proc = None
        wait_port(self.port, up=False)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def need_mosquitto() -> None:
    need_tool(MOSQUITTO, "Debian's mosquitto is not installed: apt-get install -y --no-install-recommends mosquitto")
    need_module("paho.mqtt", "pip install 'avdnn[events]'")


class Subscriber:
    """A paho client that collects what arrives on a topic filter (QoS 1, a session that survives restarts)."""

    def __init__(self, port: int, topic: str = "#", *, user: str | None = None, password: str | None = None) -> None:
        import paho.mqtt.client as mqtt

        self.messages: list[tuple[str, bytes, bool]] = []
        self.arrived = threading.Condition()
        self.subscribed = threading.Event()
        self.topic = topic
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=f"test-sub-{port}-{id(self)}", clean_session=False
        )
        if user is not None:
            self.client.username_pw_set(user, password)
        self.client.reconnect_delay_set(min_delay=0.2, max_delay=1)  # type: ignore[arg-type]
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe(self.topic, qos=1)
        self.client.on_subscribe = lambda c, u, mid, rc, p: self.subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port, keepalive=10)
        self.client.loop_start()
        assert self.subscribed.wait(10), "the subscriber never got its SUBACK"

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        with self.arrived:
            self.messages.append((msg.topic, bytes(msg.payload), bool(msg.retain)))
            self.arrived.notify_all()

    def wait_for(self, test: Callable[[list[tuple[str, bytes, bool]]], bool], bound: float = 15.0) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: test(self.messages), timeout=bound)

    def events(self) -> list[dict[str, Any]]:
        with self.arrived:
            return [json.loads(p) for t, p, _ in self.messages if t.endswith("/events")]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


# -- a webhook endpoint --------------------------------------------------------------------------


class Hook:
    """An http.server on loopback that records each POST and answers with the next scripted status."""

    def __init__(self, statuses: Sequence[int] = ()) -> None:
        self.statuses = list(statuses)
        self.posts: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.tries = 0
        self.lock = threading.Condition()
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with hook.lock:
                    hook.tries += 1
                    status = hook.statuses.pop(0) if hook.statuses else 204
                    if status < 300:
                        hook.posts.append((dict(self.headers.items()), json.loads(body)))
                    hook.lock.notify_all()
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
