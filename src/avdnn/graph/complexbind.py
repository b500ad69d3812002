"""Binding a ``-filter_complex`` graph's open pads: inputs to streams, outputs to ``-map``.

As ffmpeg binds them: a labeled input pad names a stream (``[1:v]``, ``[0:v:1]``, ``[0:2]``), an
unlabeled one takes the first video stream no pad took; a ``-map "[label]"`` takes the output
labeled so, and an output nobody maps is ffmpeg's error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from avdnn.errors import InvalidArgumentError, NotSupportedError
from avdnn.graph.links import Graph, OpenPad, link_graph

__all__ = ["bind_inputs", "check_outputs_mapped", "find_output", "refuse"]

#: an input pad naming an input file's stream: [0], [0:v], [0:v:0], [0:1]
_INPUT_PAD = re.compile(r"^(?P<file>\d+)(?::(?P<type>[vVasdt]))?(?::(?P<index>\d+))?$")


def refuse(what: str) -> NotSupportedError:
    """What -filter_complex cannot run yet, named."""
    return NotSupportedError(f"-filter_complex: {what} is not supported yet", option="filter_complex")


def _label(pad: OpenPad) -> str:
    return f"[{pad.label}]" if pad.label is not None else "(unlabeled)"


def bind_inputs(graph: Graph, n_inputs: int) -> list[str]:
    """The -map argument of the stream feeding each open input of ``graph``, in order.

    As ffmpeg binds them: ``[1:v]``, ``[0]``, ``[0:v:1]``, ``[0:2]`` name a stream; an unlabeled
    input takes the first video stream no pad of the graph took before it (avdnn assumes one
    video stream per input file there: the first one, ``K:v:0``).
    """
    used: set[str] = set()
    maps: list[str] = []
    for pad in graph.inputs:
        node = graph.nodes[pad.node]
        kind = node.in_pads[pad.pad][1]
        if kind != "video":
            raise refuse(f"the {kind} input of '{node.spec.label}' (audio graphs)")
        if pad.label is None:
            free = [k for k in range(n_inputs) if f"{k}:v:0" not in used]
            if not free:
                raise InvalidArgumentError(
                    f"Cannot find an unused video input stream to feed the unlabeled input pad {node.describe(False)}",
                    option="filter_complex",
                )
            maps.append(f"{free[0]}:v:0")
        else:
            m = _INPUT_PAD.match(pad.label)
            if m is None:
                raise InvalidArgumentError(
                    f"Stream specifier '{pad.label}' in filtergraph description {graph.text} matches no streams.",
                    option="filter_complex",
                )
            file = int(m.group("file"))
            if file >= n_inputs:
                raise InvalidArgumentError(
                    f"Invalid file index {file} in filtergraph description {graph.text}.", option="filter_complex"
                )
            stype, index = m.group("type"), m.group("index")
            if stype not in (None, "v", "V"):
                raise refuse(f"input pad [{pad.label}] (a non-video stream: audio graphs)")
            if stype is None:
                maps.append(f"{file}:{index}" if index is not None else f"{file}:v:0")
            else:
                maps.append(f"{file}:{stype}:{index or 0}")
        used.add(maps[-1])
    return maps


def find_output(graph: Graph, label: str | None) -> OpenPad:
    for pad in graph.outputs:
        if pad.label == label:
            return pad
    have = ", ".join(_label(p) for p in graph.outputs) or "none"
    if label is None:
        raise InvalidArgumentError(
            f"-filter_complex: the graph has no unlabeled output (its outputs: {have}); map one with -map '[label]'",
            option="map",
        )
    raise InvalidArgumentError(
        f"Output with label '{label}' does not exist in any defined filter graph, or was already used "
        f"elsewhere. (the graph's outputs: {have})",
        option="map",
    )


def check_outputs_mapped(text: str, labels: Sequence[str | None], *, graph: Graph | None = None) -> None:
    """ffmpeg's error for an output of the graph that no output maps (``labels``: the mapped ones)."""
    graph = graph or link_graph(text)
    for i, pad in enumerate(graph.outputs):
        if pad.label not in labels:
            node = graph.nodes[pad.node]
            raise InvalidArgumentError(
                f"Filter '{node.describe(True)}' has output {i} ({pad.label or 'unlabeled'}) unconnected",
                option="filter_complex",
            )
