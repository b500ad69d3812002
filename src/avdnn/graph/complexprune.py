"""The part of a ``-filter_complex`` graph upstream of one output pad, as avdnn runs it.

A ``split`` whose other outputs lead elsewhere is a pass-through for this pad (split copies
frames, so the output sees the same frames as in ffmpeg's one graph); an output taken straight
from such a split's pad becomes ``null`` on what feeds the split. Outputs of the kept filters
that lead to other outputs end in a ``nullsink``.
"""

from __future__ import annotations

from collections.abc import Callable

from avdnn.errors import InvalidArgumentError
from avdnn.graph.links import End, Graph, OpenPad
from avdnn.graph.parse import format_chain

__all__ = ["Pruned"]


class Pruned:
    """The graph upstream of one output pad, with the splits that are pass-throughs for it gone."""

    def __init__(self, graph: Graph, target: OpenPad) -> None:
        self.nodes = graph.nodes
        #: the filters upstream of the target, and which of their outputs lead to it
        self.used: dict[int, set[int]] = {}
        todo = [(target.node, target.pad)]
        while todo:
            n, p = todo.pop()
            first = n not in self.used
            self.used.setdefault(n, set()).add(p)
            if first:
                todo += [s for s in self.nodes[n].sources if s is not None]
        self.bypass = {
            n
            for n, pads in self.used.items()
            if self.nodes[n].spec.name == "split" and len(self.nodes[n].out_pads) > 1 and len(pads) == 1
        }
        self.active = [n for n in sorted(self.used) if n not in self.bypass]

    def source(self, n: int, i: int) -> End | None:
        """What feeds input pad ``i`` of ``n`` once bypassed splits are gone (None: an open input)."""
        while True:
            src = self.nodes[n].sources[i]
            if src is None or src[0] not in self.bypass:
                return src
            n, i = src[0], 0

    def feed(self, n: int, i: int) -> tuple[int, int] | None:
        """The open input (node, pad) at the start of the chain that feeds (n, i); None when
        the chain starts at a source filter (``color``, ``testsrc``: no input pad)."""
        while (src := self.nodes[n].sources[i]) is not None:
            n, i = src[0], 0
            if not self.nodes[n].sources:
                return None
        return (n, i)

    def open_pad(self, n: int, i: int) -> tuple[int, int]:
        """The open input behind (n, i), which ``source`` says is fed by a stream."""
        start = self.feed(n, i)
        assert start is not None
        return start

    def path_back(self, n: int, i: int) -> list[int]:
        """The single-pad filters feeding input pad ``i`` of ``n``, from the input stream on."""
        path: list[int] = []
        src = self.source(n, i)
        while src is not None:
            path.insert(0, src[0])
            src = self.source(src[0], 0) if self.nodes[src[0]].sources else None
        return path

    def consumers(self, n: int) -> list[int]:
        return [
            m
            for m in self.active
            for i in range(len(self.nodes[m].sources))
            if (s := self.source(m, i)) is not None and s[0] == n
        ]

    def producers(self, n: int) -> list[int]:
        return [s[0] for i in range(len(self.nodes[n].sources)) if (s := self.source(n, i)) is not None]

    def reach(self, start: set[int], step: Callable[[int], list[int]]) -> set[int]:
        """Every node reached from ``start`` by ``step`` (``start`` itself only when reached)."""
        seen: set[int] = set()
        todo = [m for n in start for m in step(n)]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += step(n)
        return seen

    def text(self, target: OpenPad, maps: dict[tuple[int, int], str]) -> str:
        """The pruned graph as filtergraph text (every link labeled, so the order is free)."""
        chains: list[str] = []
        sinks: list[str] = []  # after the filters: the target's null, the dropped outputs' nullsinks
        fed = {s for m in self.active for i in range(len(self.nodes[m].sources)) if (s := self.source(m, i))}
        if target.node in self.bypass:  # the output is a pad of a pass-through split: null takes its label
            src = self.source(target.node, 0)
            if src is not None:
                fed.add(src)
            ins = f"[{maps[self.open_pad(target.node, 0)]}]" if src is None else f"[avdnn_{src[0]}_{src[1]}]"
            sinks.append(ins + "null" + (f"[{target.label}]" if target.label is not None else ""))
        for n in self.active:
            node = self.nodes[n]
            ins = "".join(
                f"[{maps[self.open_pad(n, i)]}]" if (s := self.source(n, i)) is None else f"[avdnn_{s[0]}_{s[1]}]"
                for i in range(len(node.sources))
            )
            outs = ""
            for p in range(len(node.out_pads)):
                if (n, p) == (target.node, target.pad):
                    outs += f"[{target.label}]" if target.label is not None else ""
                else:
                    outs += f"[avdnn_{n}_{p}]"
                    if (n, p) not in fed:  # leads to another output: dropped for this one
                        sinks.append(f"[avdnn_{n}_{p}]nullsink")
            chains.append(ins + format_chain([node.spec]) + outs)
        return ";".join(chains + sinks)

    def check_acyclic(self) -> None:
        done: set[int] = set()
        for start in self.active:
            path: list[int] = []
            stack: list[tuple[int, bool]] = [(start, True)]
            while stack:
                n, enter = stack.pop()
                if not enter:
                    path.pop()
                    done.add(n)
                    continue
                if n in done:
                    continue
                if n in path:
                    raise InvalidArgumentError(
                        f"-filter_complex: the graph has a cycle through '{self.nodes[n].spec.label}'",
                        option="filter_complex",
                    )
                path.append(n)
                stack.append((n, False))
                stack += [(m, True) for m in self.producers(n)]
