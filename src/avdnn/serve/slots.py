"""A bounded number of long-lived streams (``/api/events`` clients, MJPEG viewers): past the cap, 503.

A slot is taken when the request is answered (before its stream's first byte, so the refusal can be
a status) and given back when the stream ends. A stream whose body never started (the client went
away first) never runs its ``finally``: its slot is given back when the slot object is collected,
so a slot can never leak.
"""

from __future__ import annotations

import threading
import weakref

from avdnn.serve.errors import UnavailableError

__all__ = ["Slot", "Slots"]


class Slot:
    """One stream's place; :meth:`release` (or its collection) gives it back, once."""

    def __init__(self, slots: Slots) -> None:
        self._free = weakref.finalize(self, slots._give_back)

    def release(self) -> None:
        self._free()


class Slots:
    """At most ``cap`` slots taken at once; ``what`` names them in the refusal."""

    def __init__(self, cap: int, what: str) -> None:
        self.cap = cap
        self.what = what
        self._lock = threading.Lock()
        self.taken = 0

    def take(self) -> Slot:
        """A slot, or 503 when all ``cap`` are taken."""
        with self._lock:
            if self.taken >= self.cap:
                raise UnavailableError(f"{self.taken} {self.what} open: the limit, try again later")
            self.taken += 1
        return Slot(self)

    def _give_back(self) -> None:
        with self._lock:
            self.taken -= 1
