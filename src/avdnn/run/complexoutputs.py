"""``-filter_complex`` over a run's outputs: which part of the graph each runs and how its maps read.

ffmpeg-python and other generators write every filter string as a complex graph
(``[0]scale=88:-2[s0]`` mapped with ``-map "[s0]"``), and users write graphs with several
inputs (``[0:v][1:v]overlay=10:10[out]``, ``hstack``, ``vstack``, ``xstack``) or several outputs
(``split``). The graph is parsed with graph.parse's port of graphparser.c and linked as
``avfilter_graph_segment_link`` links it (:mod:`avdnn.graph.links`);
:mod:`avdnn.graph.complexplan` then takes the part upstream of the output's pad:

* a linear part (no filter with several pads) is the output's ``-vf`` chain: every avdnn and
  libavfilter filter works in it, with ffmpeg's result;
* a part with a core of multi-pad libavfilter filters runs as one libavfilter graph around the
  avdnn filters on the chains before and after it (:mod:`avdnn.run.complexgraph`), each core
  input decoded by its own reader of its input file.

The output's maps name the stream its video is decoded from (the graph's input from input #0),
so stream selection, the banner and the other streams (audio of any input) work as for ``-vf``.
Several outputs of one graph (``split`` to two files) run as several outputs of one run, each
its own pruned graph (:func:`graphs_per_output`; ComplexPlan.pruned: what is upstream of a split
runs once per output), several pads mapped by one file are that file's video streams, each its
own pruned part (docs/multistream.md), and :func:`~avdnn.graph.complexplan.check_outputs_mapped`
gives ffmpeg's error for an output nobody maps. What cannot be expressed (an avdnn filter with several inputs
or between multi-pad filters, audio graphs, a cycle, a link used twice, an unknown label) is
refused with a message naming it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from avdnn.errors import InvalidArgumentError, NotSupportedError
from avdnn.graph.complexplan import ComplexPlan, check_outputs_mapped, graph_for_output, graphs_for_outputs
from avdnn.graph.links import link_graph
from avdnn.media.input.live import is_network
from avdnn.media.input.source import Source
from avdnn.media.libav.banner import GraphMapping
from avdnn.run.complexgraph import stream_index
from avdnn.run.selection import GRAPH_VIDEO, StreamOptions

__all__ = ["GraphPad", "apply_complex", "check_reopenable", "graph_mapping", "graphs_per_output"]


def _refuse(what: str) -> NotSupportedError:
    return NotSupportedError(f"-filter_complex: {what} is not supported yet", option="filter_complex")


def graphs_per_output(graph: str | None, maps: Sequence[Sequence[str]], *, n_inputs: int = 1) -> list[str | None]:
    """Each output's ``-filter_complex`` text in a run of ``len(maps)`` outputs (``maps``: each one's
    ``-map`` arguments): the whole graph for a single output, else each output its own part (the
    part its maps need; a split feeds each output its copy; None: it maps none of the graph)."""
    if graph is None or len(maps) < 2:
        return [graph] * len(maps)
    return graphs_for_outputs(graph, maps, n_inputs=n_inputs)


#: A graph output's part: its video chain (for a graph with a core, the graph text) and its plan.
GraphPad = tuple[str, ComplexPlan]


def apply_complex(
    graph: str | None,
    filters: str,
    maps: Sequence[str] | None,
    opts: StreamOptions | None,
    *,
    n_inputs: int = 1,
) -> tuple[str, Sequence[str] | None, StreamOptions | None, ComplexPlan | None, dict[int, GraphPad]]:
    """The output's parts of a ``-filter_complex`` graph, and its maps with each ``[label]`` replaced.

    Returns the first pad's video chain (for a graph with a core, the graph text: the run goes
    through :func:`~avdnn.run.complexgraph.complex_pipeline` with the returned plan), the maps (in
    ``opts`` when given there) with each label replaced by the stream its video is decoded from
    (for a core: its input from input #0), the first pad's plan, and every pad's part by the
    position of the map that takes it (:data:`~avdnn.run.selection.GRAPH_VIDEO` for an unlabeled
    output chosen without maps). Each pad of the output is a video stream of its own, running its
    own part of the graph (an output mapping ``[x]`` and ``[y]`` of a split holds two streams). An
    unlabeled output goes first among explicit maps, as ffmpeg binds it to the first output;
    without maps the other streams are still chosen automatically (``StreamOptions.graph_video``).
    """
    if graph is None:
        return filters, maps, opts, None, {}
    if filters.strip():
        raise InvalidArgumentError(
            "-vf/-af/-filter and -filter_complex cannot be used together for the same stream.", option="filter_complex"
        )
    given = list(opts.maps if opts is not None and opts.maps else maps or [])
    linked = link_graph(graph)
    unlabeled = [p for p in linked.outputs if p.label is None]
    if len(unlabeled) > 1:
        raise _refuse("several unlabeled outputs of the graph")
    labels = [m[1:-1] for m in given if m.startswith("[") and m.endswith("]")]
    if not labels and not unlabeled:
        check_outputs_mapped(graph, [], graph=linked)  # nothing maps the graph's labeled outputs
    wanted: list[str | None] = [None] if unlabeled else []
    wanted += labels
    plans = [graph_for_output(graph, label, n_inputs=n_inputs, graph=linked) for label in wanted]  # unknown first
    check_outputs_mapped(graph, wanted, graph=linked)
    parts: list[tuple[str, GraphPad]] = [(_video_of(plan), (_chain_of(plan, graph), plan)) for plan in plans]
    pads: dict[int, GraphPad] = {}
    if unlabeled:
        video, part = parts.pop(0)
        if given:
            given = [video, *given]
            pads[0] = part
        else:
            opts = copy.copy(opts) if opts is not None else StreamOptions()
            opts.graph_video = video
            pads[GRAPH_VIDEO] = part
    remaining = iter(parts)
    for position, m in enumerate(given):
        if m.startswith("[") and m.endswith("]"):
            video, part = next(remaining)
            given[position] = video
            pads[position] = part
    if opts is not None and opts.maps:
        opts.maps = given
    else:
        maps = given
    first = pads[min(pads)] if GRAPH_VIDEO not in pads else pads[GRAPH_VIDEO]
    return first[0], maps, opts, first[1], pads


def _video_of(plan: ComplexPlan) -> str:
    """The stream a pad's video is decoded from, as a -map argument (for a core: its input from input #0)."""
    if plan.linear:
        if plan.inputs[0].file != 0:
            raise _refuse(f"input pad [{plan.inputs[0].label}] (a second input file)")
        return plan.inputs[0].map
    video = next((gi.map for gi in plan.inputs if gi.file == 0), "")
    if not video:
        raise NotSupportedError(
            "-filter_complex: a graph that reads no video of input #0 is not supported yet", option="filter_complex"
        )
    return video


def _chain_of(plan: ComplexPlan, graph: str) -> str:
    """A linear pad's chain as -vf text; for a core, the graph (its run follows the plan)."""
    return plan.chain_text if plan.linear else graph


def check_reopenable(url: str, fmt: str | None, k: int, *, who: str = "the graph") -> None:
    """Refuse a second reader of input ``k`` (for a core input, or ``who``: another video stream
    of the output) when the input can be read once: a pipe, or a network input (a live stream
    would be two streams, a server may refuse two)."""
    pipe = url == "-" or url.startswith("pipe:")
    if pipe or is_network(url, fmt):
        raise NotSupportedError(
            f"{'-filter_complex: ' if who == 'the graph' else ''}input #{k} is "
            f"{'a pipe' if pipe else 'a network input'}, which can be read only once, "
            f"and {who} needs a reader of its own for it",
            option="i",
        )


def graph_mapping(plan: ComplexPlan, sources: Sequence[Source]) -> GraphMapping:
    """The graph's lines of ``Stream mapping:`` (``sources``: the run's inputs, in order)."""
    rows = []
    for smap, pad in plan.input_pads:
        src = sources[int(smap.split(":")[0])]
        index = stream_index(src, smap)
        ctx = src.streams[index].codec_context
        rows.append((int(smap.split(":")[0]), index, ctx.name if ctx is not None else "none", pad))
    return GraphMapping(rows, plan.output_pad)
