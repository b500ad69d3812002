"""The web page's sessions: random ids with an expiry, kept by the service, revoked by ``DELETE /api/session``.

A browser's ``EventSource`` and ``<img>`` cannot send an ``Authorization`` header, so the page
trades the token for a session cookie once. The cookie is a random id (``secrets.token_urlsafe``,
256 bits), not a function of the token: it says nothing about the token, it expires
(``session_ttl``, 12 h from the sign-in) and it can be revoked on its own, which a value derived
from the token could not be. The table is bounded (:data:`MAX_SESSIONS`): past it the oldest
session goes, so a client holding the token cannot grow it without end. It keeps a SHA-256 of
each id, never the id, so a lookup's timing tells nothing about a live one.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["MAX_SESSIONS", "Sessions"]

#: live sessions kept at most; a new one past it ends the oldest
MAX_SESSIONS = 1024


def _key(sid: str) -> bytes:
    return hashlib.sha256(sid.encode("utf-8", "surrogateescape")).digest()


class Sessions:
    """Session ids handed out, each valid until ``ttl`` seconds after it was made or until revoked."""

    def __init__(self, ttl: float, limit: int = MAX_SESSIONS, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.limit = limit
        #: the clock expiries are read on (a test may hand in its own)
        self.clock = clock
        self._lock = threading.Lock()
        self._expiry: OrderedDict[bytes, float] = OrderedDict()  # oldest first

    def open(self) -> str:
        """A new session id (the cookie's value)."""
        sid = secrets.token_urlsafe(32)
        now = self.clock()
        with self._lock:
            self._drop_expired(now)
            self._expiry[_key(sid)] = now + self.ttl
            while len(self._expiry) > self.limit:
                self._expiry.popitem(last=False)
        return sid

    def valid(self, sid: str) -> bool:
        """Whether ``sid`` is a live session (an expired one is forgotten)."""
        key, now = _key(sid), self.clock()
        with self._lock:
            expiry = self._expiry.get(key)
            if expiry is None:
                return False
            if now >= expiry:
                del self._expiry[key]
                return False
            return True

    def revoke(self, sid: str) -> bool:
        """End ``sid`` now; whether it was live."""
        with self._lock:
            return self._expiry.pop(_key(sid), None) is not None

    def __len__(self) -> int:
        with self._lock:
            self._drop_expired(self.clock())
            return len(self._expiry)

    def _drop_expired(self, now: float) -> None:
        while self._expiry:
            key, expiry = next(iter(self._expiry.items()))
            if expiry > now:
                return  # in order of expiry: every id is made with the same ttl
            del self._expiry[key]
