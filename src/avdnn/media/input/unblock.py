"""A listening input's socket shut from another thread, so that a run waiting in it ends.

A listening input (``tcp://...?listen=1``, ``-listen 1`` of tcp/http/rtmp, rtsp's ``-rtsp_flags
listen``) waits in accept() for its peer without avdnn's bound, as ffmpeg waits
(:mod:`avdnn.media.input.live`), and nothing a run's stop signal sets reaches that wait: PyAV's
interrupt callback only keeps its own timeout. A caller that gave up waiting for such a run (the
service, past ``stop_timeout``) shuts the socket down from outside: shutdown(2) takes it out of
listening and wakes the poll libavformat waits in, accept() fails, the open fails and the run,
stopped, ends; libavformat then closes the socket itself (the descriptor is never closed under it).

The socket is found by the input's port in the kernel's tables (Linux: ``/proc/self/net/tcp``,
``tcp6`` and ``/proc/self/fd``): a TCP port has one listening socket, so no other input's socket is
touched. A UDP receiver waiting for its first datagram is not woken by a shutdown (libavformat's
receiving thread reads on): it is not shut, and nor is anything where ``/proc`` is missing.
"""

from __future__ import annotations

import contextlib
import os
import socket
from urllib.parse import urlsplit

from avdnn.media.input.live import listens

__all__ = ["shut_listening"]

#: a listening socket's state in /proc/net/tcp (TCP_LISTEN)
_LISTEN = "0A"


def shut_listening(url: str, options: dict[str, str] | None) -> int:
    """Shut down this process's socket listening on the port of ``url``, when the input listens;
    how many were shut (0: it does not listen, has no port, or nothing listens there)."""
    if not listens(url, dict(options or {})):
        return 0
    try:
        port = urlsplit(url).port
    except ValueError:
        return 0
    if port is None:
        return 0
    inodes = _listening(port)
    shut = 0
    for fd, inode in _socket_fds():
        if inode in inodes and _shutdown(fd, inode):
            shut += 1
    return shut


def _listening(port: int) -> set[int]:
    """The inodes of the sockets listening on ``port`` (IPv4 and IPv6)."""
    found: set[int] = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == _LISTEN and int(cols[1].rpartition(":")[2], 16) == port:
                found.add(int(cols[9]))
    return found


def _socket_fds() -> list[tuple[int, int]]:
    """(descriptor, inode) of each socket this process holds."""
    out: list[tuple[int, int]] = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            link = os.readlink(f"/proc/self/fd/{name}")
            if link.startswith("socket:["):
                out.append((int(name), int(link[8:-1])))
    return out


def _shutdown(fd: int, inode: int) -> bool:
    """shutdown(2) on a duplicate of ``fd`` if it is still socket ``inode`` (the number may have been reused)."""
    try:
        dup = os.dup(fd)
    except OSError:
        return False
    try:
        if os.fstat(dup).st_ino != inode:
            return False
        sock = socket.socket(fileno=dup)
    except OSError:
        os.close(dup)
        return False
    with sock:  # closes the duplicate only
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            return False
    return True
