"""Safe by default: loopback unless a token is set, a bearer token checked in constant time, bounded bodies.

* :func:`check_bind`: an address other than loopback (``127.0.0.0/8``, ``::1``, ``localhost``) is
  refused without a token: a service that runs command lines must not be open to a network;
* :class:`TokenGate`: with a token, every request but ``/healthz`` and ``/readyz`` (which tell
  nothing but "up") carries ``Authorization: Bearer TOKEN``, compared with
  :func:`hmac.compare_digest`; anything else is a 401;
* :class:`BodyLimit`: a request body over ``max_body`` bytes is a 413, whether it says its length
  or streams it.

Both are plain ASGI middleware, so they cover every route, ``/metrics`` and the OpenAPI pages too.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from avdnn.errors import InvalidArgumentError

__all__ = ["OPEN_PATHS", "BodyLimit", "TokenGate", "check_bind", "is_loopback"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: paths that need no token: they answer only whether the service is up
OPEN_PATHS = frozenset({"/healthz", "/readyz"})


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
    """401 for a request without ``Authorization: Bearer <token>`` (paths in OPEN_PATHS excepted)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                given = bytes(value)
                break
        scheme, _, credential = given.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(credential.strip(), self._token):
            await _reply(send, 401, "a bearer token is required", [(b"www-authenticate", b'Bearer realm="avdnn"')])
            return
        await self.app(scope, receive, send)


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
