"""Events to a JSON Lines file: one event (or per-frame record) per line, counted published once the OS has it.

``file=events.jsonl`` (``-``: standard output). Each line is the message's JSON exactly as MQTT
and the webhook get it. An existing file is replaced only with ``-y`` (``overwrite=True``), as
an output is (:mod:`avdnn.media.output.sidefile`). Lines gather in a buffer of
:data:`BUFFER_BYTES` (none with ``direct=1``) and are written on the frame path's thread when it
fills and at the end: a local file is the frame path's own speed, as ``metadata_jsonl``.

The accounting says what reached the file: a line is *buffered* until ``write(2)`` took all of
its bytes, then *published*. A write that fails (a full disk, a file too large, an I/O error)
drops the lines it did not complete, counted with the OS's reason, and the run goes on; the
piece of a line it left at the end of a regular file is cut off again, so the file holds whole
lines, exactly the published ones. On standard output what a failed flush let through is not
known: its lines all count as dropped.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from typing import IO, ClassVar

from avdnn.events.sinks.base import Message, Sink, SinkOptions, log
from avdnn.media.output.sidefile import open_side_file

#: bytes of lines held before they are written (Python's own buffer size)
BUFFER_BYTES = io.DEFAULT_BUFFER_SIZE


class FileSink(Sink):
    """Append messages to a JSONL file in whole lines, each counted once written."""

    kind: ClassVar[str] = "file"

    def __init__(self, target: str, options: SinkOptions) -> None:
        super().__init__(target)
        self.path = target
        self.direct = bool(options.extra.get("direct", False))
        self._stdout = target == "-"
        self._out: IO[bytes] | None = sys.stdout.buffer if self._stdout else open_side_file(target, options.overwrite)
        #: a regular file (a failed write's partial line can be cut off; a device's cannot)
        self._regular = not self._stdout and stat.S_ISREG(os.fstat(self._out.fileno()).st_mode)
        self._lines: list[bytes] = []
        self._size = 0
        self.stats.state = "open"

    def held(self) -> int:
        return len(self._lines)

    def send(self, message: Message) -> None:
        with self.lock:
            self._given(message)
            if self._out is None:
                self.stats.dropped["sent after close"] += 1
                return
            line = message.payload + b"\n"
            self._lines.append(line)
            self._size += len(line)
            if self.direct or self._size >= BUFFER_BYTES:
                self._flush()

    def _flush(self) -> None:
        """Write the buffered lines; count the whole ones the OS took, drop the rest (under the lock)."""
        lines, self._lines, self._size = self._lines, [], 0
        if not lines or self._out is None:
            return
        done, error = self._write(b"".join(lines))
        whole = 0
        for line in lines:
            if done < len(line):
                break
            done -= len(line)
            whole += 1
        self.stats.published += whole
        if error is None:
            return
        cause = f"write failed: {error.strerror or error}"
        if not self.stats.dropped[cause]:
            log.warning("events: file '%s': %s (the run goes on; such events are counted)", self.path, cause)
        self.stats.dropped[cause] += len(lines) - whole
        self.stats.last_error = cause
        if done and self._regular:  # ``done`` bytes of the next line reached the file: cut them off again
            self._cut(done)

    def _write(self, data: bytes) -> tuple[int, OSError | None]:
        """Write ``data``; (bytes the OS took, the error that stopped it or None)."""
        out = self._out
        assert out is not None
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                n = out.write(view[done:])
                if not n:
                    raise OSError(errno.EIO, os.strerror(errno.EIO))  # a write that takes nothing
                done += n
            if self._stdout:
                out.flush()
        except OSError as exc:
            return (0 if self._stdout else done), exc
        return done, None

    def _cut(self, partial: int) -> None:
        assert self._out is not None
        with contextlib.suppress(OSError):  # the file keeps the piece: the count stays right, the line is torn
            fd = self._out.fileno()
            end = os.lseek(fd, 0, os.SEEK_CUR) - partial
            os.ftruncate(fd, end)
            os.lseek(fd, end, os.SEEK_SET)

    def close(self) -> None:
        with self.lock:
            self._flush()
            out, self._out = self._out, None
            if out is not None and not self._stdout:
                try:
                    out.close()  # nothing of ours is held here: every line was written or counted
                except OSError as exc:
                    self.stats.last_error = f"close failed: {exc.strerror or exc}"
                    log.warning("events: file '%s': %s", self.path, self.stats.last_error)
            self.stats.state = "closed"
        super().close()


__all__ = ["BUFFER_BYTES", "FileSink"]
