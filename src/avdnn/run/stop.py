"""A stop request shared by the outputs of one run, seen by each output's pipeline.

Several outputs run on threads of their own (:mod:`avdnn.run.parallel`); SIGINT reaches only the
main thread, so it sets one :class:`StopSignal` that every pipeline started inside
:func:`stop_scope` checks at each decoded frame, then stops as it would on Ctrl-C: the frames
before are written and the output is finished cleanly (the run then exits 255, as ffmpeg
does). A pipeline also hands the signal its input's ``interrupt``, so an input waiting to be
reopened stops waiting at once (a read blocked in libavformat still ends only at its own bound,
``-live_timeout``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from avdnn.media.input.live import stop_waiting

_local = threading.local()


class StopSignal(threading.Event):
    """An event that also calls what was registered with :meth:`on_set` when it is set."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._guard = threading.Lock()
        self._next = 0

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from the setting thread) when the signal is set; returns the unregistering."""
        with self._guard:
            key = self._next
            self._next += 1
            self._callbacks[key] = callback
        if self.is_set():
            callback()

        def forget() -> None:
            with self._guard:
                self._callbacks.pop(key, None)

        return forget

    def set(self) -> None:
        super().set()
        with self._guard:
            callbacks = list(self._callbacks.values())
        for callback in callbacks:
            callback()


def current_stop() -> StopSignal | None:
    """The stop signal of the run this thread drives (None outside :func:`stop_scope`)."""
    signal: StopSignal | None = getattr(_local, "event", None)
    return signal


@contextlib.contextmanager
def stop_scope(signal: StopSignal) -> Iterator[None]:
    """Pipelines built on this thread inside the block stop once ``signal`` is set."""
    before = current_stop()
    _local.event = signal
    try:
        with stop_waiting(signal):  # an input's first open stops trying again too
            yield
    finally:
        _local.event = before
