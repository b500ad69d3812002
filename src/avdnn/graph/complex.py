"""``-filter_complex`` graphs that are one linear chain, turned into the output's video chain.

ffmpeg-python and other generators write every filter string as a complex graph:
``[0]scale=88:-2[s0]`` mapped with ``-map "[s0]"``, or ``[0]format=rgb24[s0];[s0]dnn_processing=
...[s1]``. Such a graph is one chain from one input stream to one output pad, so it runs as that
output's ``-vf`` chain: every avdnn and libavfilter filter works in it, with the same result as
ffmpeg (the same filters on the same frames). The graph is split with graph.parse's port of
graphparser.c (labels, quoting, escapes), links are followed as avfilter_graph_parse2 links them
(an explicit ``[label]``, or the next filter of the same ``,`` chain), and the path is checked to
be linear. Graphs with several inputs or outputs (overlay, hstack, split, amix, several chains
side by side) are refused with an error naming the construct: they need the multi-graph
scheduler, which does not exist yet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InvalidArgumentError, NotSupportedError
from .parse import (
    FilterSpec,
    _check_nul,
    _skip_ws,
    format_chain,
    parse_filter,
)
from .plan import StreamOptions

__all__ = ["LinearGraph", "apply_complex", "linear_graph"]

#: an input pad naming an input file's stream: [0], [0:v], [0:v:0], [0:1]
_INPUT_PAD = re.compile(r"^(?P<file>\d+)(?::(?P<type>[vVasdt]))?(?::(?P<index>\d+))?$")
_OPEN = ""  # an unlabeled, unlinked pad


@dataclass(frozen=True)
class LinearGraph:
    """A complex graph that is one chain: where it reads, what it runs, which pad it ends on."""

    #: the input stream, as a -map argument ("0:v:0", "0:1")
    input_map: str
    #: the chain, as a -vf string
    chain: str
    #: the label of the graph's output pad (None: unlabeled, mapped to the output by default)
    output_label: str | None
    #: the name of the chain's last filter (ffmpeg's "Stream mapping:" names the graph by it)
    last_filter: str


@dataclass
class _Node:
    spec: FilterSpec
    inputs: list[str]
    outputs: list[str]


def _parse(text: str) -> list[list[_Node]]:
    """The graph's chains (``;``), each a list of filters (``,``) with their link labels."""
    _check_nul(text, "filter graph description")
    chains: list[list[_Node]] = [[]]
    n = len(text)
    pos = _skip_ws(text, 0)
    while pos < n:
        spec, inputs, outputs, pos = parse_filter(text, pos)
        chains[-1].append(_Node(spec, inputs, outputs))
        if pos >= n:
            break
        if text[pos] == ";":
            chains.append([])
        elif text[pos] != ",":
            raise InvalidArgumentError(f"Trailing garbage after a filter: {text[pos:]}")
        pos = _skip_ws(text, pos + 1)
    if text.lstrip().startswith("sws_flags="):
        raise NotSupportedError(
            "-filter_complex: a 'sws_flags=...;' prefix is not supported yet", option="filter_complex"
        )
    return [c for c in chains if c]


def _refuse(what: str) -> NotSupportedError:
    return NotSupportedError(
        f"-filter_complex: {what} is not supported yet (a graph runs when it is one "
        "linear chain from one input stream to one output)",
        option="filter_complex",
    )


def _input_map(label: str) -> str:
    m = _INPUT_PAD.match(label)
    if m is None:
        raise InvalidArgumentError(
            f"Output with label '{label}' does not exist in any defined filter graph, or was already used elsewhere.",
            option="filter_complex",
        )
    if m.group("file") != "0":
        raise _refuse(f"input pad [{label}] (a second input file)")
    kind, index = m.group("type"), m.group("index")
    if kind not in (None, "v", "V"):
        raise _refuse(f"input pad [{label}] (a {'audio' if kind == 'a' else 'non-video'} stream)")
    if kind is None:
        return f"0:{index}" if index is not None else "0:v:0"
    return f"0:{kind}:{index or 0}"


def linear_graph(text: str) -> LinearGraph:
    """The one chain of ``text`` (ffmpeg's filtergraph syntax), or an error naming what is not linear."""
    nodes: list[_Node] = []
    for chain in _parse(text):
        had_in = [bool(n.inputs) for n in chain]
        had_out = [bool(n.outputs) for n in chain]
        for i, node in enumerate(chain):
            if len(node.inputs) > 1 or len(node.outputs) > 1:
                pads = (
                    "".join(f"[{p}]" for p in node.inputs) + node.spec.label + "".join(f"[{p}]" for p in node.outputs)
                )
                raise _refuse(f"'{pads}' (a filter with several inputs or outputs)")
            # avfilter_graph_parse2: an unlabeled pad links to its neighbour in the same ',' chain
            if not node.inputs:
                linked = i > 0 and not had_out[i - 1]
                node.inputs = [f"\0{id(chain[i - 1])}"] if linked else [_OPEN]
            if not node.outputs:
                linked = i + 1 < len(chain) and not had_in[i + 1]
                node.outputs = [f"\0{id(node)}"] if linked else [_OPEN]
            nodes.append(node)
    if not nodes:
        raise InvalidArgumentError("-filter_complex: empty filter graph", option="filter_complex")
    produced = {n.outputs[0]: n for n in nodes if n.outputs[0] != _OPEN}
    starts = [n for n in nodes if n.inputs[0] == _OPEN or n.inputs[0] not in produced]
    if len(starts) != 1:
        raise _refuse(f"a graph with {len(starts)} chains fed from inputs")
    head = starts[0]
    input_map = "0:v:0" if head.inputs[0] == _OPEN else _input_map(head.inputs[0])
    path: list[_Node] = []
    step: _Node | None = head
    consumers: dict[str, list[_Node]] = {}
    for n in nodes:
        consumers.setdefault(n.inputs[0], []).append(n)
    while step is not None:
        if step in path:
            raise InvalidArgumentError("-filter_complex: the graph has a cycle", option="filter_complex")
        path.append(step)
        out = step.outputs[0]
        users = consumers.get(out, []) if out != _OPEN else []
        if len(users) > 1:
            raise _refuse(f"link [{out}] used by {len(users)} filters")
        step = users[0] if users else None
    if len(path) != len(nodes):
        raise _refuse("a graph with chains not on the path from its input to its output")
    last = path[-1].outputs[0]
    label = None if last == _OPEN else last
    return LinearGraph(input_map, format_chain([n.spec for n in path]), label, path[-1].spec.name)


def apply_complex(
    graph: str | None, filters: str, maps: Sequence[str] | None, opts: StreamOptions | None
) -> tuple[str, Sequence[str] | None, StreamOptions | None]:
    """A one-chain ``-filter_complex`` becomes the video chain, its ``[label]`` map the input stream's.

    Returns the chain and the maps (in ``opts`` when given there) with the label replaced; an
    unlabeled output goes first among explicit maps, as ffmpeg binds it to the first output.
    """
    if graph is None:
        return filters, maps, opts
    if filters.strip():
        raise InvalidArgumentError(
            "-vf/-af/-filter and -filter_complex cannot be used together for the same stream.", option="filter_complex"
        )
    lg = linear_graph(graph)
    pad = None if lg.output_label is None else f"[{lg.output_label}]"

    def rewrite(given: Sequence[str]) -> list[str]:
        if pad is None:
            return [lg.input_map, *given] if given else []
        if pad not in given:
            raise InvalidArgumentError(
                f"Filter '{lg.chain}' has output {pad} unconnected: map it with -map '{pad}'", option="filter_complex"
            )
        return [lg.input_map if m == pad else m for m in given]

    if opts is not None and opts.maps:
        opts.maps = rewrite(opts.maps)
    else:
        maps = rewrite(list(maps or []))
    return lg.chain, maps, opts
