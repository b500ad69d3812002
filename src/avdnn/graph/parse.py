"""FFmpeg's filtergraph string syntax for one linear video chain.

avdnn takes ``-vf`` strings written for ffmpeg, so it must split them exactly the
way libavfilter does: a string that works (or fails) in ffmpeg has to work (or
fail) here, with the same values reaching the filters. The two levels are ported
from FFmpeg 7/8: level 1 is ``graphparser.c`` (filters split on ``,`` with
``av_get_token``), level 2 is ``ff_filter_opt_parse``/``av_opt_get_key_value``
(options split on ``:``, with the ``get_key`` key rules). Both levels process
``'...'`` quoting and backslash escapes once and remove them, so a value carries
two levels of escaping inside a graph; ``escape_value`` and ``format_chain``
produce them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from avdnn.errors import InvalidArgumentError, OptionNotFoundError

__all__ = ["FilterSpec", "escape_value", "format_chain", "parse_chain", "split_options"]

_WHITESPACES = " \n\t\r"  # WHITESPACES in avstring.c, graphparser.c and opt.c
_NAME_TERMS = "=,;["  # filter_parse(): av_get_token(filter, "=,;[")
_ARGS_TERMS = "[],;"  # filter_parse(): av_get_token(filter, "[],;")
_OPT_TERMS = ":"  # ff_filter_opt_parse(): av_opt_get_key_value(&args, "=", ":", ...)
_NAME_RE = re.compile(r"[A-Za-z0-9_]+")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.")
_ONE_CHAIN = "a -vf chain is one linear chain of filters (graphs with labels go in -filter_complex)"


@dataclass(frozen=True)
class FilterSpec:
    """One filter of a chain: ``name[@instance][=args]``."""

    name: str
    instance: str | None
    args: str | None  # after level-1 unescaping: what FFmpeg hands to the options parser

    @property
    def label(self) -> str:
        """``scale`` or ``scale@my``: the name FFmpeg gives the instance."""
        return self.name if self.instance is None else f"{self.name}@{self.instance}"


def _get_token(s: str, pos: int, term: str) -> tuple[str, int]:
    """av_get_token(): the token at ``s[pos:]`` and the index where it stopped.

    Leading whitespace is skipped; ``\\x`` gives ``x`` (a backslash at the very end
    is kept as it is); ``'...'`` is copied verbatim, running to the end if never
    closed; the token stops at an unquoted, unescaped ``term`` char; trailing
    whitespace is trimmed back to the last escaped char or closed quote.
    """
    n = len(s)
    while pos < n and s[pos] in _WHITESPACES:
        pos += 1
    out: list[str] = []
    end = 0  # out[:end] is protected from the trim ('end' pointer in the C code)
    while pos < n and s[pos] not in term:
        c = s[pos]
        pos += 1
        if c == "\\" and pos < n:
            out.append(s[pos])
            pos += 1
            end = len(out)
        elif c == "'":
            while pos < n and s[pos] != "'":
                out.append(s[pos])
                pos += 1
            if pos < n:
                pos += 1
                end = len(out)
        else:
            out.append(c)
    while len(out) > end and out[-1] in _WHITESPACES:
        out.pop()
    return "".join(out), pos


def _skip_ws(s: str, pos: int) -> int:
    while pos < len(s) and s[pos] in _WHITESPACES:
        pos += 1
    return pos


def _check_nul(text: str, what: str) -> None:
    if "\x00" in text:
        raise InvalidArgumentError(f"NUL character in {what}: {text!r}")


def _parse_labels(s: str, pos: int) -> tuple[list[str], int]:
    """linklabels_parse(): zero or more ``[label]``, each followed by whitespace."""
    labels: list[str] = []
    while pos < len(s) and s[pos] == "[":
        start = pos
        label, pos = _get_token(s, pos + 1, "]")
        if not label:
            raise InvalidArgumentError(f'Bad (empty?) label found in the following: "{s[start:]}".')
        if pos >= len(s) or s[pos] != "]":
            raise InvalidArgumentError(f"Mismatched '[' found in the following: \"{s[start:]}\".")
        labels.append(label)
        pos = _skip_ws(s, pos + 1)
    return labels, pos


def _check_name(name: str) -> None:
    if not _NAME_RE.fullmatch(name):
        raise InvalidArgumentError(f"Invalid filter name '{name}': filter names are made of A-Z, a-z, 0-9 and '_'")


def _make_spec(token: str, args: str | None, near: str) -> FilterSpec:
    name, at, instance = token.partition("@")  # strchr(filter_name, '@')
    if not name:
        raise InvalidArgumentError(f"Bad (empty?) filter name near: {near!r}")
    _check_name(name)
    return FilterSpec(name, instance if at else None, args)


def parse_chain(text: str) -> list[FilterSpec]:
    """Split a ``-vf`` string into filters (level 1), as avfilter_graph_segment_parse().

    Only a leading ``[in]`` and a trailing ``[out]`` label are accepted (and dropped);
    other labels and ``;`` raise :class:`InvalidArgumentError`. Empty text gives ``[]``.
    """
    _check_nul(text, "filter graph description")
    n = len(text)
    pos = _skip_ws(text, 0)
    found: list[tuple[FilterSpec, list[str], list[str]]] = []
    while pos < n:
        spec, inputs, outputs, pos = parse_filter(text, pos)
        found.append((spec, inputs, outputs))
        if pos >= n:
            break
        if text[pos] == ";":
            if not text[pos + 1 :].strip(_WHITESPACES):
                break  # a trailing ';' ends the one chain, as avfilter_graph_segment_parse reads it
            sws = text.lstrip(_WHITESPACES).startswith("sws_flags=")
            hint = " (a 'sws_flags=...;' prefix is not supported either)" if sws else ""
            near = text[pos:]
            raise InvalidArgumentError(f"{_ONE_CHAIN}: ';' starts another chain near {near!r}{hint}")
        if text[pos] != ",":
            raise InvalidArgumentError(f"Trailing garbage after a filter: {text[pos:]}")
        pos = _skip_ws(text, pos + 1)  # a trailing ',' ends the chain, as in FFmpeg 7
    last = len(found) - 1
    for i, (_, inputs, outputs) in enumerate(found):
        allowed_in = ["in"] if i == 0 else []
        allowed_out = ["out"] if i == last else []
        for labels, allowed in ((inputs, allowed_in), (outputs, allowed_out)):
            if labels and labels != allowed:
                shown = "".join(f"[{lab}]" for lab in labels)
                raise InvalidArgumentError(
                    f"{_ONE_CHAIN}: link label {shown} on '{found[i][0].label}' is not supported "
                    "(only a leading [in] and a trailing [out] are accepted)"
                )
    return [spec for spec, _, _ in found]


def parse_filter(text: str, pos: int) -> tuple[FilterSpec, list[str], list[str], int]:
    """One filter at ``text[pos:]`` with its link labels (``[in]name=args[out]``), as
    avfilter_graph_parse2 reads it; returns where it stopped (after trailing whitespace)."""
    start = pos
    inputs, pos = _parse_labels(text, pos)
    token, pos = _get_token(text, pos, _NAME_TERMS)
    args = None
    if pos < len(text) and text[pos] == "=":
        args, pos = _get_token(text, pos + 1, _ARGS_TERMS)
    spec = _make_spec(token, args, text[start:])
    outputs, pos = _parse_labels(text, pos)
    return spec, inputs, outputs, _skip_ws(text, pos)


def _get_key(s: str, pos: int) -> tuple[str, int] | None:
    """opt.c get_key(): ``[ws] key-chars [ws] '='`` -> (key, index after '='), else None."""
    pos = _skip_ws(s, pos)
    start = pos
    while pos < len(s) and s[pos] in _KEY_CHARS:
        pos += 1
    key = s[start:pos]
    pos = _skip_ws(s, pos)
    if pos >= len(s) or s[pos] != "=":
        return None
    return key, pos + 1


#: Whether ``(key, value)`` takes the bare value after it as ``value:bare`` (the filter's say).
Joins = Callable[[str, str], bool]


def split_options(args: str, joins: Joins | None = None) -> list[tuple[str | None, str]]:
    """Split one filter's args (level 2) into ``(key or None, value)`` pairs.

    As ff_filter_opt_parse() with av_opt_get_key_value(args, "=", ":",
    AV_OPT_FLAG_IMPLICIT_KEY): positional values first, then ``key=value``; a
    positional value after a key raises "No option name near '...'". The one exception is
    the filter's: where ``joins(key, value)`` is true (avdnn's ``model=zoo:NAME``, declared by
    the option), the bare value is joined to the value before it. FFmpeg refuses every such
    string, so no valid FFmpeg string changes meaning.
    """
    _check_nul(args, "filter arguments")
    out: list[tuple[str | None, str]] = []
    pos, n, keyed = 0, len(args), False
    while pos < n:
        got = _get_key(args, pos)
        last_key = out[-1][0] if out else None
        if got is None and last_key is not None and joins is not None and joins(last_key, out[-1][1]):
            name, pos = _get_token(args, pos, _OPT_TERMS)
            out[-1] = (last_key, f"{out[-1][1]}:{name}")
            if pos < n:
                pos += 1
            continue
        if got is None:
            if keyed:  # priv_class = NULL after a key: no shorthand left
                raise InvalidArgumentError(f"No option name near '{args[pos:]}'")
            key = None
            value, pos = _get_token(args, pos, _OPT_TERMS)
        else:
            key, vpos = got
            if not key:
                raise OptionNotFoundError(f"Missing option name before '=' near '{args[pos:]}'")
            keyed = True
            value, pos = _get_token(args, vpos, _OPT_TERMS)
        if pos < n:
            pos += 1  # the ':' that ended the value
        out.append((key, value))
    return out


def _escape(text: str, specials: str) -> str:
    """Backslash-escape so that av_get_token(result, specials) == text."""
    last = len(text) - 1
    out = []
    for i, c in enumerate(text):
        if c in specials or c in "\\'" or (c in _WHITESPACES and i in (0, last)):
            out.append("\\")
        out.append(c)
    return "".join(out)


def escape_value(value: str) -> str:
    """Escape one option value (level 2) so that split_options() gives it back.

    ``\\``, ``'`` and ``:`` are escaped, as are edge whitespace and an ``=`` that
    would make a positional value look like ``key=value``. ``""`` becomes ``''``.
    """
    _check_nul(value, "option value")
    if not value:
        return "''"
    escaped = _escape(value, _OPT_TERMS)
    got = _get_key(escaped, 0)
    if got is not None:  # "a=b" as a positional value: hide the '=' from get_key()
        eq = got[1] - 1
        escaped = escaped[:eq] + "\\" + escaped[eq:]
    return escaped


def format_chain(specs: list[FilterSpec]) -> str:
    """Write specs back as a ``-vf`` string (level-1 escaping of labels and args)."""
    parts = []
    for spec in specs:
        _check_name(spec.name)
        part = spec.name
        if spec.instance is not None:
            _check_nul(spec.instance, "instance name")
            part += "@" + _escape(spec.instance, _NAME_TERMS)
        if spec.args is not None:
            _check_nul(spec.args, "filter arguments")
            part += "=" + _escape(spec.args, _ARGS_TERMS)
        parts.append(part)
    return ",".join(parts)


def format_options(items: list[tuple[str | None, str]]) -> str:
    """A filter's arguments from (key, value) items (key None: positional), each value escaped."""
    return ":".join(escape_value(v) if k is None else f"{k}={escape_value(v)}" for k, v in items)


def rewrite_filters(text: str, rewrite: Callable[[FilterSpec], str | None]) -> str:
    """``text`` (a chain, or a graph with its labels) with each filter's arguments replaced by
    ``rewrite``'s answer, written back escaped; a filter it answers None for keeps its text, as do
    the labels, separators and spacing. The caller has parsed ``text`` whole (its errors first)."""
    out: list[str] = []
    pos = _skip_ws(text, 0)
    out.append(text[:pos])
    while pos < len(text):
        start = pos
        spec, inputs, outputs, pos = parse_filter(text, pos)
        args = rewrite(spec)
        if args is None:
            out.append(text[start:pos])
        else:
            labels_in = "".join(f"[{_escape(label, ']')}]" for label in inputs)
            labels_out = "".join(f"[{_escape(label, ']')}]" for label in outputs)
            out.append(labels_in + format_chain([FilterSpec(spec.name, spec.instance, args)]) + labels_out)
        if pos < len(text):  # the ',' or ';' after it (the parse before refused anything else)
            nxt = _skip_ws(text, pos + 1)
            out.append(text[pos:nxt])
            pos = nxt
    return "".join(out)
