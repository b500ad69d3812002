"""The service's settings: the command line's flags, a ``--config`` file, and their defaults.

A config file is TOML (or JSON, by its extension): the flags' names as keys (``host``, ``port``,
``token``, ``no_auth``, ``allow_host``, ``state``, the limits and timings below) and
``[[pipelines]]`` entries, each a body ``POST /api/pipelines`` takes, started when the service
starts. A flag given on the command line wins over the file.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from avdnn.errors import InvalidArgumentError, NotFoundError
from avdnn.serve.hosts import split_host

__all__ = ["MAX_HISTORY", "ServeConfig", "load_config"]

#: the most seconds of per-source history a service keeps (an hour: 3600 samples a source)
MAX_HISTORY = 3600


@dataclass
class ServeConfig:
    """Where the service listens, what it allows, and how it keeps its sources up."""

    host: str = "127.0.0.1"
    port: int = 8080
    #: the bearer token every request must carry (None: the service makes one; given: required beyond loopback)
    token: str | None = None
    #: no token at all (loopback binds only): every local user and program drives the service
    no_auth: bool = False
    #: Host header names admitted besides the bound address, localhost, 127.0.0.1 and [::1] (NAME or NAME:PORT)
    allow_host: list[str] = field(default_factory=list)
    #: seconds a web page's session cookie lasts (12 h), from its sign-in
    session_ttl: float = 12 * 3600.0
    #: where pipeline specs are kept, so that they come back after a restart (None: nowhere)
    state: Path | None = None
    max_pipelines: int = 16
    #: sources of one pipeline
    max_sources: int = 32
    #: bytes of one request body
    max_body: int = 64 * 1024
    #: seconds between two tries of an offline source
    retry_interval: float = 10.0
    #: seconds without a frame from its input after which a running source shows as ``reconnecting``
    stall_after: float = 3.0
    #: seconds without a frame after which a source's run is stopped and started again (Frigate's 20 s)
    watchdog: float = 20.0
    #: seconds a network output whose peer went away waits before it is reconnected, doubling up to retry_interval
    backoff: float = 0.5
    #: seconds every pipeline gets to stop (SIGTERM, DELETE) before its threads are left behind
    stop_timeout: float = 10.0
    #: the live preview's frame rate when the request gives none, and its cap
    preview_fps: float = 5.0
    preview_max_fps: float = 30.0
    #: events each ``/api/events`` client may have waiting; a slower client loses the oldest
    events_queue: int = 256
    #: seconds of per-source samples (one a second) kept for GET .../history and the page's charts
    history: int = 300
    #: the folder every local path of a served pipeline resolves inside (None: the directory it starts in)
    media_root: Path | None = None
    #: a second folder models may come from (besides the zoo and the media root)
    model_dir: Path | None = None
    #: inputs and outputs may listen for a peer (``?listen``, ``-listen 1``, srt ``mode=listener``)
    allow_listen: bool = False
    #: departed sources of a pipeline shown one by one; older ones are folded into one row
    keep_departed: int = 32
    #: ``/api/events`` streams open at once, and MJPEG previews (``preview.mjpg``); more: 503
    max_event_clients: int = 32
    max_viewers: int = 32
    #: run the sources on a Ray cluster: its address (``HOST:PORT``, or ``auto``: ``RAY_ADDRESS``'s); None: here
    ray: str | None = None
    #: sources one node runs at most (None: no limit but its room)
    max_sources_per_node: int | None = None
    #: seconds within which the sources of a node (or agent) that died are running on the others
    failover_timeout: float = 30.0
    #: pipelines started with the service (bodies of POST /api/pipelines), from --config
    pipelines: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        ints = ("max_pipelines", "max_sources", "max_body", "events_queue", "port", "keep_departed")
        for name in (*ints, "max_event_clients", "max_viewers"):
            if getattr(self, name) < (0 if name == "port" else 1):
                raise InvalidArgumentError(f"Invalid {name} {getattr(self, name)}", option=name)
        if isinstance(self.history, bool) or not isinstance(self.history, int) or not 1 <= self.history <= MAX_HISTORY:
            raise InvalidArgumentError(f"Invalid history {self.history}: 1 to {MAX_HISTORY} seconds", option="history")
        if self.max_sources_per_node is not None and (
            isinstance(self.max_sources_per_node, bool) or self.max_sources_per_node < 1
        ):
            raise InvalidArgumentError(
                f"Invalid max_sources_per_node {self.max_sources_per_node}", option="max_sources_per_node"
            )
        if self.ray is not None and (not isinstance(self.ray, str) or not self.ray.strip()):
            raise InvalidArgumentError("--ray takes a cluster's address: HOST:PORT or auto", option="ray")
        names = ("retry_interval", "stall_after", "watchdog", "backoff", "stop_timeout", "preview_fps")
        for name in (*names, "failover_timeout"):
            if not getattr(self, name) > 0:
                raise InvalidArgumentError(f"Invalid {name} {getattr(self, name)}: more than 0", option=name)
        if self.token is not None and not self.token.strip():
            raise InvalidArgumentError("an empty --token protects nothing", option="token")
        if not self.session_ttl > 0:
            raise InvalidArgumentError(f"Invalid session_ttl {self.session_ttl}: more than 0", option="session_ttl")
        if self.no_auth and self.token is not None:
            raise InvalidArgumentError("--no-auth and --token contradict each other: give one", option="no_auth")
        if isinstance(self.allow_host, str) or not all(isinstance(h, str) for h in self.allow_host):
            raise InvalidArgumentError("allow_host is a list of host names", option="allow_host")
        for entry in self.allow_host:
            split = split_host(entry)
            if split is None or not split[0]:
                raise InvalidArgumentError(
                    f"Invalid --allow-host '{entry}': a host name, or NAME:PORT", option="allow_host"
                )
        self.allow_host = list(self.allow_host)
        if self.state is not None:
            self.state = Path(self.state)
        self.media_root = Path(os.path.realpath(self.media_root if self.media_root is not None else os.getcwd()))
        self.model_dir = Path(os.path.realpath(self.model_dir)) if self.model_dir is not None else None
        for name in ("media_root", "model_dir"):
            folder = getattr(self, name)
            if folder is not None and not folder.is_dir():
                raise InvalidArgumentError(f"Invalid {name} '{folder}': not a folder", option=name)


def load_config(path: str | os.PathLike[str] | None, **given: Any) -> ServeConfig:
    """The settings of ``path`` (TOML or JSON) under ``given`` (the flags set on the command line)."""
    values: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError("No such file or directory", file=str(p)) from None
        try:
            values = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise InvalidArgumentError(f"not a valid config file: {exc}", file=str(p)) from None
        known = {f.name for f in fields(ServeConfig)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidArgumentError(
                f"unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})", file=str(p)
            )
    values.update({k: v for k, v in given.items() if v is not None})
    try:
        return ServeConfig(**values)
    except TypeError as exc:
        raise InvalidArgumentError(f"bad settings: {exc}") from None
