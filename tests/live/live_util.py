"""Helpers of the live tests: free ports, the served clips, a real ffmpeg server on loopback.

The server is the oracle ffmpeg (static 9.0.2) sending an MPEG-TS clip at its native rate
(``-re``) to ``tcp://127.0.0.1:PORT?listen=1`` or ``udp://127.0.0.1:PORT``; each test starts
and stops its own. The clips are short H.264 cuts of carphone with a keyframe every 10 frames
(so a UDP receiver that joins late still decodes), made once per session.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

from spine_util import run_ffmpeg


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_clip(ffmpeg: str, source: str, out: Path, seconds: float, vf: str = "null") -> Path:
    """A short H.264 MPEG-TS cut of ``source`` (keyframe every 10 frames, no B-frames)."""
    args = ["-y", "-i", source, "-t", str(seconds), "-vf", vf, "-c:v", "libx264", "-preset", "ultrafast"]
    res = run_ffmpeg(ffmpeg, [*args, "-g", "10", "-bf", "0", "-an", "-f", "mpegts", str(out)])
    assert res.rc == 0, res.err
    return out


def frame_hashes(ffmpeg: str, path: str | Path) -> list[str]:
    """The oracle's decoded-frame md5s of a file, in order."""
    res = run_ffmpeg(ffmpeg, ["-i", str(path), "-map", "0:v", "-f", "framemd5", "-"])
    assert res.rc == 0, res.err
    return [line.rsplit(",", 1)[1].strip() for line in res.out.decode().splitlines() if line.startswith("0,")]


def framemd5_rows(path: Path) -> list[tuple[int, str]]:
    """(pts, md5) of each video line of a framemd5 file."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("0,"):
            cols = [c.strip() for c in line.split(",")]
            rows.append((int(cols[2]), cols[5]))
    return rows


class Server:
    """``ffmpeg -re -i CLIP -c copy -f mpegts URL`` in the background; ``stop()`` kills it."""

    def __init__(self, ffmpeg: str, clip: Path, url: str, *, extra: list[str] | None = None) -> None:
        cmd = [ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-i", str(clip)]
        self.proc = subprocess.Popen(
            [*cmd, "-c", "copy", *(extra or []), "-f", "mpegts", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL ends a stopped (SIGSTOP) process too
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.communicate(timeout=10)

    def wait(self, timeout: float = 30) -> int:
        self.proc.communicate(timeout=timeout)
        return self.proc.returncode

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def tcp_listening(port: int, deadline: float = 10.0) -> None:
    """Wait until something listens on 127.0.0.1:port (the server is up), by the kernel's table."""
    _wait_socket("/proc/net/tcp", port, "0A", deadline)


def udp_bound(port: int, deadline: float = 10.0) -> None:
    """Wait until a socket is bound to udp port ``port`` (the receiver is up)."""
    _wait_socket("/proc/net/udp", port, None, deadline)


def _wait_socket(table: str, port: int, state: str | None, deadline: float) -> None:
    end = time.monotonic() + deadline
    want = f":{port:04X}"
    while time.monotonic() < end:
        with open(table) as fh:
            for row in fh.readlines()[1:]:
                cols = row.split()
                if cols[1].endswith(want) and (state is None or cols[3] == state):
                    return
        time.sleep(0.02)  # polling the kernel's socket table: there is nothing to wait on
    raise AssertionError(f"nothing on port {port} in {table} after {deadline} s")


def have_proc_net() -> bool:
    return os.path.exists("/proc/net/tcp") and os.path.exists("/proc/net/udp")
