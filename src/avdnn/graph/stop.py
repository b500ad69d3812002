"""A stop request shared by the outputs of one run, seen by each output's pipeline.

Several outputs run on threads of their own (:mod:`avdnn.multi`); SIGINT reaches only the main
thread, so it sets one event that every pipeline started inside :func:`stop_scope` checks at
each decoded frame, then stops as it would on Ctrl-C: the frames before are written and the
output is finished cleanly (the run then exits 255, as ffmpeg does).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_local = threading.local()


def current_stop() -> threading.Event | None:
    """The stop event of the run this thread drives (None outside :func:`stop_scope`)."""
    event: threading.Event | None = getattr(_local, "event", None)
    return event


@contextlib.contextmanager
def stop_scope(event: threading.Event) -> Iterator[None]:
    """Pipelines built on this thread inside the block stop once ``event`` is set."""
    before = current_stop()
    _local.event = event
    try:
        yield
    finally:
        _local.event = before
