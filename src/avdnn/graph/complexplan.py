"""What one output of a ``-filter_complex`` graph needs: its inputs, their chains, the core.

A complex graph is linked as libavfilter links it (:mod:`.links`), then cut, for the output pad
an output maps, into the parts avdnn can run:

* the graph pruned to the filters upstream of that pad (:mod:`.complexprune`): a ``split``
  whose other outputs lead elsewhere is a pass-through for this pad (split copies frames, so
  this output sees the same frames as in ffmpeg's one graph), other outputs leading elsewhere
  end in a ``nullsink``; its open inputs bound to streams as ffmpeg binds them (:mod:`.complexbind`);
* per input pad of the *core*, a linear chain from an input stream: the part up to its last avdnn
  filter runs as pipeline stages over that input's own decoder; the libavfilter filters after it
  join the core;
* the core: the filters with several inputs or outputs (overlay, hstack, split, ...) and every
  libavfilter filter between them, run as one libavfilter graph with one buffer source per core
  input (:mod:`avdnn.run.complexgraph`);
* the chain after the core (avdnn and libavfilter filters) up to the output.

A graph without a filter of several pads is linear: one chain from one input stream. What cannot
be expressed (an avdnn filter between multi-pad filters, audio filters, a cycle, an unknown
label) is refused with a message naming it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from avdnn.errors import InvalidArgumentError
from avdnn.graph.complexbind import bind_inputs, check_outputs_mapped, find_output, refuse
from avdnn.graph.complexprune import Pruned
from avdnn.graph.links import Graph, link_graph
from avdnn.graph.parse import FilterSpec, format_chain

__all__ = [
    "ComplexPlan",
    "CoreNode",
    "GraphInput",
    "bind_inputs",
    "check_outputs_mapped",
    "graph_for_output",
    "graphs_for_outputs",
]

#: a core source: (-1, k) is core input k, (j, p) output pad p of core node j
Source = tuple[int, int]


@dataclass(frozen=True)
class GraphInput:
    """A core input (or the linear graph's input): the stream that feeds it and its chain."""

    #: the input stream, as a -map argument ("0:v:0", "1:v:0", "0:1")
    map: str
    #: the input file's index
    file: int
    #: the pad's label as written (None: unlabeled)
    label: str | None
    #: the stages between the stream and the core (up to the last avdnn filter; may be empty)
    chain: tuple[FilterSpec, ...]


@dataclass(frozen=True)
class CoreNode:
    """A libavfilter filter of the core and, per input pad, what feeds it."""

    spec: FilterSpec
    sources: tuple[Source, ...]
    #: how many output pads it has (those that feed nothing in the core end in a nullsink)
    outputs: int


@dataclass(frozen=True)
class ComplexPlan:
    """The part of a complex graph that one output (one output label) runs."""

    text: str
    output_label: str | None
    #: the core's inputs in buffer-source order (a linear graph: its one input)
    inputs: tuple[GraphInput, ...]
    #: the core's filters (empty: a linear graph, whose chain is ``chain``)
    core: tuple[CoreNode, ...]
    #: (core node, output pad) whose frames leave the core
    exit: Source | None
    #: the stages after the core, up to the output (a linear graph: the whole chain)
    chain: tuple[FilterSpec, ...]
    #: this output's part of the graph as -filter_complex text: the filters upstream of its pad,
    #: pass-through splits left out, other outputs ending in nullsink, input pads as streams
    pruned: str = ""
    #: the pruned graph's open inputs: (input stream as a -map argument, ffmpeg's name of the pad)
    input_pads: tuple[tuple[str, str], ...] = ()
    #: ffmpeg's name of the output pad ("overlay:default"), for the Stream mapping block
    output_pad: str = ""

    @property
    def linear(self) -> bool:
        return not self.core

    @property
    def chain_text(self) -> str:
        """The post chain (the whole chain of a linear graph) as a -vf string."""
        return format_chain(list(self.chain))

    @property
    def label(self) -> str:
        """The core's filters, for messages and the frame accounting."""
        return ",".join(n.spec.label for n in self.core) or self.chain_text


def graph_for_output(text: str, label: str | None, *, n_inputs: int = 1, graph: Graph | None = None) -> ComplexPlan:
    """The part of ``text`` that the output mapping ``[label]`` (None: the unlabeled output) runs.

    ``n_inputs``: how many input files the command has (for ``[K:v]`` and unlabeled inputs).
    Each output of a graph with several outputs runs its own pruned graph (the same frames as
    ffmpeg's one graph: see the module docstring).
    """
    graph = graph or link_graph(text)
    for node in graph.nodes:
        audio = [k for _, k in (*node.in_pads, *node.out_pads) if k != "video"]
        if audio:
            raise refuse(f"'{node.spec.label}' ({audio[0]} filters: audio graphs)")
    maps = bind_inputs(graph, n_inputs)
    open_in = {(p.node, p.pad): (p, m) for p, m in zip(graph.inputs, maps, strict=True)}
    target = find_output(graph, label)
    g = Pruned(graph, target)
    pruned = g.text(target, {k: m for k, (_, m) in open_in.items()})
    pads = tuple(
        (m, graph.nodes[p.node].describe(False)) for p, m in zip(graph.inputs, maps, strict=True) if p.node in g.used
    )
    out_pad = graph.nodes[target.node].describe(True)
    nodes = graph.nodes
    g.check_acyclic()
    multi = {n for n in g.active if nodes[n].multi}
    # an output taken straight from a pass-through split: what feeds the split, then a null
    split_out = target.node in g.bypass
    tail = (FilterSpec("null", None, None),) if split_out else ()
    if not multi:
        path = [*g.path_back(target.node, 0)] if nodes[target.node].sources else []
        if not split_out:
            path.append(target.node)
        first = path[0] if path else target.node
        start = g.feed(first, 0) if nodes[first].sources else None
        if start is None:
            raise refuse(f"a graph that reads no input stream ('{nodes[first].spec.label}' generates its frames)")
        pad, smap = open_in[start]
        return ComplexPlan(
            text=text,
            output_label=label,
            inputs=(GraphInput(smap, int(smap.split(":")[0]), pad.label, ()),),
            core=(),
            exit=None,
            chain=(*(nodes[m].spec for m in path), *tail),
            pruned=pruned,
            input_pads=pads,
            output_pad=out_pad,
        )
    core = multi | (g.reach(multi, g.consumers) & g.reach(multi, g.producers))
    for n in sorted(core):
        if nodes[n].avdnn:
            raise refuse(
                f"the avdnn filter '{nodes[n].spec.label}' between filters with several inputs or outputs "
                "(avdnn filters run on the chains before and after them)"
            )
    # core inputs: a chain from an input stream each; its libavfilter tail joins the core
    inputs: list[GraphInput] = []
    buffer_of: dict[tuple[int, int], int] = {}
    for n in sorted(core):
        for i in range(len(nodes[n].sources)):
            src = g.source(n, i)
            if src is not None and src[0] in core:
                continue
            path = g.path_back(n, i)
            start = g.feed(n, i)
            if start is None:  # a chain from a source filter: all of it runs in the core's graph
                avdnn = [nodes[m].spec.label for m in path if nodes[m].avdnn]
                if avdnn:
                    raise refuse(f"the avdnn filter '{avdnn[0]}' on a chain from a source filter")
                core.update(path)
                continue
            last = max((k for k, m in enumerate(path) if nodes[m].avdnn), default=-1)
            core.update(path[last + 1 :])
            pad, smap = open_in[start]
            buffer_of[(path[last + 1], 0) if last + 1 < len(path) else (n, i)] = len(inputs)
            inputs.append(
                GraphInput(smap, int(smap.split(":")[0]), pad.label, tuple(nodes[m].spec for m in path[: last + 1]))
            )
    order = sorted(core)
    index = {n: k for k, n in enumerate(order)}
    core_nodes = []
    for n in order:
        srcs: list[Source] = []
        for i in range(len(nodes[n].sources)):
            src = g.source(n, i)
            srcs.append((-1, buffer_of[(n, i)]) if src is None or src[0] not in core else (index[src[0]], src[1]))
        core_nodes.append(CoreNode(nodes[n].spec, tuple(srcs), len(nodes[n].out_pads)))
    # after the core: a linear chain to the target
    post: list[int] = []
    n, p = target.node, target.pad
    if split_out:
        src = g.source(n, 0)
        assert src is not None  # a split after the core
        n, p = src
    while n not in core:
        post.insert(0, n)
        src = g.source(n, 0)
        assert src is not None  # a chain after the core starts in the core
        n, p = src
    return ComplexPlan(
        text=text,
        output_label=label,
        inputs=tuple(inputs),
        core=tuple(core_nodes),
        exit=(index[n], p),
        chain=(*(nodes[m].spec for m in post), *tail),
        pruned=pruned,
        input_pads=pads,
        output_pad=out_pad,
    )


def graphs_for_outputs(text: str, maps: Sequence[Sequence[str]], *, n_inputs: int = 1) -> list[str | None]:
    """Each output's own -filter_complex text in a run with several outputs (None: it maps none).

    ``maps``: each output's -map arguments, in output order. As ffmpeg binds them, a ``[label]``
    goes to the output that maps it (once: a label mapped twice is ffmpeg's error) and the
    unlabeled outputs to the first output; an output nobody maps is ffmpeg's error. Each output
    then runs its text (``ComplexPlan.pruned``) with its own maps as a one-output run does.
    """
    graph = link_graph(text)
    labels = [[m[1:-1] for m in out if m.startswith("[") and m.endswith("]")] for out in maps]
    seen: set[str] = set()
    for label in (lab for out in labels for lab in out):
        if label in seen:
            raise InvalidArgumentError(
                f"Output with label '{label}' does not exist in any defined filter graph, or was already used "
                "elsewhere.",
                option="map",
            )
        seen.add(label)
    unlabeled = [p for p in graph.outputs if p.label is None]
    bound: list[list[str | None]] = [[*out] for out in labels]
    if bound and unlabeled:
        none: list[str | None] = [None] * len(unlabeled)
        bound[0] = none + bound[0]
    for out in bound:
        for wanted in out:
            find_output(graph, wanted)  # an unknown label first, as ffmpeg
    check_outputs_mapped(text, [lab for out in bound for lab in out], graph=graph)
    texts: list[str | None] = []
    for out in bound:
        # an output mapping several pads (a video stream each) runs each pad's part; their
        # internal link labels are made distinct, so the parts are one graph text again
        parts = [
            re.sub(
                r"\[avdnn_",
                f"[avdnn{k}_" if k else "[avdnn_",
                graph_for_output(text, wanted, n_inputs=n_inputs, graph=graph).pruned,
            )
            for k, wanted in enumerate(out)
        ]
        texts.append(";".join(parts) if parts else None)
    return texts
