"""Filter-string templates: ``{field}`` tokens filled as option values, never as syntax.

A corpus run names per-file things inside the chain (``metadata_jsonl=file=out/{stem}.jsonl``).
Pasting a file name into the text would let it speak the filtergraph language: ``a,hflip.mp4``
would add a filter and ``a,vflip:b.mp4`` would break the chain. Here a field is filled inside
the option value the parser gives back, and the value is written again with the parser's own
escapers (:func:`~avdnn.graph.parse.escape_value`, then level 1 for the filter's arguments),
so every filter sees exactly the text it would see for that literal name. Filters without a
field keep their text as written.

Values of options that name a file the filter writes (``Option.writes``: metadata_jsonl's
``file``) are reported, and a ``place`` function may move them (a corpus writes them under a
temporary name). A field in a ``model`` option is refused: one job runs one set of models,
loaded once per worker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from avdnn.errors import InvalidArgumentError
from avdnn.filters.registry import get_filter, is_avdnn_filter
from avdnn.graph.links import parse_graph
from avdnn.graph.parse import FilterSpec, format_options, parse_chain, rewrite_filters, split_options

__all__ = ["Filled", "fill_fields"]


@dataclass(frozen=True)
class Filled:
    """A template's text with its fields filled, and the files its filters will write."""

    chain: str
    #: values of the options that name a file a filter writes, after ``place``, in chain order
    writes: tuple[str, ...]
    #: the filter (its label: ``metadata_jsonl``, ``events@cam``) that writes each of ``writes``
    writers: tuple[str, ...] = ()


def fill_fields(
    chain: str, values: Mapping[str, object], *, place: Callable[[str], str] | None = None, graph: bool = False
) -> Filled:
    """``chain`` with each ``{name}`` / ``{name:spec}`` of ``values`` filled inside option values.

    ``place(path)`` replaces the value of every option that names a file a filter writes
    (``-`` is standard output, not a file). ``graph``: ``chain`` is a ``-filter_complex`` graph
    (chains separated by ``;``, labels anywhere). Raises InvalidArgumentError for a field in a
    model option, a bad format spec, or a chain the parser refuses.
    """
    pattern = _field_pattern(values)
    if graph:
        parse_graph(chain)  # a graph the parser refuses fails here, with its own message
    else:
        parse_chain(chain)
    writes: list[str] = []
    writers: list[str] = []

    def fill(spec: FilterSpec) -> str | None:
        args = _fill_args(spec, pattern, values, place, writes)
        writers.extend([spec.label] * (len(writes) - len(writers)))
        return args

    filled = rewrite_filters(chain, fill)
    return Filled(filled, tuple(writes), tuple(writers))


def _field_pattern(values: Mapping[str, object]) -> re.Pattern[str] | None:
    if not values:
        return None
    names = "|".join(re.escape(k) for k in values)
    return re.compile(r"\{(" + names + r")(?::([^{}]*))?\}")


def _fill_args(
    spec: FilterSpec,
    pattern: re.Pattern[str] | None,
    values: Mapping[str, object],
    place: Callable[[str], str] | None,
    writes: list[str],
) -> str | None:
    """The filter's new arguments (level 2, unescaped at level 1), or None to keep its text."""
    if not spec.args:
        return None
    cls = get_filter(spec.name) if is_avdnn_filter(spec.name) else None
    has_field = pattern is not None and "{" in spec.args  # a field's ':' may still be escaped here
    if not has_field and (cls is None or not any(o.writes for o in cls.options)):
        return None
    items = split_options(spec.args, cls.joins if cls is not None else None)
    changed = False
    new: list[tuple[str | None, str]] = []
    nth = 0
    for key, value in items:
        opt = cls.option_given(key, nth) if cls is not None else None
        nth += key is None
        name = opt.name if opt is not None else key
        filled = value
        if pattern is not None and pattern.search(value):
            if name == "model":
                raise InvalidArgumentError(
                    f"a template field cannot name the model ('{value}'): every file of a batch runs "
                    "the same models, loaded once per worker",
                    filter=spec.label,
                    option="model",
                )
            filled = pattern.sub(lambda m: _format(m, values, spec.label), value)
        if opt is not None and opt.writes and filled != "-":
            if place is not None:
                filled = place(filled)
            writes.append(filled)
        changed = changed or filled != value
        new.append((key, filled))
    if not changed:
        return None
    return format_options(new)


def _format(match: re.Match[str], values: Mapping[str, object], label: str) -> str:
    value, spec = values[match.group(1)], match.group(2) or ""
    try:
        return format(value, spec)
    except ValueError as exc:
        raise InvalidArgumentError(f"template field '{match.group(0)}': {exc}", filter=label) from exc
