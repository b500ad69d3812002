"""The service's token: the one given, or one it makes (kept in ``--state`` so a restart keeps it).

Without ``--token`` (or ``AVDNN_SERVE_TOKEN``) the service is not open: it makes a random token
(``secrets.token_urlsafe``, 256 bits) and the command prints the page's URL with it once, as
Jupyter does. With ``--state DIR`` the token is kept in ``DIR/token`` (``0600``, written
atomically: a temporary file in the same directory, synced, renamed over, the directory synced),
so a restart keeps the URL a user bookmarked and the scripts that read the file. ``--no-auth``
makes none.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from avdnn.errors import from_errno
from avdnn.serve.config import ServeConfig

__all__ = ["TOKEN_FILE", "Token", "service_token"]

log = logging.getLogger("avdnn.serve")

#: the file in the state directory that keeps a token the service made
TOKEN_FILE = "token"


@dataclass(frozen=True)
class Token:
    """The token the gate checks (None: ``--no-auth``), and whether the service made it (so it prints it)."""

    value: str | None
    made: bool


def service_token(config: ServeConfig) -> Token:
    """The given token, none with ``no_auth``, else the one kept in ``config.state`` or a new one."""
    if config.no_auth:
        return Token(None, made=False)
    if config.token is not None:
        return Token(config.token, made=False)
    if config.state is None:
        return Token(secrets.token_urlsafe(32), made=True)
    return Token(_kept(Path(config.state) / TOKEN_FILE), made=True)


def _kept(path: Path) -> str:
    """The token in ``path``, or a new one written there (0600) when it has none."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise from_errno(
            getattr(exc, "errno", None) or errno.EIO, "cannot read the kept token", file=str(path)
        ) from exc
    if text and text.isascii() and text.isprintable() and " " not in text:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)  # whoever made it wider: the token is a password
        return text
    token = secrets.token_urlsafe(32)
    try:
        _write(path, token)
    except OSError as exc:
        raise from_errno(exc.errno or errno.EIO, exc.strerror, file=str(path)) from exc
    log.info("avdnn serve: a new token kept in %s", path)
    return token


def _write(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".token.", suffix=".tmp", dir=path.parent)  # made 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(token + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
