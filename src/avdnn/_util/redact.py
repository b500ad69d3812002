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
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = [
    "MASK",
    "RedactFilter",
    "RedactingStream",
    "install",
    "is_secret_name",
    "redact_argv",
    "redact_chain",
    "redact_record",
    "redact_text",
    "redact_url",
]

MASK = "***"

#: A URL inside free text: scheme://, its authority up to white space or the path (a quote there
#: may be part of a password: ``rtsp://u:p'w@h``), then anything up to white space or a quote.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#]*[^\s'\"<>]*")
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


def _streamid(value: str) -> str:
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
        return f"{name}={_streamid(value)}"
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
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    if ":" in text:
        text = _HEADER.sub(_header, text)
    if "=" in text:
        text = _STREAMID.sub(lambda m: m.group(1) + _streamid(m.group(2)), text)
        text = _LINE_PAIR.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
        text = _PAIR.sub(_pair, text)
    if "-" in text:
        text = _ARG.sub(
            lambda m: "-" + m.group(1) + m.group(2) + MASK if is_secret_name(m.group(1)) else m.group(0), text
        )
    return text


# -- argv and filter chains: masked by option name --------------------------------------------

#: argv options whose value is a filtergraph (its options masked by :func:`redact_chain`)
_CHAIN_OPTIONS = frozenset({"vf", "af", "filter", "filter_complex", "lavfi"})
#: SRT's stream id as an option (its session field masked, the rest kept)
_STREAMID_OPTIONS = frozenset({"streamid", "srt_streamid"})


def _option_name(word: str) -> str | None:
    """``decryption_key`` of ``-decryption_key:v:0``; None for a word that is no option."""
    if len(word) < 2 or word[0] != "-" or not (word[1].isalpha() or word[1] == "_"):
        return None
    return word[1:].partition(":")[0]


def redact_argv(argv: Sequence[str]) -> list[str]:
    """An ffmpeg-style argv as it may be shown: the word after an option with a secret name
    (``-decryption_key``, ``-passphrase``, ``-headers``, ``-cookies``, ``-srtp_in_params``, any
    ``-auth_*``...) masked whole, filtergraphs through :func:`redact_chain`, every other word
    through :func:`redact_text` (URLs). Every option word is looked at, so an option taken for a
    value never hides the secret after it.
    """
    out: list[str] = []
    after: str | None = None
    for word in argv:
        if after is not None and is_secret_name(after):
            out.append(MASK)
        elif after in _CHAIN_OPTIONS:
            out.append(redact_chain(word))
        elif after in _STREAMID_OPTIONS:
            out.append(redact_text(_streamid(word)))
        else:
            out.append(redact_text(word))
        after = _option_name(word)
    return out


_GRAPH_WS = " \n\t\r"  # libavfilter's WHITESPACES
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.")


def _token(s: str, pos: int, term: str) -> tuple[list[int], int]:
    """av_get_token() over ``s[pos:]``, giving the index in ``s`` of each character of the token
    (quotes and escapes removed) and where it stopped (as :mod:`avdnn.graph.parse` reads it)."""
    n = len(s)
    while pos < n and s[pos] in _GRAPH_WS:
        pos += 1
    chars: list[int] = []
    end = 0
    while pos < n and s[pos] not in term:
        c = s[pos]
        pos += 1
        if c == "\\" and pos < n:
            chars.append(pos)
            pos += 1
            end = len(chars)
        elif c == "'":
            while pos < n and s[pos] != "'":
                chars.append(pos)
                pos += 1
            if pos < n:
                pos += 1
                end = len(chars)
        else:
            chars.append(pos - 1)
    while len(chars) > end and s[chars[-1]] in _GRAPH_WS:
        chars.pop()
    return chars, pos


def _key(s: str, pos: int) -> tuple[str, int] | None:
    """opt.c get_key(): ``[ws] key [ws] '='`` at ``pos``: (key, index after '='), else None."""
    while pos < len(s) and s[pos] in _GRAPH_WS:
        pos += 1
    start = pos
    while pos < len(s) and s[pos] in _KEY_CHARS:
        pos += 1
    key = s[start:pos]
    while pos < len(s) and s[pos] in _GRAPH_WS:
        pos += 1
    return (key, pos + 1) if pos < len(s) and s[pos] == "=" else None


def _secret_values(text: str, args: list[int]) -> list[tuple[int, int]]:
    """The spans of ``text`` (first, last index) holding a secret option value of one filter
    whose arguments are the characters ``args`` of ``text`` (level 2: options split on ``:``)."""
    s = "".join(text[i] for i in args)
    spans: list[tuple[int, int]] = []
    for m in _URL.finditer(s):  # a URL, its ':' escaped or not: where its redaction differs
        first, last = _changed(m.group(0), redact_url(m.group(0)))
        if first <= last:
            spans.append((args[m.start() + first], args[m.start() + last]))
    pos = 0
    while pos < len(s):
        got = _key(s, pos)
        key, start = got if got is not None else (None, pos)
        value, stop = _token(s, start, ":")
        v = "".join(s[i] for i in value)
        if v and ((key is not None and is_secret_name(key)) or ("://" not in v and redact_text(v) != v)):
            spans.append((args[value[0]], args[value[-1]]))
        pos = stop + 1 if stop > pos else pos + 1
    return spans


def _changed(text: str, redacted: str) -> tuple[int, int]:
    """The first and last index of ``text`` that its redaction changed (first > last: none); a
    secret's own ``*`` matched against the mask's is counted changed too, never left shown."""
    if text == redacted:
        return 1, 0
    head = 0
    while head < min(len(text), len(redacted)) and text[head] == redacted[head]:
        head += 1
    while head > 0 and text[head - 1] == "*":
        head -= 1
    tail = 0
    while tail < min(len(text), len(redacted)) - head and text[-1 - tail] == redacted[-1 - tail]:
        tail += 1
    while tail > 0 and text[-tail] == "*":
        tail -= 1
    return head, len(text) - 1 - tail


def redact_chain(chain: str) -> str:
    """A filtergraph (``-vf``, ``-filter_complex``, a template's chain) as it may be shown: the
    value of every filter option with a secret name (an ``events`` webhook's ``headers``, any
    ``password``, ``token``, ``key``...) masked whole, and so is a value that holds a URL's
    credentials however it is escaped; then :func:`redact_text` over the whole. The graph is
    split as libavfilter splits it (two levels of quoting and escapes), so an escaped ``:`` or a
    quoted value never hides a secret; text that does not parse is masked as far as it splits.
    """
    spans: list[tuple[int, int]] = []
    pos, n = 0, len(chain)
    while pos < n:
        begin = pos
        while pos < n and chain[pos] in _GRAPH_WS + "[":  # link labels before the filter
            pos = _token(chain, pos + 1, "]")[1] + 1 if chain[pos] == "[" else pos + 1
        _, pos = _token(chain, pos, "=,;[")
        if pos < n and chain[pos] == "=":
            args, pos = _token(chain, pos + 1, "[],;")
            spans += _secret_values(chain, args)
        while pos < n and chain[pos] in _GRAPH_WS + "[]":  # link labels after it
            pos = _token(chain, pos + 1, "]")[1] + 1 if chain[pos] == "[" else pos + 1
        if pos < n and chain[pos] in ",;":
            pos += 1
        pos = max(pos, begin + 1)
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    for first, last in reversed(merged):
        chain = chain[:first] + MASK + chain[last + 1 :]
    return redact_text(chain)


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
