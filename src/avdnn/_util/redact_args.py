"""Secrets in command lines and filter chains, masked by the name of the option that holds them.

A URL shows its own secrets (:func:`avdnn._util.redact.redact_url`); an argv or a chain carries
others by position: the word after ``-decryption_key`` or ``-headers``, the value of an ``events``
webhook's ``headers`` or of any filter option named like a secret. :func:`redact_argv` and
:func:`redact_chain` mask those (``***``) wherever an argv or a chain is shown (the service's
answers, its logs), splitting a chain as libavfilter splits it, and then redact the rest as text.
"""

from __future__ import annotations

from collections.abc import Sequence

from avdnn._util.redact import MASK, URL_IN_TEXT, is_secret_name, redact_streamid, redact_text, redact_url

__all__ = ["redact_argv", "redact_chain"]


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
            out.append(redact_text(redact_streamid(word)))
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
    for m in URL_IN_TEXT.finditer(s):  # a URL, its ':' escaped or not: where its redaction differs
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
