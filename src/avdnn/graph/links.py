"""A ``-filter_complex`` graph linked as libavfilter links it: filters, their pads, open ends.

ffmpeg parses a complex graph with ``avfilter_graph_segment_parse`` and links it with
``avfilter_graph_segment_link``: a labeled input pad takes the first unlinked output pad with
the same label at or after it in the text (and a labeled output the first such input), an
unlabeled output goes to the first free unlabeled input of the next filter of its ``,`` chain,
and what stays unlinked are the graph's open inputs (bound to input streams) and outputs (bound
to ``-map "[label]"`` or, unlabeled, to the first output). This module ports that linking; the
pad counts come from the filters themselves (``hstack=inputs=3`` has three inputs), from
libavfilter for its filters and one video pad each way for avdnn's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from avdnn.errors import InvalidArgumentError, NotSupportedError
from avdnn.filters.registry import list_filters
from avdnn.graph.chain import takes
from avdnn.graph.lavfi import check_lavfi_filter
from avdnn.graph.parse import FilterSpec, _check_nul, _skip_ws, parse_filter

__all__ = ["End", "Graph", "Node", "OpenPad", "link_graph", "parse_graph"]

#: A link end: (node index, pad index).
End = tuple[int, int]


@dataclass
class Node:
    """One filter of the graph with its pads and what each pad is linked to."""

    index: int
    spec: FilterSpec
    in_labels: list[str]
    out_labels: list[str]
    #: (pad name, media type) per pad
    in_pads: tuple[tuple[str, str], ...] = ()
    out_pads: tuple[tuple[str, str], ...] = ()
    #: per input pad: the output (node, pad) feeding it; None: an open input of the graph
    sources: list[End | None] = field(default_factory=list)
    #: per output pad: the input (node, pad) it feeds; None: an open output of the graph
    sinks: list[End | None] = field(default_factory=list)
    avdnn: bool = False

    @property
    def multi(self) -> bool:
        """A filter with several inputs or outputs (overlay, hstack, split ...)."""
        return len(self.in_pads) > 1 or len(self.out_pads) > 1

    def describe(self, output: bool) -> str:
        """ffmpeg's describe_filter_link: the filter's name, with the pad's when it has only one."""
        pads = self.out_pads if output else self.in_pads
        return self.spec.name if len(pads) > 1 else f"{self.spec.name}:{pads[0][0] if pads else ''}"


@dataclass(frozen=True)
class OpenPad:
    """An unlinked pad: an input of the graph (fed by a stream) or an output (mapped)."""

    node: int
    pad: int
    label: str | None


@dataclass
class Graph:
    text: str
    nodes: list[Node]
    inputs: list[OpenPad]
    outputs: list[OpenPad]


def parse_graph(text: str) -> list[list[tuple[FilterSpec, list[str], list[str]]]]:
    """The graph's chains (``;``), each a list of (filter, input labels, output labels)."""
    _check_nul(text, "filter graph description")
    if text.lstrip().startswith("sws_flags="):
        raise NotSupportedError(
            "-filter_complex: a 'sws_flags=...;' prefix is not supported yet", option="filter_complex"
        )
    chains: list[list[tuple[FilterSpec, list[str], list[str]]]] = [[]]
    n = len(text)
    pos = _skip_ws(text, 0)
    while pos < n:
        spec, inputs, outputs, pos = parse_filter(text, pos)
        chains[-1].append((spec, inputs, outputs))
        if pos >= n:
            break
        if text[pos] == ";":
            chains.append([])
        elif text[pos] != ",":
            raise InvalidArgumentError(f"Trailing garbage after a filter: {text[pos:]}")
        pos = _skip_ws(text, pos + 1)
    return [c for c in chains if c]


def _pads(node: Node, avdnn_names: list[str]) -> None:
    """The node's pads: avdnn filters have one video pad each way; libavfilter's say themselves."""
    node.avdnn = takes(node.spec)
    if node.avdnn:
        node.in_pads = node.out_pads = (("default", "video"),)
    else:
        check_lavfi_filter(node.spec, avdnn_names)
        from avdnn.media.libav.pads import filter_pads

        pads = filter_pads(node.spec.name, node.spec.args)
        node.in_pads, node.out_pads = pads.inputs, pads.outputs
    node.sources = [None] * len(node.in_pads)
    node.sinks = [None] * len(node.out_pads)


def link_graph(text: str) -> Graph:
    """Parse and link ``text`` as avfilter_graph_segment_link does (errors as libavfilter's)."""
    chains = parse_graph(text)
    if not chains:
        raise InvalidArgumentError("-filter_complex: empty filter graph", option="filter_complex")
    avdnn_names = list_filters()
    order: list[list[Node]] = []
    nodes: list[Node] = []
    for chain in chains:
        order.append([])
        for spec, ins, outs in chain:
            node = Node(len(nodes), spec, ins, outs)
            _pads(node, avdnn_names)
            nodes.append(node)
            order[-1].append(node)
    flat = [(ci, fi, n) for ci, ch in enumerate(order) for fi, n in enumerate(ch)]
    inputs: list[OpenPad] = []
    outputs: list[OpenPad] = []

    def find(label: str, output: bool, start: int) -> End | None:
        """find_linklabel(): the first unlinked pad labeled ``label`` from filter ``start`` on."""
        for _, _, n in flat[start:]:
            labels, linked = (n.out_labels, n.sinks) if output else (n.in_labels, n.sources)
            for i in range(min(len(labels), len(linked))):
                if linked[i] is None and labels[i] == label:
                    return (n.index, i)
        return None

    def link(src: End, dst: End) -> None:
        a, b = nodes[src[0]], nodes[dst[0]]
        if a.out_pads[src[1]][1] != b.in_pads[dst[1]][1]:
            raise InvalidArgumentError(
                f"Media type mismatch between the '{a.spec.label}' filter output pad {src[1]} "
                f"({a.out_pads[src[1]][1]}) and the '{b.spec.label}' filter input pad {dst[1]} "
                f"({b.in_pads[dst[1]][1]})",
                option="filter_complex",
            )
        a.sinks[src[1]], b.sources[dst[1]] = dst, src

    for pos, (ci, fi, node) in enumerate(flat):
        for kind, labels, pads in (("input", node.in_labels, node.in_pads), ("output", node.out_labels, node.out_pads)):
            if len(labels) > len(pads):
                raise InvalidArgumentError(
                    f"More {kind} link labels specified for filter '{node.spec.name}' than it has "
                    f"{kind}s: {len(labels)} > {len(pads)}",
                    option="filter_complex",
                )
        for i in range(len(node.in_pads)):  # link_inputs()
            if node.sources[i] is not None:
                continue
            label = node.in_labels[i] if i < len(node.in_labels) else None
            found = find(label, True, pos) if label else None
            if found is not None:
                link(found, (node.index, i))
            else:
                inputs.append(OpenPad(node.index, i, label))
        for o in range(len(node.out_pads)):  # link_outputs()
            if node.sinks[o] is not None:
                continue
            label = node.out_labels[o] if o < len(node.out_labels) else None
            found = find(label, False, pos) if label else None
            if found is None and label is None and fi + 1 < len(order[ci]):
                nxt = order[ci][fi + 1]
                free = [
                    i
                    for i in range(len(nxt.in_pads))
                    if nxt.sources[i] is None and (i >= len(nxt.in_labels) or not nxt.in_labels[i])
                ]
                found = (nxt.index, free[0]) if free else None
            if found is not None:
                link((node.index, o), found)
            else:
                outputs.append(OpenPad(node.index, o, label))
    return Graph(text, nodes, inputs, outputs)
