"""Helpers of the output tests: free ports, a real ffmpeg receiving on loopback, test peers.

The receiver is the oracle ffmpeg (static 9.0.2) listening (``tcp://...?listen=1``, ``-listen 1
-i rtmp://...``, ``-rtsp_flags listen``, ``-listen 1 -i http://...``) or bound (``udp://``), writing
the framemd5 of every frame it decodes; each test starts and stops its own. The peers that go
away or stop reading are small Python servers, since what they do is the point.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

from spine_util import run_ffmpeg


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_socket(port: int, *, udp: bool = False, deadline: float = 20.0) -> None:
    """Until something listens on tcp ``port`` (or is bound to udp ``port``), by the kernel's table."""
    table, state = ("/proc/net/udp", None) if udp else ("/proc/net/tcp", "0A")
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


def hashes(text: str) -> list[str]:
    """The md5 of each frame of stream 0 in framemd5 text."""
    return [line.rsplit(",", 1)[1].strip() for line in text.splitlines() if line.startswith("0,")]


def source_hashes(ffmpeg: str, path: str) -> list[str]:
    """The oracle's framemd5 of every frame of ``path`` (what a lossless chain must deliver)."""
    res = run_ffmpeg(ffmpeg, ["-i", path, "-map", "0:v", "-f", "framemd5", "-"])
    assert res.rc == 0, res.err
    return hashes(res.out.decode())


class Receiver:
    """The oracle ffmpeg reading ``url`` with ``before`` (its input options) into ``out`` (framemd5)."""

    def __init__(self, ffmpeg: str, url: str, out: Path, before: list[str]) -> None:
        self.out = out
        cmd = [ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *before, "-i", url]
        self.proc = subprocess.Popen(
            [*cmd, "-map", "0:v", "-f", "framemd5", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def frames(self, timeout: float = 60) -> list[str]:
        """Wait for the receiver's end (its sender finished); the md5 of every frame it decoded."""
        _, err = self.proc.communicate(timeout=timeout)
        assert self.out.exists(), err.decode("utf-8", "replace")
        return hashes(self.out.read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # a UDP receiver has no end of stream: SIGTERM ends it cleanly
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.communicate(timeout=10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Peer:
    """A TCP server on loopback that accepts connections and, per ``mode``:

    * ``"drop"``: reads ``after`` bytes, then resets the connection (the peer is lost);
    * ``"stall"``: accepts and never reads, with a small receive buffer (the peer stopped reading);
    * ``"keep"``: reads everything of each connection into :attr:`received` (one entry each).
    """

    def __init__(self, mode: str, *, after: int = 20000, connections: int = 1) -> None:
        self.mode = mode
        self.after = after
        self.received: list[bytes] = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if mode == "stall":
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.sock.listen(connections)
        self._conns: list[socket.socket] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(connections,), daemon=True)
        self._thread.start()

    def _serve(self, connections: int) -> None:
        for _ in range(connections):
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            if self.mode == "drop":
                got = 0
                while got < self.after:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    got += len(chunk)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
                conn.close()
            elif self.mode == "keep":
                data = bytearray()
                while chunk := conn.recv(65536):
                    data += chunk
                self.received.append(bytes(data))
                conn.close()
            else:
                self._done.wait(60)

    def join(self, timeout: float = 30) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the peer did not see its connections end"

    def close(self) -> None:
        self._done.set()
        for conn in self._conns:
            conn.close()
        self.sock.close()
        self._thread.join(10)

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
