"""Events to an HTTP webhook: one POST of JSON per event, retried with back-off, a cooldown per object.

``webhook=http://host:port/path`` (or ``https://``; user info in the URL becomes HTTP basic
authentication and is never shown). Each event is POSTed as ``application/json`` with the
``headers`` given (``Name=value|Name=value``; their values never print either), ``timeout``
seconds per attempt. A connection error, a timeout, a 5xx, 408 or 429 is retried ``retries``
times, after 0.5 s, 1 s, 2 s... (at most 10 s); another 4xx is the endpoint's refusal and is not
retried. Events wait in the backlog (``buffer``) meanwhile, in order; a full backlog drops its
oldest, counted. ``cooldown`` S > 0: at most one POST per object every S seconds of stream time
(Frigate's notification cooldown); the events it suppresses are dropped by design and counted as
``cooldown``, except ``end``, which always goes. No redirect is followed: a 3xx answer is the
endpoint's refusal (``refused: HTTP 302``), not retried, so an event and its credentials never
go to a host other than the one given. The standard library's ``urllib`` does the HTTP: no extra
to install.
"""

from __future__ import annotations

import base64
import threading
import urllib.error
import urllib.request
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit, urlunsplit

from avdnn._util.redact import MASK, redact_url
from avdnn.errors import InvalidArgumentError
from avdnn.events.sinks.base import COOLDOWN, UNDELIVERED, Backlog, Message, Sink, SinkOptions, log

#: retry back-off: first wait and cap, seconds
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 10.0
_RETRIED_STATUS = frozenset({408, 429})


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: urllib's default re-sends the request (its Authorization and custom
    headers too) to any host the answer names, as a GET without the body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx then reaches the caller as an HTTPError


def parse_headers(text: str) -> tuple[tuple[str, str], ...]:
    """``Name=value|Name=value`` as pairs (a value may hold ``=``)."""
    out = []
    for item in (text or "").split("|"):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidArgumentError("headers: expected Name=value|Name=value", option="headers")
        out.append((name.strip(), value.strip()))
    return tuple(out)


def shown_headers(headers: tuple[tuple[str, str], ...]) -> str:
    """The headers as they may be shown: names only, values masked."""
    return ", ".join(f"{name}: {MASK}" for name, _ in headers)


class WebhookSink(Sink):
    """POST each event to one URL from a thread of its own."""

    kind: ClassVar[str] = "webhook"

    def __init__(self, target: str, options: SinkOptions) -> None:
        super().__init__(redact_url(target))
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidArgumentError(f"'{redact_url(target)}' is not an http:// or https:// URL", option="webhook")
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.url = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        self.headers = {"Content-Type": "application/json", "User-Agent": "avdnn"}
        if parts.username is not None:
            token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
        self.headers.update(dict(options.headers))
        self.timeout = options.timeout
        self.retries = options.retries
        self.cooldown = options.cooldown
        self.flush_timeout = options.flush_timeout
        self._opener = urllib.request.build_opener(_NoRedirect)
        self.backlog = Backlog(self, options.buffer)
        self._last_post: dict[int, float] = {}
        self._sending: Message | None = None
        self._closing = False
        self._stop = threading.Event()
        self.stats.state = "open"
        self._worker = threading.Thread(target=self._deliver, name="avdnn-webhook", daemon=True)
        self._worker.start()

    def send(self, message: Message) -> None:
        if message.kind != "event":
            return  # one POST per frame is not what a webhook is for: events only
        rec = message.record
        key, when = rec.get("track_id"), rec.get("time")
        if self.cooldown > 0 and isinstance(key, int) and isinstance(when, int | float):
            last = self._last_post.get(key)
            if rec.get("type") == "end":
                self._last_post.pop(key, None)
            elif last is not None and when - last < self.cooldown:
                with self.lock:
                    self._given(message)
                    self.stats.dropped[COOLDOWN] += 1
                return
            else:
                self._last_post[key] = float(when)
        if self._closing:
            with self.lock:
                self._given(message)
                self.stats.dropped["sent after close"] += 1
            return
        self.backlog.put(message)

    def held(self) -> int:
        return len(self.backlog.items) + (self._sending is not None)

    def _deliver(self) -> None:
        ready = self.backlog.ready
        while True:
            with ready:
                while not self.backlog.items and not self._closing:
                    ready.wait(0.5)
                if not self.backlog.items or self._stop.is_set():
                    return
                message = self._sending = self.backlog.items.popleft()
            outcome = self._post(message)
            with ready:
                if self._sending is not message:
                    return  # close() gave up on it and counted it
                self._sending = None
                if outcome is None:
                    self.stats.published += 1
                    self.stats.state = "open"
                else:
                    self.stats.dropped[outcome] += 1
                ready.notify_all()

    def _post(self, message: Message) -> str | None:
        """POST with retries; None when delivered, else the cause it is dropped for."""
        delay = BACKOFF_FIRST
        cause = ""
        for attempt in range(self.retries + 1):
            if attempt:
                if self._stop.wait(delay):
                    return UNDELIVERED
                delay = min(delay * 2, BACKOFF_MAX)
            request = urllib.request.Request(self.url, data=message.payload, headers=self.headers, method="POST")
            try:
                with self._opener.open(request, timeout=self.timeout) as reply:
                    reply.read()
                return None
            except urllib.error.HTTPError as exc:
                cause = f"HTTP {exc.code}"
                if exc.code < 500 and exc.code not in _RETRIED_STATUS:
                    self._note(cause)
                    return f"refused: {cause}"
            except (urllib.error.URLError, OSError) as exc:  # refused, unreachable, timed out
                reason = getattr(exc, "reason", exc)
                cause = f"unreachable: {type(reason).__name__}"
            self._note(cause)
        return f"failed after {self.retries + 1} attempt(s): {cause}"

    def _note(self, cause: str) -> None:
        with self.lock:
            self.stats.state = "failing"
            if cause != self.stats.last_error:
                self.stats.last_error = cause
                log.warning("events: webhook '%s': %s (retrying with back-off)", self.stats.name, cause)

    def close(self) -> None:
        ready = self.backlog.ready
        with ready:
            self._closing = True
            ready.notify_all()
            self.backlog.drain(self.flush_timeout)
        self._stop.set()
        self._worker.join(timeout=self.timeout + 1.0)
        with ready:
            left = self.backlog.drop_all(UNDELIVERED)
            if self._sending is not None:  # still in its last attempt: the thread is a daemon
                self.stats.dropped[UNDELIVERED] += 1
                self._sending = None
                left += 1
            self.stats.state = "closed"
        if left:
            log.warning(
                "events: webhook '%s': %d event(s) not delivered within flush_timeout=%g s (counted as dropped)",
                self.stats.name,
                left,
                self.flush_timeout,
            )
        super().close()


__all__ = ["WebhookSink", "parse_headers", "shown_headers"]
