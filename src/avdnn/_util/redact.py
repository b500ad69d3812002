"""Credentials out of URLs before anything is printed: one function for every place a URL is shown.

Camera URLs carry passwords (``rtsp://admin:secret@10.0.0.5/stream``), SRT URLs passphrases,
signed HTTP URLs tokens. avdnn shows every URL through :func:`redact_url`: the password of
the user info becomes ``***`` (a user name alone, often a token, becomes ``***`` too), and so
does the value of every query parameter whose name says it is a secret (``passphrase``,
``password``, ``token``, ``key``, ``sig``...). The host, port, path and the other parameters
stay, so the line still says which input it is about. The URL itself, as given, is what
libavformat opens; only what is shown is redacted.

Errors (:class:`avdnn.errors.AvdnnError`) redact their message and file on construction, the
CLI's log handler redacts every log line (:class:`RedactFilter`, libavformat's own lines too),
and the banner and progress lines take the redacted name.
"""

from __future__ import annotations

import logging
import re

__all__ = ["MASK", "RedactFilter", "redact_text", "redact_url"]

MASK = "***"

#: A URL inside free text: scheme://, then anything up to white space or a quote.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
#: Query parameter names whose values are secrets (compared lower-cased).
_SECRET_NAMES = frozenset({"auth", "sig", "key", "api_key", "apikey", "pkey", "session"})
_SECRET_PARTS = ("pass", "pwd", "secret", "token", "signature", "credential")


def _secret(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_NAMES or any(part in low for part in _SECRET_PARTS)


def _param(pair: str) -> str:
    name, eq, value = pair.partition("=")
    return f"{name}={MASK}" if eq and value and _secret(name) else pair


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``***`` (anything without ``://`` is returned as is).

    The user info ends at the last ``@`` before the path, as libavformat's av_url_split reads it.

    >>> redact_url("rtsp://admin:secret@10.0.0.5:554/h264?channel=1")
    'rtsp://admin:***@10.0.0.5:554/h264?channel=1'
    >>> redact_url("srt://host:9000?mode=caller&passphrase=0123456789")
    'srt://host:9000?mode=caller&passphrase=***'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    ends = [k for k in (rest.find("/"), rest.find("?"), rest.find("#")) if k >= 0]
    end = min(ends) if ends else len(rest)
    authority, tail = rest[:end], rest[end:]
    at = authority.rfind("@")
    if at >= 0:
        user, colon, _ = authority[:at].partition(":")
        authority = (f"{user}:{MASK}" if colon else MASK) + authority[at:]
    q = tail.find("?")
    if q >= 0:
        frag = tail.find("#", q)
        query = tail[q + 1 : frag] if frag >= 0 else tail[q + 1 :]
        tail = tail[: q + 1] + "&".join(_param(p) for p in query.split("&")) + (tail[frag:] if frag >= 0 else "")
    return scheme + sep + authority + tail


#: An HTTP request header with credentials, as libavformat's http logs its requests at debug level.
_AUTH_HEADER = re.compile(r"((?:Proxy-)?Authorization:\s*)[^\r\n]+", re.IGNORECASE)


def redact_text(text: str) -> str:
    """Every URL inside ``text`` redacted (:func:`redact_url`), and any ``Authorization:`` header value."""
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    if "uthorization:" in text:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    return text


class RedactFilter(logging.Filter):
    """A handler filter that redacts the URLs of every record it lets through (libavformat's too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_text(message)
        if redacted is not message:
            record.msg, record.args = redacted, None
        return True
