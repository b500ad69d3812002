"""Safe by default: loopback unless a token is set, a bearer token checked in constant time, bounded bodies.

* :func:`check_bind`: an address other than loopback (``127.0.0.0/8``, ``::1``, ``localhost``) is
  refused without a token: a service that runs command lines must not be open to a network;
* :class:`TokenGate`: with a token, every request but ``/healthz`` and ``/readyz`` (which tell
  nothing but "up") and the web page's static files (``/``, ``/ui/...``: code, no data) carries
  ``Authorization: Bearer TOKEN`` or the page's session cookie, each compared with
  :func:`hmac.compare_digest`; anything else is a 401. A browser's ``EventSource`` and ``<img>``
  cannot send a header: the page trades the token for the cookie once (``POST /api/session`` with
  the header), an ``HttpOnly``, ``SameSite=Strict`` cookie holding an HMAC of the token (never the
  token, never in a URL, so never in a log or the browser's history);
* :class:`BodyLimit`: a request body over ``max_body`` bytes is a 413, whether it says its length
  or streams it.

Both are plain ASGI middleware, so they cover every route, ``/metrics`` and the OpenAPI pages too.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from avdnn.errors import InvalidArgumentError

__all__ = [
    "COOKIE",
    "OPEN_PATHS",
    "OPEN_PREFIXES",
    "BodyLimit",
    "TokenGate",
    "check_bind",
    "is_loopback",
    "session_value",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: paths that need no token: they answer only whether the service is up, or are the page's static code
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/"})
OPEN_PREFIXES = ("/ui/",)
#: the web page's session cookie (set by POST /api/session)
COOKIE = "avdnn_session"


def session_value(token: str) -> str:
    """What the session cookie holds for ``token``: an HMAC of it, so the cookie never is the token."""
    return hmac.new(token.encode(), b"avdnn serve session", hashlib.sha256).hexdigest()


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one."""
    name = host.strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses)


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token."""
    if token is None and not is_loopback(host):
        raise InvalidArgumentError(
            f"refusing to listen on '{host}' without --token: beyond loopback every request must carry "
            "a bearer token (avdnn serve --host HOST --token TOKEN)",
            option="host",
        )


async def _reply(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


class TokenGate:
    """401 for a request without ``Authorization: Bearer <token>`` or the session cookie (open paths excepted)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()
        self._session = session_value(token).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope.get("headers", [])):
            await _reply(send, 401, "a bearer token is required", [(b"www-authenticate", b'Bearer realm="avdnn"')])
            return
        await self.app(scope, receive, send)

    def _allowed(self, headers: list[tuple[bytes, bytes]]) -> bool:
        bearer, cookies = b"", []
        for name, value in headers:
            if name == b"authorization" and not bearer:
                bearer = bytes(value)
            elif name == b"cookie":
                cookies.append(bytes(value))
        scheme, _, credential = bearer.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self._token):
            return True
        prefix = COOKIE.encode() + b"="
        for header in cookies:
            for part in header.split(b";"):
                part = part.strip()
                if part.startswith(prefix) and hmac.compare_digest(part[len(prefix) :], self._session):
                    return True
        return False


class BodyLimit:
    """413 for a request body over ``limit`` bytes."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.limit + 1
                if declared > self.limit:
                    await _reply(send, 413, f"the request body is over {self.limit} bytes")
                    return
        if not any(name == b"content-length" for name, _ in scope.get("headers", [])):
            replay = await self._buffered(receive)
            if replay is None:
                await _reply(send, 413, f"the request body is over {self.limit} bytes")
                return
            receive = replay
        await self.app(scope, receive, send)

    async def _buffered(self, receive: Receive) -> Receive | None:
        """A streamed body read whole (up to the limit) and handed on as one message; None: too large."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                return None
            if not message.get("more_body", False):
                first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        given = False

        async def replay() -> Message:
            nonlocal given
            if not given:
                given = True
                return first
            return await receive()

        return replay
