"""A pushed network output reconnected in the middle of its run, with back-off: a service's policy.

When a write to a network output fails because its peer went away (the server restarted: an I/O
error), ffmpeg ends that output, and so does a run. A service wants it back without stopping the
run (the camera's input and the shared model go on): inside :func:`reopen_scope`, a pipeline
built on the thread hands such a failure to the :class:`OutputReopen` policy, which waits
(``backoff``, doubling up to ``max_delay``), reconnects through the output's seam
(``Sink.reopen_output``: a new connection, a new header, the same streams) and lets the run go
on. The frame whose write failed counts as written (it reached the encoder; what the dead
connection held is lost with it); the policy counts the reopenings and the seconds the output
was away. The run's stop (Ctrl-C, a service removing the source) ends the waiting at once, and
the failure then ends the output as it would have.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from avdnn.errors import AvdnnError, IOFailureError, NotSupportedError

__all__ = ["OutputReopen", "current_reopen", "reopen_scope"]

log = logging.getLogger("avdnn")

_local = threading.local()


class OutputReopen:
    """Reconnect a network output whose write failed: ``backoff`` seconds, doubling up to ``max_delay``."""

    def __init__(self, *, backoff: float = 0.5, max_delay: float = 10.0) -> None:
        self.backoff = backoff
        self.max_delay = max_delay
        #: reconnections that worked, and the seconds from each failure to its reconnection
        self.reopens = 0
        self.gap_seconds = 0.0
        #: set while a failed output waits to be reconnected (a service shows it as reconnecting)
        self.reopening = False

    def recover(self, sink: Any, error: AvdnnError, stop: threading.Event | None) -> bool:
        """After ``error`` on a write to ``sink``: reconnect it (True), or False when it cannot be
        (not a network output, not a lost peer) or the run stopped meanwhile."""
        reopen = getattr(sink, "reopen_output", None)
        if reopen is None or not isinstance(error, IOFailureError):
            return False
        name = getattr(error, "file", None) or "the output"
        started, delay = time.monotonic(), self.backoff
        self.reopening = True
        try:
            while True:
                log.warning("%s: %s; reconnecting in %g s", name, error.message, delay)
                if stop is not None and stop.wait(delay):
                    return False
                if stop is None:
                    time.sleep(delay)  # the back-off is the point of this wait
                try:
                    reopen()
                except NotSupportedError:
                    return False  # a file: it cannot be reconnected
                except AvdnnError as exc:
                    error, delay = exc, min(delay * 2, self.max_delay)
                    continue
                self.reopens += 1
                self.gap_seconds += time.monotonic() - started
                log.warning("%s: reconnected after %.1f s", name, time.monotonic() - started)
                return True
        finally:
            self.reopening = False


def current_reopen() -> OutputReopen | None:
    """The policy of the outputs built on this thread (None: a failed write ends the output)."""
    policy: OutputReopen | None = getattr(_local, "policy", None)
    return policy


@contextlib.contextmanager
def reopen_scope(policy: OutputReopen | None) -> Iterator[None]:
    """Network outputs built on this thread inside the block are reconnected by ``policy``."""
    before = current_reopen()
    _local.policy = policy
    try:
        yield
    finally:
        _local.policy = before
