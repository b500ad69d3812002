"""Safe by default: a token on every request, loopback unless a token is given, bounded bodies.

* :func:`check_bind`: an address other than loopback (``127.0.0.0/8``, ``::1``, ``localhost``) is
  refused without a token given (``--token``): a service that runs command lines must not be
  open to a network on a token nobody chose; ``--no-auth`` is refused there too;
* :class:`TokenGate`: every request but ``/healthz`` and ``/readyz`` (which tell nothing but
  "up") and the web page's static files (``/``, ``/ui/...``: code, no data) carries
  ``Authorization: Bearer TOKEN`` (compared with :func:`hmac.compare_digest`) or a live session
  cookie of the page (:mod:`avdnn.serve.sessions`); anything else is a 401. The token is the one
  given, or one the service made (:mod:`avdnn.serve.tokens`); only ``--no-auth`` goes without;
* :class:`BodyLimit`: a request body over ``max_body`` bytes is a 413, whether it says its length
  or streams it.

They are plain ASGI middleware, as is the Host check before them (:mod:`avdnn.serve.hosts`), so
they cover every route, ``/metrics`` and the OpenAPI pages too. Their refusals are the service's
error model, ``{"detail": "<one line>", "code": <AVERROR>}``.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from avdnn.errors import AVERROR, InvalidArgumentError
from avdnn.serve.sessions import Sessions

__all__ = [
    "COOKIE",
    "OPEN_PATHS",
    "OPEN_PREFIXES",
    "BodyLimit",
    "TokenGate",
    "check_bind",
    "cookie_session",
    "is_loopback",
    "reply",
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


def check_bind(host: str, token: str | None, no_auth: bool = False) -> None:
    """Refuse to listen beyond loopback without a token given, and ``--no-auth`` anywhere but loopback."""
    if no_auth and not is_loopback(host):
        raise InvalidArgumentError(
            f"refusing --no-auth on '{host}': without a token only a loopback address may be served "
            "(avdnn serve --host 127.0.0.1 --no-auth)",
            option="no_auth",
        )
    if token is None and not is_loopback(host):
        raise InvalidArgumentError(
            f"refusing to listen on '{host}' without --token: beyond loopback every request must carry "
            "a bearer token (avdnn serve --host HOST --token TOKEN)",
            option="host",
        )


async def reply(
    send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None, *, code: int
) -> None:
    """Answer ``{"detail": detail, "code": code}`` with ``status`` from a middleware."""
    body = json.dumps({"detail": detail, "code": code}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def cookie_session(headers: list[tuple[bytes, bytes]]) -> list[str]:
    """The values of the session cookie among a request's ``Cookie`` headers."""
    prefix = COOKIE.encode() + b"="
    found = []
    for name, value in headers:
        if name != b"cookie":
            continue
        for part in bytes(value).split(b";"):
            part = part.strip()
            if part.startswith(prefix):
                found.append(part[len(prefix) :].decode("latin-1"))
    return found


class TokenGate:
    """401 for a request without ``Authorization: Bearer <token>`` or a live session cookie (open paths excepted)."""

    def __init__(self, app: ASGIApp, token: str, sessions: Sessions) -> None:
        self.app = app
        self._token = token.encode()
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope.get("headers", [])):
            await reply(
                send,
                401,
                "a bearer token is required",
                [(b"www-authenticate", b'Bearer realm="avdnn"')],
                code=AVERROR(errno.EACCES),
            )
            return
        await self.app(scope, receive, send)

    def _allowed(self, headers: list[tuple[bytes, bytes]]) -> bool:
        bearer = next((bytes(value) for name, value in headers if name == b"authorization"), b"")
        scheme, _, credential = bearer.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self._token):
            return True
        return any(self._sessions.valid(sid) for sid in cookie_session(headers) if sid)


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
                    await reply(send, 413, f"the request body is over {self.limit} bytes", code=AVERROR(errno.E2BIG))
                    return
        if not any(name == b"content-length" for name, _ in scope.get("headers", [])):
            replay = await self._buffered(receive)
            if replay is None:
                await reply(send, 413, f"the request body is over {self.limit} bytes", code=AVERROR(errno.E2BIG))
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
