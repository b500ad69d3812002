"""Threads joined with a bound: a run never waits for ever on one of its own threads.

A run's helper threads (the decoder ahead of the chain, the encoder behind it, a second
input's demuxer, the streams of ``open_many``) can be stuck where no flag reaches them: in a
libavformat read of a listening socket nobody connects to, in a write to a pipe nobody reads.
Their owner joins them with a bound (:data:`JOIN_TIMEOUT`); one still running after it is left
behind (it is a daemon) with what it still uses: the owner hands it the release of those
resources (:meth:`OwnedThread.then`: close the input, abort the output), which then runs on
that thread once it really ends, never under it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["JOIN_TIMEOUT", "OwnedThread"]

log = logging.getLogger("avdnn")

#: Seconds a closing run waits for one of its threads before leaving it behind: more than a
#: network read's own bound (-live_timeout, 5 s by default), so a thread in a bounded wait ends first.
JOIN_TIMEOUT = 10.0


class OwnedThread:
    """A daemon thread running ``target``; :meth:`join` is bounded, :meth:`then` runs after its end."""

    def __init__(self, target: Callable[[], None], *, name: str) -> None:
        self.name = name
        self._target = target
        self._lock = threading.Lock()
        self._ended = False
        self._after: list[Callable[[], None]] = []
        #: whether an owner gave up waiting for it (see :meth:`join`)
        self.left_behind = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._target()
        finally:
            with self._lock:
                self._ended = True
                after, self._after = self._after, []
            for fn in after:
                _quietly(fn, self.name)

    @property
    def ended(self) -> bool:
        """Whether ``target`` has returned (what :meth:`then` registered may still be running)."""
        with self._lock:
            return self._ended

    def join(self, timeout: float | None = None, *, what: str | None = None) -> bool:
        """Wait at most ``timeout`` seconds (None: :data:`JOIN_TIMEOUT`) for the thread to end.

        Returns False when it is still running: it is left behind (a warning names ``what``, the
        thread's name by default), and what it still uses must be released by :meth:`then`. A
        thread left behind once is not waited for again.
        """
        limit = JOIN_TIMEOUT if timeout is None else timeout
        started = self._thread.ident is not None and self._thread is not threading.current_thread()
        if started and not self.left_behind:  # given up on once: not waited for again
            self._thread.join(limit)
        if not self._thread.is_alive():
            return True
        if not self.left_behind:
            self.left_behind = True
            log.warning("%s: still running after %g s; left behind (released when it ends)", what or self.name, limit)
        return False

    def then(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the thread's target has returned: now if it has (or never started), else on that thread."""
        with self._lock:
            if not self._ended and self._thread.ident is not None:
                self._after.append(fn)
                return
        fn()


def _quietly(fn: Callable[[], None], name: str) -> None:
    """A release run on a left-behind thread: its failure is logged, there is nobody to raise it to."""
    try:
        fn()
    except Exception:  # the owner is gone: a traceback from a daemon thread helps nobody
        log.debug("%s: releasing after its end failed", name, exc_info=True)
