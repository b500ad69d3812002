"""uvicorn in this process: the app served until SIGTERM or SIGINT, then every pipeline stopped cleanly.

On the signal the service is marked stopping at once (previews end their streams, new pipelines
are refused), uvicorn stops accepting and gives open requests ``GRACE`` seconds, and the app's
lifespan stops every pipeline within ``stop_timeout`` (outputs finished, trailers written).

Once it listens, the server hands ``announce`` the page's URL on the port it got, with
``?token=...`` when the service made its token (the command prints it once, as Jupyter does).
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable
from types import FrameType

import uvicorn

from avdnn.errors import IOFailureError
from avdnn.serve.app import create_app
from avdnn.serve.config import ServeConfig
from avdnn.serve.pipeline import CommandParser
from avdnn.serve.security import check_bind
from avdnn.serve.service import Service

__all__ = ["GRACE", "Announce", "make_server", "page_url", "run_server"]

log = logging.getLogger("avdnn.serve")

#: seconds open requests (a preview stream) get after the signal before they are cut
GRACE = 2

#: what is told the page's URL once the server listens (the CLI prints it)
Announce = Callable[[str], None]


def page_url(host: str, port: int, token: str | None = None) -> str:
    """The web page's URL on ``host:port`` (a wildcard address as loopback), with ``?token=`` when given."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/" + (f"?token={token}" if token is not None else "")


class _Server(uvicorn.Server):
    """uvicorn's server, telling the service it is stopping as soon as the signal arrives."""

    def __init__(self, config: uvicorn.Config, service: Service) -> None:
        super().__init__(config)
        self.service = service
        self.announce: Announce | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.announce is not None:
            port = next((s.getsockname()[1] for srv in self.servers for s in srv.sockets), self.config.port)
            host = self.service.config.host
            self.announce(page_url(host, port, self.service.token if self.service.token_made else None))

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.service.stopping.set()
        super().handle_exit(sig, frame)


def _stopped(sig: int, frame: FrameType | None) -> None:
    """The signal uvicorn raises again after its shutdown: the service has stopped already."""


def make_server(config: ServeConfig, parser: CommandParser | None = None) -> _Server:
    """The server for ``config`` (its bind checked first), not started: ``.run()`` serves."""
    check_bind(config.host, config.token, config.no_auth)
    if config.no_auth:
        log.warning("avdnn serve: --no-auth: no token; every user and program of this machine can drive the service")
    service = Service(config, parser)
    service.nodes.join()  # a cluster that is not there: its one-line error now, not a server that cannot start
    app = create_app(service)
    uv = uvicorn.Config(
        app,
        host=config.host,
        port=config.port,
        log_config=None,  # the CLI's handlers (with their redaction) are used as they are
        lifespan="on",
        timeout_graceful_shutdown=GRACE,
        server_header=False,
    )
    return _Server(uv, service)


def run_server(config: ServeConfig, parser: CommandParser | None = None, announce: Announce | None = None) -> None:
    """Serve until SIGTERM/SIGINT; returns once every pipeline has stopped (the process exits 0).
    ``announce`` is told the page's URL once the server listens."""
    server = make_server(config, parser)
    server.announce = announce
    # uvicorn raises the signal it caught again once it has shut down, under the handler it found:
    # this one, so that a clean stop returns here instead of killing the process
    before = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    except SystemExit as exc:  # uvicorn exits when it cannot listen (it logged why)
        raise IOFailureError(f"could not serve on {config.host}:{config.port}") from exc
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    if not server.started:
        raise IOFailureError(f"could not serve on {config.host}:{config.port}")
