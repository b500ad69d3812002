"""The files a filtergraph opens, each handed to a ``place`` function that may move it or refuse it.

A chain opens more than its frames: a DNN filter's model and labels, avdnn's sinks
(``metadata_jsonl=file=``), libavfilter's ``movie`` input, a LUT, a stats file. Whoever runs a
stranger's graph (``avdnn serve``) must see each of them before anything opens, and open what it
checked: :func:`place_files` walks the graph as the parser reads it (positional values included,
an avdnn filter's by its options, a libavfilter filter's by its AVOptions' order) and writes back
the values ``place`` gives (escaped, as :mod:`avdnn.graph.template` writes a field). Filters
that reach what no path check can bound (a plugin library, a command socket) are handed over as
``REFUSED``, and so is a file-like option of a libavfilter filter the table does not know
(:mod:`avdnn.media.libav.fileopts`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from avdnn.filters.registry import get_filter
from avdnn.graph.chain import takes
from avdnn.graph.links import parse_graph
from avdnn.graph.parse import FilterSpec, _escape, format_options, parse_chain, rewrite_filters, split_options
from avdnn.media.libav import fileopts
from avdnn.media.libav.filteropts import filter_options, positional_names

__all__ = ["NamedFile", "Place", "format_dict", "place_files"]


@dataclass(frozen=True)
class NamedFile:
    """One option of a filter that opens something: ``kind`` is one of :mod:`~avdnn.media.libav.fileopts`'s.

    ``value`` is None for an option not given that opens its default (``default``), and for
    ``FORMAT_OPTS`` not given (``default`` is then the URL the filter opens, as placed); for
    ``REFUSED`` it says why.
    """

    filter: str
    option: str
    value: str | None
    kind: str
    default: str | None = None


#: the value an option takes instead (None: the option stays as it is, or unset)
Place = Callable[[NamedFile], str | None]


def place_files(text: str, place: Place, *, graph: bool, avdnn: bool = True) -> str:
    """``text`` with each value that names a file replaced by ``place``'s answer.

    ``graph``: ``text`` is a -filter_complex graph (``;``, labels), else one chain; ``avdnn``:
    avdnn's filters take their names (a chain, -filter_complex), else every filter is
    libavfilter's (a lavfi input graph, -af). Filters ``place`` leaves as they were keep their
    text; a graph that does not parse raises the parser's error.
    """
    parse_graph(text) if graph else parse_chain(text)  # a graph the parser refuses fails here, as it would
    return rewrite_filters(
        text, lambda spec: _avdnn_args(spec, place) if avdnn and takes(spec) else _lavfi_args(spec, place)
    )


def format_dict(values: dict[str, str]) -> str:
    """An AVOption dictionary value (``k=v:k2=v2``, as ``av_dict_parse_string`` reads it) of ``values``:
    what a filter's ``format_opts`` takes, before the option level's own escaping."""
    return ":".join(f"{_escape(k, ':=')}={_escape(v, ':=')}" for k, v in values.items())


def _avdnn_args(spec: FilterSpec, place: Place) -> str | None:
    """An avdnn filter's new arguments, or None to keep its text."""
    if not spec.args:
        return None
    cls = get_filter(spec.name)
    items = split_options(spec.args, cls.joins)
    new: list[tuple[str | None, str]] = []
    nth = 0
    for key, value in items:
        opt = cls.option_given(key, nth)
        nth += key is None
        if opt is not None and (opt.reads or opt.writes):
            kind = fileopts.MODEL if opt.name == "model" else fileopts.WRITE if opt.writes else fileopts.READ
            if not (opt.writes and value == "-"):  # standard output, not a file
                value = place(NamedFile(spec.label, opt.name, value, kind)) or value
        elif opt is not None and opt.name in ("extra_inputs", "backend_configs"):
            value = _extra_inputs(spec.label, opt.name, value, place)
        new.append((key, value))
    return None if new == items else format_options(new)


def _extra_inputs(label: str, option: str, value: str, place: Place) -> str:
    """``name=@file.npy`` items of onnx's ``extra_inputs`` (also inside ``backend_configs``) placed."""
    items = []
    for item in value.split("&"):
        key, sep, rest = item.partition("=")
        if option == "backend_configs" and key.strip() == "extra_inputs":
            inner, sep2, path = rest.partition("=")
            if sep2 and path.strip().startswith("@"):
                got = place(NamedFile(label, "extra_inputs", path.strip()[1:], fileopts.READ))
                rest = f"{inner}=@{got}" if got is not None else rest
        elif option == "extra_inputs" and sep and rest.strip().startswith("@"):
            got = place(NamedFile(label, option, rest.strip()[1:], fileopts.READ))
            rest = f"@{got}" if got is not None else rest
        items.append(f"{key}{sep}{rest}")
    return "&".join(items)


def _lavfi_args(spec: FilterSpec, place: Place) -> str | None:
    """A libavfilter filter's new arguments, or None to keep its text."""
    reason = fileopts.REFUSED_FILTERS.get(spec.name)
    if reason is not None:
        place(NamedFile(spec.label, "", reason, fileopts.REFUSED))
        return None
    table = fileopts.filter_files(spec.name)
    items = split_options(spec.args) if spec.args else []
    if not table and not items:
        return None
    names = positional_names(spec.name)
    texts = {o.name for o in filter_options(spec.name) or [] if o.type in ("string", "binary", "dict")}
    new: list[tuple[str | None, str]] = []
    given: set[str] = set()
    url: str | None = None
    nth = 0
    for key, value in items:
        name = key if key is not None else (names[nth] if nth < len(names) else None)
        nth += key is None
        if name is not None and name in table:
            given.add(name)
            value = place(NamedFile(spec.label, name, value, table[name].kind)) or value
            url = value if table[name].kind == fileopts.URL else url
        elif name is not None and name in texts and fileopts.fileish(name):
            why = f"its option '{name}' names a file that avdnn does not know how to confine"
            place(NamedFile(spec.label, name, why, fileopts.REFUSED))
        new.append((key, value))
    for name, opt in table.items():  # not given: its default file, or a nested open's options
        if name in given or (opt.default is None and opt.kind != fileopts.FORMAT_OPTS):
            continue
        default = url if opt.kind == fileopts.FORMAT_OPTS else opt.default  # the options' open: its URL
        got = place(NamedFile(spec.label, name, None, opt.kind, default))
        if got is not None:
            new.append((name, got))
    return None if new == items else format_options(new)
