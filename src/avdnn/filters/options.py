"""Declared filter options: types, defaults, ranges, help, and FFmpeg's value parsing.

Every avdnn filter declares its options once as :class:`Option` rows; parsing a filter
string, ``-h filter=NAME`` and every option error come from these rows, so they cannot drift.
Values parse the way ``av_opt_set`` parses them: named constants, booleans as
``true/yes/on/enable``, numbers with SI suffixes, ``&``-separated lists, and range errors
with FFmpeg's wording and AVERROR(ERANGE).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from avdnn.errors import InvalidArgumentError, OptionNotFoundError, OutOfRangeError, closest, did_you_mean
from avdnn.media.timing import AV_TIME_BASE, parse_time

__all__ = ["INT_MAX", "INT_MIN", "BoundOptions", "Option", "bind_options", "closest", "did_you_mean", "parse_number"]

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)

_SI = {
    "y": -24,
    "z": -21,
    "a": -18,
    "f": -15,
    "p": -12,
    "n": -9,
    "u": -6,
    "m": -3,
    "c": -2,
    "d": -1,
    "h": 2,
    "k": 3,
    "K": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
    "Z": 21,
    "Y": 24,
}
_NUM = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?0[xX][0-9a-fA-F]+)([a-zA-Z]?)(i?)(B?)\s*$")
_TRUE = {"true", "y", "yes", "enable", "enabled", "on"}
_FALSE = {"false", "n", "no", "disable", "disabled", "off"}


def parse_number(text: str) -> float:
    """A number the way av_strtod reads it (decimal, hex, SI prefixes like 1k, 1Ki, 1KB)."""
    m = _NUM.match(text)
    if not m:
        raise ValueError(text)
    num, prefix, binary, byte = m.groups()
    value = float(int(num, 16)) if num.lower().lstrip("+-").startswith("0x") else float(num)
    if prefix:
        if prefix not in _SI:
            raise ValueError(text)
        value *= 2.0 ** (10 * _SI[prefix] / 3) if binary else 10.0 ** _SI[prefix]
    if byte:
        value *= 8
    return value


@dataclass(frozen=True)
class Option:
    """One option of an avdnn filter, named and bounded as FFmpeg declares it.

    ``type`` is one of ``int``, ``float``, ``bool``, ``string``, ``float_list``, ``duration``
    (FFmpeg's AV_OPT_TYPE_DURATION: ``[-][HH:]MM:SS[.m...]`` or ``S+[.m...][s|ms|us]``, held
    as seconds, a float).
    ``consts`` are FFmpeg's named values (an int option with a unit); ``aliases`` are other
    names for the same option (``options`` for ``backend_configs``); ``group`` is the
    AVClass it belongs to in FFmpeg (``dnn_base``, ``dnn_onnx``...) for ``-h``;
    ``joins_bare`` see :meth:`avdnn.filters.base.Filter.joins`.
    """

    name: str
    type: str
    default: Any = None
    min: float | None = None
    max: float | None = None
    help: str = ""
    consts: Mapping[str, int] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    group: str = ""
    deprecated: bool = False
    #: values after which a bare ``:value`` belongs to this one (avdnn's ``model=zoo:NAME``)
    joins_bare: tuple[str, ...] = ()
    #: the value is a path the filter writes (a corpus run names it per file and writes it
    #: under a temporary name, as it does the output: avdnn.graph.template)
    writes: bool = False
    #: the value is a path the filter reads (a model, a labels or font file): a served pipeline
    #: confines it to its media root (avdnn.graph.files)
    reads: bool = False

    def parse(self, text: str) -> Any:
        """The typed value of ``text``, or InvalidArgumentError/OutOfRangeError."""
        if self.type == "string":
            return text
        if self.type == "float_list":
            return self._parse_list(text)
        if self.type == "duration":
            try:
                us = parse_time(text, self.name)
            except InvalidArgumentError:
                raise self._unparsable(text) from None
            return self.check((us or 0) / AV_TIME_BASE)
        if self.type == "bool":
            low = text.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            if low == "auto" and self.min is not None and self.min <= -1:
                return -1
        if text in self.consts:
            value: float = self.consts[text]
        else:
            try:
                value = parse_number(text)
            except ValueError:
                raise self._unparsable(text) from None
        return self.check(value)

    def check(self, value: float) -> Any:
        """Range-check a number and give it the option's Python type."""
        if math.isnan(value):
            raise self._unparsable(str(value))
        lo = -math.inf if self.min is None else self.min
        hi = math.inf if self.max is None else self.max
        if not lo <= value <= hi:
            raise OutOfRangeError(
                f"Value {value:f} for parameter '{self.name}' out of range [{_g(lo)} - {_g(hi)}]",
                option=self.name,
            )
        if self.type == "bool":
            return -1 if value < 0 else bool(value)
        if self.type == "int":
            return round(value)
        return float(value)

    def _parse_list(self, text: str) -> tuple[float, ...]:
        try:
            numbers = [parse_number(t) for t in text.split("&")]
        except ValueError:
            raise self._unparsable(text) from None
        return tuple(self.check(n) for n in numbers)  # OutOfRangeError (a ValueError) stays one

    def _unparsable(self, text: str) -> InvalidArgumentError:
        hint = f" (named values: {', '.join(self.consts)})" if self.consts else ""
        return InvalidArgumentError(f'Unable to parse option value "{text}"{hint}', option=self.name)

    def describe(self) -> str:
        """One ``-h`` line in ffmpeg's layout: name, type, help, default and range."""
        kind = {
            "float": "<float>",
            "int": "<int>",
            "bool": "<boolean>",
            "string": "<string>",
            "float_list": "<float>&...",
            "duration": "<duration>",
        }[self.type]
        extra = []
        if self.type in ("int", "float", "duration") and (self.min is not None or self.max is not None):
            extra.append(f"from {_g(self.min)} to {_g(self.max)}")
        if self.default is not None:
            default = self.default
            if self.consts:
                default = next((k for k, v in self.consts.items() if v == default), default)
            extra.append(f"default {'true' if default is True else 'false' if default is False else default}")
        text = f"  {self.name:<23} {kind:<11} {self.help}"
        if extra:
            text += f" ({' '.join(extra)})"
        if self.deprecated:
            text += " [deprecated]"
        lines = [text]
        lines += [f"     {k:<22}{'':<12}{v}" for k, v in self.consts.items()]
        return "\n".join(lines)


def _g(v: float | None) -> str:
    if v is None or v == -math.inf:
        return "-inf"
    if v == math.inf:
        return "inf"
    if v == INT_MAX:
        return "INT_MAX"
    if v == INT_MIN:
        return "INT_MIN"
    return f"{v:g}"


class BoundOptions(dict[str, Any]):
    """Option values by name, remembering which ones the user gave (``given``).

    A value equal to its default is still the user's choice: ``confidence=0.5`` must win
    over a model's own default (the zoo), so "given" cannot be told from the value.
    """

    given: frozenset[str] = frozenset()


def bind_options(
    options: Sequence[Option],
    items: Sequence[tuple[str | None, str]],
    *,
    filter_name: str,
) -> BoundOptions:
    """Turn (key | None, text) pairs into {option name: value}, FFmpeg's process_options.

    Positional values fill the options in declaration order; a key may be any alias; the
    defaults fill the rest. Raises OptionNotFoundError naming the closest valid names.
    """
    by_name: dict[str, Option] = {}
    for opt in options:
        for n in (opt.name, *opt.aliases):
            by_name[n] = opt
    values = BoundOptions((o.name, o.default) for o in options)
    given: set[str] = set()
    positional = iter(options)
    for key, text in items:
        if key is None:
            nxt = next(positional, None)
            if nxt is None:
                raise InvalidArgumentError(
                    f"too many positional values: '{text}' has no option to go to", filter=filter_name
                )
            opt = nxt
        else:
            if key not in by_name:
                raise OptionNotFoundError(
                    f"Option '{key}' not found{did_you_mean(key, [o.name for o in options])}",
                    filter=filter_name,
                    option=key,
                )
            opt = by_name[key]
        try:
            values[opt.name] = opt.parse(text)
        except InvalidArgumentError as exc:
            exc.with_context(filter=filter_name, option=opt.name)
            raise
        given.add(opt.name)
    values.given = frozenset(given)
    return values
