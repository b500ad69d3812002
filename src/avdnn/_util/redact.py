"""Credentials out of anything printed: one function for every place a URL, a header or a key is shown.

Camera URLs carry passwords (``rtsp://admin:secret@10.0.0.5/stream``), SRT URLs passphrases and
session ids (``streamid=#!::r=live,s=SESSION``), signed HTTP URLs tokens (``X-Amz-Signature``,
``sig``, ``auth_key``), and ``-headers`` ``Authorization:``, ``Cookie:`` or ``X-Api-Key:`` lines.
avdnn shows every URL through :func:`redact_url`: the password of the user info becomes ``***``
(a user name alone, often a token, becomes ``***`` too), and so does the value of every query
parameter whose name says it is a secret (:func:`is_secret_name`). The host, port, path and the
other parameters stay, so the line still says which input it is about. The URL itself, as given,
is what libavformat opens; only what is shown is redacted. :func:`redact_text` does the same
inside free text, where libavformat's own lines show a request (``GET /x.ts?token=...``) or its
headers.

Where it is applied, so that nothing needs to remember it:

* errors (:class:`avdnn.errors.AvdnnError`) redact their message and file whenever they are set;
* every log record of the ``avdnn`` and ``libav`` loggers and their children is redacted when it
  is made (:func:`install`, run at ``import avdnn``), so any handler an API user adds shows the
  redacted text, tracebacks included;
* the CLI writes stderr through :class:`RedactingStream` (its summary, failure and internal-error
  lines and tracebacks do not go through logging).
"""

from __future__ import annotations

import io
import logging
import re
import threading
import traceback
from typing import Any, TextIO

__all__ = [
    "MASK",
    "URL_IN_TEXT",
    "RedactFilter",
    "RedactingStream",
    "install",
    "is_secret_name",
    "redact_record",
    "redact_streamid",
    "redact_text",
    "redact_url",
]

MASK = "***"

#: A URL inside free text: scheme://, its authority up to white space or the path (a quote there
#: may be part of a password: ``rtsp://u:p'w@h``), then anything up to white space or a quote.
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#]*[^\s'\"<>]*")
#: Parameter and header names that are secrets whole (compared lower-cased, ``-`` read as ``_``).
_SECRET_NAMES = frozenset(
    {
        "key",
        "apikey",
        "pkey",
        "streamkey",
        "accesskey",
        "authkey",
        "secretkey",
        "privatekey",
        "auth",
        "sig",
        "session",
        "sessionid",
        "sid",
        "jwt",
        "cookie",
        "set_cookie",
        "hdnts",
        "hdnea",
        "policy",
        "authorization",
        # FFmpeg's options whose value is a secret though no part of their name says so: http's
        # -headers and -cookies lists, SRTP's key material, the RTMP connection parameters (auth
        # tokens ride in them) and a publishing stream key, Audible's activation bytes, a PEM key
        "headers",
        "cookies",
        "srtp_in_params",
        "srtp_out_params",
        "cryptokey",
        "rtmp_conn",
        "rtmp_playpath",
        "activation_bytes",
        "key_pem",
    }
)
#: Parts that make a name a secret wherever they appear in it.
_SECRET_PARTS = ("pass", "pwd", "secret", "token", "signature", "credential", "auth_", "_key", "session_")
#: Prefixes of signed-URL parameters (AWS SigV4, Google Cloud Storage V4): all of them are masked.
_SECRET_PREFIXES = ("x_amz_", "x_goog_")


def is_secret_name(name: str) -> bool:
    """Whether a query parameter, option or header called ``name`` holds a secret.

    ``passphrase``, ``password``, ``token``, ``sig``, ``signature``, ``auth_key``, ``access_key``,
    ``X-Api-Key`` and every ``X-Amz-*``: true; ``channel``, ``pkt_size``, ``mode`` and filter
    names such as ``colorkey``: false.
    """
    low = name.strip().lower().replace("-", "_")
    return low in _SECRET_NAMES or low.startswith(_SECRET_PREFIXES) or any(part in low for part in _SECRET_PARTS)


def redact_streamid(value: str) -> str:
    """SRT's access-control streamid (``#!::r=live,s=SESSION,u=user``) with its session and any
    secret-named field masked; a plain streamid is a name, kept."""
    if not value.startswith("#!::"):
        return value
    fields = []
    for field in value[4:].split(","):
        key, eq, val = field.partition("=")
        fields.append(f"{key}={MASK}" if eq and val and (key.strip() == "s" or is_secret_name(key)) else field)
    return "#!::" + ",".join(fields)


def _param(pair: str) -> str:
    name, eq, value = pair.partition("=")
    if not eq or not value:
        return pair
    if name.strip().lower() == "streamid":
        return f"{name}={redact_streamid(value)}"
    return f"{name}={MASK}" if is_secret_name(name) else pair


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``***`` (anything without ``://`` is returned as is).

    The user info ends at the last ``@`` before the path, as libavformat's av_url_split reads it
    (and as :func:`urllib.parse.urlsplit` does). Everything after the first ``?`` is the query,
    ``#`` included: libavformat has no fragments, and an SRT streamid starts with ``#!::``.

    >>> redact_url("rtsp://admin:secret@10.0.0.5:554/h264?channel=1")
    'rtsp://admin:***@10.0.0.5:554/h264?channel=1'
    >>> redact_url("srt://host:9000?mode=caller&passphrase=0123456789&streamid=#!::r=live,s=42")
    'srt://host:9000?mode=caller&passphrase=***&streamid=#!::r=live,s=***'
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
        tail = tail[: q + 1] + "&".join(_param(p) for p in tail[q + 1 :].split("&"))
    return scheme + sep + authority + tail


#: A request header with a secret, as ``-headers`` gives them and libavformat's http logs them at
#: debug level: its value runs to the end of the line (a real CR/LF or a shown ``\r``/``\n``).
_HEADER = re.compile(r"(?:(?<![\w-])|(?<=\\[rn]))([A-Za-z][A-Za-z0-9-]*)(:[ \t]*)((?:(?!\\r|\\n)[^\r\n'\"])+)")
_HEADER_NAMES = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
#: ``name=value`` outside a URL (a request line ``GET /x.ts?token=...``, an option list): the
#: value runs to white space, ``&``, a quote or a ``:``/``,`` separator.
_PAIR = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)(\\?=)((?:'[^'\n]*'|\\[^\s]|[^\s&'\"<>:,;\\])+)")
_STREAMID = re.compile(r"(?i)(streamid=)(#!::[^\s&'\"<>]*)")


#: A header list or credential option whose value may hold spaces and ``=`` (``headers=Authorization=
#: Bearer X|X-Api-Key=Y``, ``cookies=a=1; b=2``): outside a URL its value runs to the end of the option
#: (an unescaped ``:``, a quote, the end of the line).
_LINE_PAIR = re.compile(
    r"(?i)(?<![\w.-])(headers|cookies?|set[_-]cookie|authorization|proxy[_-]authorization)(\\?=)(?!\*\*\*)"
    r"((?:'[^']*'|\\.|[^\r\n'\":\\])+)"
)
#: ``-option value`` as an argv shows it in free text (``-decryption_key 0a1b``, a list's repr
#: ``'-passphrase', 'x'``): the word after an option with a secret name.
_ARG = re.compile(r"(?<![\w-])-([A-Za-z][\w-]*)((?::[^\s'\"]*)?['\"]?,?[ \t]+['\"]?)([^\s'\"]+)")


def _pair(m: re.Match[str]) -> str:
    """``name=***`` for a secret name; else the pair with the pairs inside its value looked at."""
    if is_secret_name(m.group(1)):
        return m.group(1) + m.group(2) + MASK
    return m.group(1) + m.group(2) + _PAIR.sub(_pair, m.group(3))


def _header(m: re.Match[str]) -> str:
    name = m.group(1).lower()
    secret = name in _HEADER_NAMES or ("-" in name and is_secret_name(name))
    return m.group(1) + m.group(2) + MASK if secret else m.group(0)


def redact_text(text: str) -> str:
    """``text`` with every URL redacted (:func:`redact_url`), and outside URLs every secret header
    value (``Authorization: ***``) and secret ``name=value`` (``token=***``)."""
    if "://" in text:
        text = URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    if ":" in text:
        text = _HEADER.sub(_header, text)
    if "=" in text:
        text = _STREAMID.sub(lambda m: m.group(1) + redact_streamid(m.group(2)), text)
        text = _LINE_PAIR.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
        text = _PAIR.sub(_pair, text)
    if "-" in text:
        text = _ARG.sub(
            lambda m: "-" + m.group(1) + m.group(2) + MASK if is_secret_name(m.group(1)) else m.group(0), text
        )
    return text


# -- logging ----------------------------------------------------------------------------------

#: The logger trees whose records are redacted: avdnn's own, and libav's lines (PyAV's callback
#: logs them as ``libav.<component>``).
LOGGERS = ("avdnn", "libav")


def _ours(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in LOGGERS)


def redact_record(record: logging.LogRecord) -> None:
    """The record's message, traceback and stack redacted in place (formatted once, as a handler would)."""
    try:
        message = record.getMessage()
    except (TypeError, ValueError):  # bad format arguments: logging reports them when it emits
        return
    redacted = redact_text(message)
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        buf = io.StringIO()
        traceback.print_exception(*record.exc_info, file=buf)  # what Formatter.formatException writes
        record.exc_text = redact_text(buf.getvalue().rstrip("\n"))
    if record.stack_info:
        record.stack_info = redact_text(record.stack_info)


class RedactFilter(logging.Filter):
    """A logger or handler filter that redacts every record it lets through (libavformat's too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


_install_lock = threading.Lock()


def install() -> None:
    """Redact every record of the ``avdnn`` and ``libav`` trees when it is made; idempotent.

    A filter on a logger sees only the records logged to that very logger, not those of its
    children (``avdnn.dnn``, ``libav.http``) that propagate to it; so the two roots get a
    :class:`RedactFilter` and the record factory redacts the records of every logger below them.
    The factory wraps the one in place and leaves other loggers' records alone.
    """
    with _install_lock:
        for root in LOGGERS:
            logger = logging.getLogger(root)
            if not any(isinstance(f, RedactFilter) for f in logger.filters):
                logger.addFilter(RedactFilter())
        previous = logging.getLogRecordFactory()
        if getattr(previous, "avdnn_redacts", False):
            return

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if _ours(record.name):
                redact_record(record)
            return record

        factory.avdnn_redacts = True  # type: ignore[attr-defined]
        logging.setLogRecordFactory(factory)


class RedactingStream(io.TextIOBase):
    """A text stream that redacts what is written before passing it on (the CLI's stderr).

    Each ``write`` is redacted whole: the CLI writes whole lines and messages, and a traceback
    is written line by line, so a URL is never split across two writes.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact_text(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8") or "utf-8"

    def writable(self) -> bool:
        return True
