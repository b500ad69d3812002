"""One thread that keeps the sources up: restarts when they are due, and a check for stuck runs.

A source that went offline is tried again every ``retry_interval``; a network output that
dropped is reopened after a back-off; a run that gave no frame for ``watchdog`` seconds is
stopped and started again (Frigate's camera watchdog). All of it is timed here, on one thread
that waits on a condition until the next deadline (a restart due, or the next check), so the
service never holds a thread per waiting source and never sleeps in a loop. The service's
history sampler is a second one (its own thread, ``check()`` its once-a-second sample).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["Watchdog"]

log = logging.getLogger("avdnn.serve")


class Watchdog:
    """Calls each scheduled function once its time has come, and ``check()`` every ``interval`` s."""

    def __init__(self, interval: float, check: Callable[[], None], *, name: str = "avdnn-serve-watchdog") -> None:
        self._interval = interval
        self._check = check
        self._due: dict[str, tuple[float, Callable[[], None]]] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def schedule(self, key: str, delay: float, fn: Callable[[], None]) -> None:
        """Call ``fn`` in ``delay`` seconds (replacing what ``key`` had scheduled)."""
        with self._cond:
            self._due[key] = (time.monotonic() + delay, fn)
            self._cond.notify_all()

    def cancel(self, key: str) -> None:
        with self._cond:
            self._due.pop(key, None)

    def due_in(self, key: str) -> float | None:
        """Seconds until ``key``'s call (None: nothing scheduled)."""
        with self._cond:
            entry = self._due.get(key)
        return None if entry is None else max(0.0, entry[0] - time.monotonic())

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._due.clear()
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        next_check = time.monotonic() + self._interval
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    ready = [k for k, (at, _) in self._due.items() if at <= now]
                    if ready or now >= next_check:
                        break
                    soonest = min([next_check, *(at for at, _ in self._due.values())])
                    self._cond.wait(soonest - now)
                calls = [self._due.pop(k)[1] for k in ready]
            for fn in calls:
                self._call(fn)
            if time.monotonic() >= next_check:
                self._call(self._check)
                next_check = time.monotonic() + self._interval

    def _call(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:  # a bug in one restart must not stop the others being kept up
            log.exception("avdnn serve: a call on %s failed", self._thread.name)
