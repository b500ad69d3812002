"""Events to a JSON Lines file: one event (or per-frame record) per line, written as it happens.

``file=events.jsonl`` (``-``: standard output). Each line is the message's JSON exactly as MQTT
and the webhook get it. A write is synchronous (a local file is the frame path's own speed, as
``metadata_jsonl``); a write that fails (a full disk) drops that message with the OS's reason
and the run goes on.
"""

from __future__ import annotations

import sys
from typing import IO, ClassVar

from avdnn.errors import from_errno
from avdnn.events.sinks.base import Message, Sink, SinkOptions, log


class FileSink(Sink):
    """Append messages to a JSONL file, flushed at close (and after each line with ``direct``)."""

    kind: ClassVar[str] = "file"

    def __init__(self, target: str, options: SinkOptions) -> None:
        super().__init__(target)
        self.path = target
        self.direct = bool(options.extra.get("direct", False))
        try:
            self._out: IO[bytes] | None = (
                sys.stdout.buffer if target == "-" else open(target, "wb")  # noqa: SIM115 - held for the run
            )
        except OSError as exc:
            raise from_errno(exc.errno or 5, f"could not open '{target}': {exc.strerror}", file=target) from exc
        self.stats.state = "open"

    def send(self, message: Message) -> None:
        with self.lock:
            self._given(message)
            if self._out is None:
                self.stats.dropped["sent after close"] += 1
                return
            try:
                self._out.write(message.payload + b"\n")
                if self.direct:
                    self._out.flush()
            except OSError as exc:
                cause = f"write failed: {exc.strerror or exc}"
                if not self.stats.dropped[cause]:
                    log.warning("events: file '%s': %s (the run goes on; such events are counted)", self.path, cause)
                self.stats.dropped[cause] += 1
                self.stats.last_error = cause
                return
            self.stats.published += 1

    def close(self) -> None:
        with self.lock:
            out, self._out = self._out, None
            if out is not None:
                try:
                    out.flush()
                finally:
                    if out is not sys.stdout.buffer:
                        out.close()
                self.stats.state = "closed"
        super().close()


__all__ = ["FileSink"]
