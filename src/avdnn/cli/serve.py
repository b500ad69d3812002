"""``avdnn serve``'s flags, and the argv parser the service is handed (the CLI's own, so a pipeline's
``{"args": [...]}`` means exactly what the same words mean on the command line).

    avdnn serve [--host 127.0.0.1] [--port 8080] [--token T | --no-auth] [--allow-host NAME]...
                [--state DIR] [--config FILE] [--media-root DIR] [--model-dir DIR] [--allow-listen]
                [--max-pipelines N] [--max-sources N] [--retry-interval S] [--stop-timeout S]
                [--ray ADDRESS] [--max-sources-per-node N] [--failover-timeout S]

Without a token given the service makes one, and this prints the page's URL with it once, to
stderr as it is (every other line there is redacted, that one is the user's key).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from avdnn import api
from avdnn._util.redact import RedactingStream
from avdnn.cli.args import run_kwargs
from avdnn.cli.parser import parse_args
from avdnn.errors import InvalidArgumentError

__all__ = ["USAGE", "jobs_from_argv", "run_command"]

USAGE = """usage: avdnn serve [--host 127.0.0.1] [--port 8080] [--token T | --no-auth] [--allow-host NAME]...
                   [--state DIR] [--config FILE] [--media-root DIR] [--model-dir DIR] [--allow-listen]
                   [--max-pipelines N] [--max-sources N] [--retry-interval S] [--stop-timeout S]
                   [--ray ADDRESS] [--max-sources-per-node N] [--failover-timeout S]

The long-running service: pipelines started, changed and stopped over REST (/api, the OpenAPI
page at /docs), live previews, /metrics for Prometheus, /healthz and /readyz.
  --host H             address to listen on (default 127.0.0.1; any other needs --token)
  --port P             port (default 8080)
  --token T            every request must carry "Authorization: Bearer T" (or set AVDNN_SERVE_TOKEN);
                       without it the service makes a token and prints the page's URL with it
  --no-auth            no token at all (loopback only): anyone on this machine drives the service
  --allow-host NAME    also answer requests for Host NAME or NAME:PORT (repeatable; the bound
                       address, localhost, 127.0.0.1 and [::1] always are)
  --state DIR          keep the pipelines' specs (and a token made) in DIR: they come back after a restart
  --config FILE        settings and pipelines to start, TOML or JSON (see docs/serve.md)
  --media-root DIR     every local path a pipeline reads or writes must resolve inside DIR
                       (default: the directory the service starts in); any other is a 403
  --model-dir DIR      models may also come from DIR (besides the zoo and the media root)
  --allow-listen       let inputs and outputs listen for a peer (?listen, -listen 1, mode=listener)
  --max-pipelines N    pipelines at once (default 16)
  --max-sources N      sources per pipeline (default 32)
  --retry-interval S   seconds between tries of an offline source (default 10)
  --stop-timeout S     seconds the pipelines get to stop on SIGTERM or DELETE (default 10)
  --ray ADDRESS        run the sources on the Ray cluster at HOST:PORT (auto: RAY_ADDRESS's), one
                       agent per node; this process is the API (needs avdnn[serve,ray] on every node)
  --max-sources-per-node N  sources one node runs at most (default: no limit but its room)
  --failover-timeout S seconds within which a lost node's sources run on the others (default 30)
Needs the serve extra: pip install 'avdnn[serve]'. See docs/serve.md.
"""


def jobs_from_argv(argv: Sequence[str]) -> list[api.Job]:
    """The output jobs of an ``avdnn`` command line (its global options that only print are ignored)."""
    args = parse_args(list(argv))
    if args.input is None:
        raise InvalidArgumentError("No input specified: use -i INPUT")
    if not args.outputs:
        raise InvalidArgumentError("At least one output file must be specified")
    given = [(out.filters, out.output or "", run_kwargs(out)) for out in args.outputs]
    return api.command_jobs(args.input, given)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="avdnn serve", add_help=False)
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--token")
    p.add_argument("--no-auth", action="store_true", default=None, dest="no_auth")
    p.add_argument("--allow-host", action="append", dest="allow_host")
    p.add_argument("--state")
    p.add_argument("--config")
    p.add_argument("--media-root", dest="media_root")
    p.add_argument("--model-dir", dest="model_dir")
    p.add_argument("--allow-listen", dest="allow_listen", action="store_true", default=None)
    p.add_argument("--max-pipelines", type=int, dest="max_pipelines")
    p.add_argument("--max-sources", type=int, dest="max_sources")
    p.add_argument("--retry-interval", type=float, dest="retry_interval")
    p.add_argument("--stop-timeout", type=float, dest="stop_timeout")
    p.add_argument("--ray")
    p.add_argument("--max-sources-per-node", type=int, dest="max_sources_per_node")
    p.add_argument("--failover-timeout", type=float, dest="failover_timeout")
    return p


def parse_flags(argv: Sequence[str]) -> argparse.Namespace:
    """The flags, or one avdnn error naming the bad one (argparse would print its own usage)."""
    parser = _parser()

    def refuse(message: str) -> None:
        raise InvalidArgumentError(f"avdnn serve: {message}")

    parser.error = refuse  # type: ignore[method-assign,assignment]
    return parser.parse_args(list(argv))


def run_command(argv: Sequence[str]) -> int:
    """Serve until SIGTERM/SIGINT (every pipeline stopped cleanly); 0 then."""
    flags = parse_flags(argv)
    from avdnn.serve import load_config, run_server  # BackendUnavailableError with the pip hint if missing

    settings = {k: v for k, v in vars(flags).items() if k != "config"}
    if settings.get("token") is None and not settings.get("no_auth"):
        settings["token"] = os.environ.get("AVDNN_SERVE_TOKEN") or None
    config = load_config(flags.config, **settings)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # the CLI's handler: every line redacted
        logger = logging.getLogger(name)
        logger.handlers[:] = list(logging.getLogger("avdnn").handlers)
        logger.setLevel(logging.getLogger("avdnn").level)
        logger.propagate = False
    run_server(config, jobs_from_argv, _announce)
    return 0


def _announce(url: str) -> None:
    """The page's URL, once, to stderr as it is: the one line that shows the token (it is the user's key)."""
    stream = sys.stderr.stream if isinstance(sys.stderr, RedactingStream) else sys.stderr
    stream.write(f"avdnn serve: the web page and the API are at {url}\n")
    stream.flush()
