"""The Host header checked on every request, before the token: no DNS-rebinding page drives (or probes) the service.

A web page on ``rebind.attacker.example`` can make its own name resolve to 127.0.0.1 and then
send requests to the service from the victim's browser: same origin for the browser, so no CORS
stops them, but the browser still sends ``Host: rebind.attacker.example:PORT``. The service
answers only the names it is reached by: the address it is bound to, ``localhost``,
``127.0.0.1``, ``[::1]``, and each ``--allow-host NAME`` (its own names when it is bound to
``0.0.0.0`` or ``::``, which no browser sends; a reverse proxy's). A name is admitted without a
port or with the port the request came in on (the bound one); ``--allow-host NAME:PORT`` admits
that port as well (a proxy on another port that passes the Host on). Anything else, and no Host
at all over HTTP/1.1, is a 400, on every path, ``/healthz`` and ``/readyz`` included.
"""

from __future__ import annotations

import errno
import ipaddress
from collections.abc import Iterable

from avdnn.errors import AVERROR
from avdnn.serve.security import ASGIApp, Receive, Scope, Send, reply

__all__ = ["LOCAL_NAMES", "HostCheck", "host_name", "split_host"]

#: the names every service answers to
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")


def host_name(name: str) -> str:
    """``name`` as a Host header writes it: lower case, no trailing dot, an IPv6 address in brackets."""
    name = name.strip().lower().rstrip(".")
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return name
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def split_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a Host header value (port None when absent); None when it is malformed."""
    value = value.strip()
    if not value or any(c.isspace() or c in "/\\@?#" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text_or_empty = value.partition(":")
        if ":" in port_text_or_empty:
            return None  # an IPv6 address without its brackets
        port_text = port_text_or_empty if sep else None
    if port_text is None:
        return host_name(name), None
    if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5 or int(port_text) > 65535:
        return None
    return host_name(name), int(port_text)


def _allowed(bound: str, extra: Iterable[str]) -> tuple[frozenset[str], frozenset[tuple[str, int]]]:
    names = {host_name(n) for n in (*LOCAL_NAMES, bound)}
    pairs: set[tuple[str, int]] = set()
    for entry in extra:
        split = split_host(entry)
        if split is None:
            continue  # refused by ServeConfig already
        name, port = split
        if port is None:
            names.add(name)
        else:
            pairs.add((name, port))
    return frozenset(names), frozenset(pairs)


class HostCheck:
    """400 for a request whose Host is not one of the service's own names (or that has none over HTTP/1.1)."""

    def __init__(self, app: ASGIApp, bound: str, allow: Iterable[str] = ()) -> None:
        self.app = app
        self.names, self.pairs = _allowed(bound, allow)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not self._admitted(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await reply(
                send, 400, "this service does not answer to that Host (see --allow-host)", code=AVERROR(errno.EINVAL)
            )
            return
        await self.app(scope, receive, send)

    def _admitted(self, scope: Scope) -> bool:
        values = [bytes(v) for k, v in scope.get("headers", []) if k == b"host"]
        if not values:
            return scope.get("http_version") == "1.0"  # HTTP/1.0 may go without; 1.1 must send one
        if len(values) > 1:
            return False
        try:
            split = split_host(values[0].decode("ascii"))
        except UnicodeDecodeError:
            return False
        if split is None:
            return False
        name, port = split
        if port is None:
            return name in self.names
        server = scope.get("server")
        here = server[1] if isinstance(server, tuple | list) and len(server) > 1 else None
        return (name in self.names and port == here) or (name, port) in self.pairs
