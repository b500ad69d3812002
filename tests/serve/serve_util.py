"""Helpers of the service tests: the service on a free loopback port, live ffmpeg cameras, a tiny detector.

The service is the real one (uvicorn serving the FastAPI app on a real socket), in a thread of
the test process so a test can also read its Service object and register test filters; the
process tests start ``avdnn serve`` itself. A camera is the oracle ffmpeg sending an endless
H.264 MPEG-TS stream at its native rate (``-re``) on ``tcp://127.0.0.1:PORT?listen=1``, which the
service reads as a client; each test starts and kills its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from spine_util import run_ffmpeg

from avdnn.cli.serve import jobs_from_argv
from avdnn.serve import ServeConfig, make_server

#: how long a test waits for the service to reach a state before it fails (a hang guard, not a timing)
DEADLINE = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tcp_listening(port: int, deadline: float = 20.0) -> None:
    """Until something listens on 127.0.0.1:port, by the kernel's socket table."""
    end = time.monotonic() + deadline
    want = f":{port:04X}"
    while time.monotonic() < end:
        with open("/proc/net/tcp") as fh:
            for row in fh.readlines()[1:]:
                cols = row.split()
                if cols[1].endswith(want) and cols[3] == "0A":
                    return
        time.sleep(0.02)  # the kernel's table: nothing to wait on
    raise AssertionError(f"nothing listens on port {port} after {deadline} s")


class Camera:
    """An endless live stream from the oracle ffmpeg, served to one client on a TCP port."""

    def __init__(self, ffmpeg: str, port: int | None = None, *, clip: str | None = None, size: str = "160x120") -> None:
        self.ffmpeg = ffmpeg
        self.port = port or free_port()
        self.clip = clip
        self.size = size
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self) -> Camera:
        if self.clip is not None:
            src = ["-stream_loop", "-1", "-re", "-i", self.clip]
        else:
            src = ["-re", "-f", "lavfi", "-i", f"testsrc2=size={self.size}:rate=15"]
        enc = ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-bf", "0", "-an"]
        out = ["-f", "mpegts", f"tcp://127.0.0.1:{self.port}?listen=1"]
        self.proc = subprocess.Popen(
            [self.ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", *src, *enc, *out],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        tcp_listening(self.port)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)

    def __enter__(self) -> Camera:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


class Served:
    """``avdnn serve`` in a thread of this process on a free loopback port; ``client`` talks to it,
    with the service's token (the one given, or the one it made; none with ``no_auth=True``)."""

    def __init__(self, **settings: Any) -> None:
        settings.setdefault("port", free_port())
        self.config = ServeConfig(**settings)
        self.server = make_server(self.config, jobs_from_argv)
        self.service = self.server.service
        self.url = f"http://127.0.0.1:{self.config.port}"
        #: the bearer token every request carries (None with no_auth)
        self.token = self.service.token
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self.client = httpx.Client(base_url=self.url, timeout=DEADLINE, headers=headers)
        self._thread = threading.Thread(target=self.server.run, name="test-serve", daemon=True)

    def start(self) -> Served:
        self._thread.start()
        end = time.monotonic() + DEADLINE
        while not self.server.started:
            assert self._thread.is_alive(), "the service did not start"
            assert time.monotonic() < end, "the service did not start in time"
            time.sleep(0.02)  # uvicorn's started flag: nothing to wait on
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(DEADLINE)
        self.client.close()
        assert not self._thread.is_alive(), "the service did not stop"

    def status(self, pid: str) -> dict[str, Any]:
        r = self.client.get(f"/api/pipelines/{pid}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body


#: what ``avdnn serve`` writes before the page's URL on stderr, once it listens
ANNOUNCE = "avdnn serve: the web page and the API are at "


def announced(proc: subprocess.Popen[str], deadline: float = DEADLINE) -> tuple[str, str]:
    """Read the stderr of an ``avdnn serve`` process up to the line with the page's URL: (the URL,
    what stderr had up to and with that line). Raw reads of the pipe, so ``communicate`` gets the rest."""
    assert proc.stderr is not None
    fd, seen, end = proc.stderr.fileno(), b"", time.monotonic() + deadline
    while True:
        for line in seen.decode(errors="replace").splitlines(keepends=True):
            if line.startswith(ANNOUNCE) and line.endswith("\n"):
                return line[len(ANNOUNCE) :].strip(), seen.decode(errors="replace")
        left = end - time.monotonic()
        assert left > 0, f"avdnn serve printed no URL after {deadline} s: {seen.decode(errors='replace')}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"avdnn serve exited before its URL: {seen.decode(errors='replace')}"
            seen += chunk


def wait_for(what: str, check: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    """Poll ``check`` until it returns something true; its value (a hang guard, never a timing)."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < end, f"{what}: not after {deadline} s"
        time.sleep(0.1)


#: a lavfi test pattern read at its rate: a live-like source that needs no camera
LAVFI = ["-f", "lavfi", "-re"]
TESTSRC = "testsrc2=size=64x48:rate=10"


def template_body(
    name: str, *sources: tuple[str, str], chain: str = "", input_options: list[str] | None = None
) -> dict[str, Any]:
    """A template pipeline's body: ``sources`` as (id, url) through ``chain`` into ``-f null -``."""
    return {
        "name": name,
        "chain": chain,
        "output": ["-f", "null", "-"],
        "input_options": LAVFI if input_options is None else input_options,
        "sources": [{"id": sid, "url": url} for sid, url in sources],
    }


def source(status: dict[str, Any], sid: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in status["sources"] if s["id"] == sid)
    return found


def tiny_detector(path: Path) -> str:
    """A constant SSD-style detector: one box (0.25..0.75 of the frame, class 1, 0.9) for every
    input image; input ``x`` [N, 3, 32, 32] float, output [N, 1, 1, 7]."""
    row = np.array([[0, 1, 0.9, 0.25, 0.25, 0.75, 0.75]], np.float32).reshape(1, 1, 1, 7)
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=1),
        helper.make_node("Mul", ["s", "zero"], ["z"]),
        helper.make_node("Reshape", ["z", "shape"], ["zr"]),
        helper.make_node("Add", ["c", "zr"], ["out0"]),
    ]
    inits = [
        numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array([-1, 1, 1, 1], np.int64), "shape"),
        numpy_helper.from_array(row, "c"),
    ]
    graph = helper.make_graph(
        nodes,
        "tinydet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("out0", TensorProto.FLOAT, ["N", 1, 1, 7])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def decoded_frames(ffmpeg: str, path: str | Path) -> int:
    """How many video frames the oracle decodes from ``path`` without an error (asserts it is playable)."""
    res = run_ffmpeg(ffmpeg, ["-i", str(path), "-map", "0:v", "-f", "framemd5", "-"])
    assert res.rc == 0 and not res.err.strip(), f"{path}: {res.err}"
    return sum(1 for line in res.out.decode().splitlines() if line.startswith("0,"))


def mjpeg_frames(data: bytes) -> list[bytes]:
    """The JPEG pictures of a multipart MJPEG body (each from SOI to EOI)."""
    out = []
    for part in data.split(b"--frame\r\n")[1:]:
        _, _, rest = part.partition(b"\r\n\r\n")
        start, end = rest.find(b"\xff\xd8"), rest.rfind(b"\xff\xd9")
        if start >= 0 and end > start:
            out.append(rest[start : end + 2])
    return out


class EventStream:
    """``GET /api/events`` read by a thread of its own: ``events`` fills as they arrive, each
    ``{"id": int, "event": type, "data": {...}}``; ``comments`` has the keep-alive and hello lines.

    The reader stops at the line after :meth:`close`; tests set a short keep-alive
    (``fastapi.routing._PING_INTERVAL``) so that a line always comes soon.
    """

    def __init__(self, served: Served, params: dict[str, str] | None = None, headers: dict[str, str] | None = None):
        self.events: list[dict[str, Any]] = []
        self.comments: list[str] = []
        self.status: int | None = None
        self.content_type = ""
        self.opened = threading.Event()
        self._stop = threading.Event()
        self._client = httpx.Client(base_url=served.url, timeout=httpx.Timeout(DEADLINE), headers=served.client.headers)
        self._args = (params or {}, headers or {})
        self._thread = threading.Thread(target=self._read, name="test-sse", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        params, headers = self._args
        try:
            with self._client.stream("GET", "/api/events", params=params, headers=headers) as r:
                self.status, self.content_type = r.status_code, r.headers.get("content-type", "")
                if r.status_code != 200:
                    return
                fields: dict[str, str] = {}
                for line in r.iter_lines():
                    if self._stop.is_set():
                        return
                    if line.startswith(":"):
                        self.comments.append(line[1:].strip())
                        self.opened.set()
                    elif line:
                        name, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        fields[name] = fields[name] + "\n" + value if name in fields else value
                    elif fields:
                        self.events.append(
                            {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}
                        )
                        fields = {}
        except httpx.HTTPError:
            pass  # the service went away
        finally:
            self.opened.set()

    def wait_open(self) -> EventStream:
        assert self.opened.wait(DEADLINE), "the event stream did not open"
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(DEADLINE)
        self._client.close()
        assert not self._thread.is_alive(), "the event stream's reader did not stop"

    def __enter__(self) -> EventStream:
        return self.wait_open()

    def __exit__(self, *exc: object) -> None:
        self.close()
