"""What the service benchmarks share: live cameras, ``avdnn serve`` and ``avdnn`` as processes, their accounting.

A camera is the oracle ffmpeg (imageio-ffmpeg's static build) looping a clip at its native rate
(``-stream_loop -1 -re``) into MPEG-TS on ``tcp://127.0.0.1:PORT?listen=1``, stream-copied (no
encoder takes the cores from what is measured); one client each, as the service's tests do. The
service is ``python -m avdnn serve`` on a free loopback port, read over its REST API and
``/metrics`` (parsed with prometheus_client's parser); a separate run is ``python -m avdnn`` with
its status line (``frame= ... drop=N``) read from stderr. Everything started here is stopped here.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the zoo's SSD on OpenVINO, as every variant runs it
DETECT = "dnn_detect=model=zoo:ssd_mobilenet_v2_coco:dnn_backend=openvino"
#: how long a start may take before the benchmark gives up (a hang guard, not a measurement)
DEADLINE = 120.0


def env() -> dict[str, str]:
    """This checkout's avdnn first on the path of every process started here."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [out.get("PYTHONPATH")])])
    return out


def ffmpeg() -> str:
    import imageio_ffmpeg

    return str(imageio_ffmpeg.get_ffmpeg_exe())


def clip(name: str) -> str:
    from avdnn.zoo import sample

    return sample(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int, deadline: float = 20.0) -> None:
    """Until something listens on 127.0.0.1:port (the kernel's socket table)."""
    end, want = time.monotonic() + deadline, f":{port:04X}"
    while time.monotonic() < end:
        with open("/proc/net/tcp") as fh:
            if any(r.split()[1].endswith(want) and r.split()[3] == "0A" for r in fh.readlines()[1:]):
                return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on port {port} after {deadline} s")


class Camera:
    """An endless live stream of ``path`` for one client on a loopback TCP port."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.port = free_port()
        self.url = f"tcp://127.0.0.1:{self.port}"
        src = ["-stream_loop", "-1", "-re", "-i", path, "-map", "0:v", "-c:v", "copy"]
        out = ["-f", "mpegts", f"{self.url}?listen=1"]
        cmd = [ffmpeg(), "-hide_banner", "-loglevel", "error", "-nostdin", *src, *out]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _listening(self.port)

    def stop(self) -> None:
        stop(self.proc, signal.SIGKILL)


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, wait: float = 30.0) -> int | None:
    """Signal ``proc`` (if it still runs) and reap it; killed after ``wait`` seconds."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout=10)


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process so far (/proc/PID/stat), all its threads."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Service:
    """``avdnn serve`` as a process on a free loopback port, and an HTTP client for it (with its token)."""

    def __init__(self, *flags: str) -> None:
        import httpx

        self.port = free_port()
        token = secrets.token_urlsafe(32)
        argv = [sys.executable, "-m", "avdnn", "serve", "--port", str(self.port), *flags]
        given = dict(env(), AVDNN_SERVE_TOKEN=token)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=given, text=True)
        auth = {"Authorization": f"Bearer {token}"}
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=DEADLINE, headers=auth)
        end = time.monotonic() + DEADLINE
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"avdnn serve exited: {self.proc.communicate()[1][-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                if self.http.get("/readyz").status_code == 200:
                    return
            if time.monotonic() > end:
                raise RuntimeError("avdnn serve did not get ready")
            time.sleep(0.2)

    def call(self, method: str, path: str, **kw: Any) -> Any:
        r = self.http.request(method, path, **kw)
        if r.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:500]}")
        return r.json()

    def status(self, pid: str) -> dict[str, Any]:
        body: dict[str, Any] = self.call("GET", f"/api/pipelines/{pid}")
        return body

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of ``/metrics``, by (name, sorted labels), parsed by prometheus_client."""
        from prometheus_client.parser import text_string_to_metric_families

        r = self.http.get("/metrics")
        r.raise_for_status()
        out = {}
        for family in text_string_to_metric_families(r.text):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
        return out

    def wait_running(self, pid: str, sources: list[str], more_than: int = 0) -> None:
        """Until each of ``sources`` is running and has written more than ``more_than`` frames."""
        end = time.monotonic() + DEADLINE
        while True:
            rows = {s["id"]: s for s in self.status(pid)["sources"]}
            if all(
                sid in rows and rows[sid]["state"] == "running" and rows[sid]["frames"]["written"] > more_than
                for sid in sources
            ):
                return
            bad = [f"{sid}: {rows[sid]['state']} {rows[sid].get('cause')}" for sid in sources if sid in rows]
            if time.monotonic() > end:
                raise RuntimeError(f"sources not running after {DEADLINE} s: {bad}")
            time.sleep(0.5)

    def close(self) -> str:
        """SIGTERM (every pipeline stops cleanly); its stderr's tail."""
        self.http.close()
        stop(self.proc, signal.SIGTERM)
        err = self.proc.stderr.read() if self.proc.stderr is not None else ""
        return err[-2000:]


_STATUS = re.compile(r"frame=\s*(\d+).*?drop=(\d+)")


class CliRun:
    """``python -m avdnn -i URL -vf CHAIN -f null /dev/null``: one source in its own process; its
    status line (``frame=N ... drop=N``, shown with ``-stats``) read from stderr as it goes."""

    def __init__(self, url: str, chain: str) -> None:
        argv = [sys.executable, "-m", "avdnn", "-hide_banner", "-stats", "-i", url, "-vf", chain, "-f", "null"]
        self.proc = subprocess.Popen(
            [*argv, os.devnull], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env(), text=False
        )
        #: (monotonic time, frames written, frames dropped by the live queue) of the newest status line
        self.latest: tuple[float, int, int] | None = None
        self.tail = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        buf = b""
        while chunk := self.proc.stderr.read1(4096):  # type: ignore[attr-defined]
            buf += chunk
            *parts, buf = re.split(rb"[\r\n]", buf)
            for part in parts:
                m = _STATUS.search(part.decode(errors="replace"))
                if m:
                    self.latest = (time.monotonic(), int(m.group(1)), int(m.group(2)))
                elif part.strip():
                    self.tail = (self.tail + part + b"\n")[-4000:]

    def wait_written(self, more_than: int = 0) -> None:
        end = time.monotonic() + DEADLINE
        while self.latest is None or self.latest[1] <= more_than:
            if self.proc.poll() is not None:
                raise RuntimeError(f"avdnn exited {self.proc.returncode}: {self.tail.decode(errors='replace')}")
            if time.monotonic() > end:
                raise RuntimeError(f"avdnn wrote nothing after {DEADLINE} s")
            time.sleep(0.2)

    def close(self) -> None:
        """Ctrl-C, as a user stops it (its output finished), then reaped."""
        stop(self.proc, signal.SIGINT)
        self._reader.join(timeout=10)
