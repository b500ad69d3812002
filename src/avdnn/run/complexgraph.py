"""The core of a ``-filter_complex`` graph: several inputs, one libavfilter graph, one output.

:mod:`.complexplan` cuts a graph into chains from input streams, a core of libavfilter filters
(overlay, hstack, split ...) and a chain after it. Here the core runs as one stage of the
output's :class:`~.pipeline.Pipeline`: its first input from input #0 is the pipeline's own
source and chain (the *anchor*); every other core input is a pipeline of its own over its own
decoder (an input file opened once per pad that reads it), pulled by this stage. Frames enter the
graph in timestamp order across the inputs, each input's EOF when it ends, so framesync filters
(overlay, hstack, xstack) see what ffmpeg's scheduler gives them and memory stays bounded. The
libavfilter filters right after the core (and the output's own ``format``/``scale``/``trim``)
join the same graph, as they would in ffmpeg's one filtergraph.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Generator, Iterator, Sequence
from fractions import Fraction
from typing import Any

from avdnn.errors import AvdnnError, InvalidArgumentError, NotSupportedError
from avdnn.graph.complexplan import ComplexPlan
from avdnn.graph.parse import FilterSpec, format_chain
from avdnn.media.filtergraph import SINK, FilterGraph, probe_graph
from avdnn.media.frame import Frame
from avdnn.media.input.source import Source
from avdnn.media.output.videolane import VideoOutput
from avdnn.run.pipeline import Pipeline
from avdnn.run.selection import StreamMap
from avdnn.run.stats import RunStats

__all__ = ["GraphStage", "complex_pipeline", "stream_index"]

log = logging.getLogger("avdnn")


def _when(frame: Frame) -> Fraction | None:
    if frame.pts is None or not frame.time_base:
        return None
    return frame.pts * Fraction(frame.time_base)


def _before(a: Fraction | None, b: Fraction | None) -> bool:
    """Whether a frame at ``a`` goes in no later than one at ``b`` (no timestamp: at once)."""
    return a is None or b is None or a <= b


class GraphStage:
    """The core's libavfilter graph as a pipeline stage fed by the anchor and its own branches."""

    #: frames in (the anchor's) and out differ by design: the other inputs add theirs
    changes_count = True

    def __init__(self, plan: ComplexPlan, branches: Sequence[Pipeline | None], anchor: int) -> None:
        assert plan.core and plan.exit is not None and branches[anchor] is None
        self.plan = plan
        self.label = plan.label
        self.failed: dict[str, int] = {}
        self._anchor = anchor
        self._branches = list(branches)
        self._iters: list[Generator[Frame, None, None] | None] = [
            b.frames() if b is not None else None for b in branches
        ]
        n = len(branches)
        self._peek: list[Frame | None] = [None] * n
        self._ended = [False] * n  # nothing more comes from input k
        self._eof_sent = [False] * n
        self._rates: list[Fraction | None] = [None] * n
        self._tail: list[FilterSpec] = []
        self._graph: FilterGraph | None = None
        self._flushed = False
        self._out_done = False
        self.configured = False
        #: the graph takes no more frames from the anchor (its output ended, or that input closed)
        self.finished = False
        self.out_rate: Fraction | None = None
        self.out_sar: Fraction | None = None
        self.out_info: Any = None

    @property
    def input_stats(self) -> list[RunStats]:
        """The frame accounting of the branches (the core inputs besides the anchor)."""
        return [b.stats for b in self._branches if b is not None]

    def absorb(self, specs: Sequence[FilterSpec]) -> bool:
        """Take the libavfilter filters that follow the core into its graph (before it runs)."""
        if self.configured:
            return False
        self._tail += specs
        return True

    def output_rate(self, in_rate: Fraction | None) -> Fraction | None:
        self._rates[self._anchor] = in_rate
        return self.out_rate if self.configured else in_rate

    # -- the branches ---------------------------------------------------------------------

    def _next(self, k: int) -> Frame | None:
        """The next frame of branch ``k`` without taking it (None at its end)."""
        if self._peek[k] is None and not self._ended[k]:
            it = self._iters[k]
            assert it is not None
            try:
                self._peek[k] = next(it)
            except StopIteration:
                self._ended[k] = True
        return self._peek[k]

    def _take(self, k: int) -> Frame:
        frame, self._peek[k] = self._peek[k], None
        assert frame is not None
        branch = self._branches[k]
        assert branch is not None
        branch.stats.output_in += 1  # handed to the graph: the branch's output took it
        branch.stats.frames_written += 1
        return frame

    # -- the graph ------------------------------------------------------------------------

    def _configure(self, first: Frame) -> None:
        firsts: list[Frame] = []
        for k, gi in enumerate(self.plan.inputs):
            if k == self._anchor:
                firsts.append(first)
                continue
            frame = self._next(k)
            if frame is None:
                raise InvalidArgumentError(
                    f"-filter_complex: input {gi.map} of '{self.label}' gave no frame", filter=self.label
                )
            branch = self._branches[k]
            assert branch is not None
            self._rates[k] = branch.rate_into(len(branch.stages))
            firsts.append(frame)
        args = [f.buffer_args(self._rates[k]) for k, f in enumerate(firsts)]
        graph = FilterGraph(label=self.label, pts=first.pts)
        buffers = [graph.video_source(a) for a in args]
        ctxs = [graph.add(n.spec.name, n.spec.args, label=n.spec.label) for n in self.plan.core]
        used: set[tuple[int, int]] = set()
        for j, node in enumerate(self.plan.core):
            for pad, (src, p) in enumerate(node.sources):
                if src < 0:
                    graph.link(buffers[p], ctxs[j], 0, pad)
                else:
                    graph.link(ctxs[src], ctxs[j], p, pad)
                    used.add((src, p))
        assert self.plan.exit is not None
        last, last_pad = ctxs[self.plan.exit[0]], self.plan.exit[1]
        used.add(self.plan.exit)
        for spec in self._tail:
            ctx = graph.add(spec.name, spec.args, label=spec.label) if spec.args is not None else graph.add(spec.name)
            graph.link(last, ctx, last_pad, 0)
            last, last_pad = ctx, 0
        graph.link(last, graph.sink("video"), last_pad, 0)
        for j, node in enumerate(self.plan.core):
            for p in range(node.outputs):
                if (j, p) not in used:  # an output leading to another output: dropped here
                    graph.link(ctxs[j], graph.add("nullsink"), p, 0)
        graph.configure()
        self._graph = graph
        self.configured = True
        self._probe(args, first.sample_aspect_ratio)

    def _probe(self, args: list[str], sar: Fraction | None) -> None:
        """The graph's output frame rate and aspect ratio, which PyAV does not report
        (``sar``: the anchor's first frame's, for when the graph cannot be probed)."""
        parts = [f"buffer@avdnn_in{k}={a}[avdnn_in{k}]" for k, a in enumerate(args)]
        used: set[tuple[int, int]] = set()
        for j, node in enumerate(self.plan.core):
            ins = "".join(f"[avdnn_in{p}]" if s < 0 else f"[avdnn_{s}_{p}]" for s, p in node.sources)
            used |= {(s, p) for s, p in node.sources if s >= 0}
            outs = "".join(f"[avdnn_{j}_{p}]" for p in range(node.outputs))
            parts.append(ins + format_chain([node.spec]) + outs)
        assert self.plan.exit is not None
        used.add(self.plan.exit)
        tail = ",".join([format_chain(self._tail)] if self._tail else [])
        exit_label = f"[avdnn_{self.plan.exit[0]}_{self.plan.exit[1]}]"
        parts.append(exit_label + ",".join(x for x in (tail, SINK) if x))
        for j, node in enumerate(self.plan.core):
            parts += [f"[avdnn_{j}_{p}]nullsink" for p in range(node.outputs) if (j, p) not in used]
        try:
            info = probe_graph(";".join(parts))
        except AvdnnError as exc:  # the anchor's rate and aspect ratio, said (a bug passes through)
            anchor = self._rates[self._anchor]
            log.warning(
                "-filter_complex: could not read the frame rate and aspect ratio of '%s' (%s); "
                "using input %s's (%s, %s)",
                self.label,
                exc,
                self.plan.inputs[self._anchor].map,
                anchor or "unknown rate",
                sar or "unknown aspect ratio",
            )
            self.out_rate, self.out_sar = anchor, sar
            return
        self.out_info = info
        self.out_rate = info.frame_rate
        self.out_sar = info.sar if info.sar else None

    def _push(self, k: int, frame: Frame | None) -> None:
        if frame is None:
            if self._eof_sent[k]:
                return
            self._eof_sent[k] = True
        assert self._graph is not None
        if not self._graph.push(None if frame is None else frame.to_av(), k, pts=None if frame is None else frame.pts):
            # the graph takes no more from this input (its output ended, or a trim/shortest closed it)
            self._eof_sent[k] = True
            if k == self._anchor:
                self.finished = True
            else:
                self._ended[k] = True

    def _drain(self) -> Iterator[Frame]:
        if self._out_done:
            return
        assert self._graph is not None
        for av_frame in self._graph.pull():
            frame = Frame.from_av(av_frame)
            frame.sample_aspect_ratio = self.out_sar
            yield frame
        if self._graph.ended:
            self._out_done = self.finished = True

    def _feed_others(self, until: Fraction | None, *, to_end: bool) -> Iterator[Frame]:
        """Push the branches' frames up to ``until`` (all of them: ``to_end``), earliest first."""
        others = [k for k in range(len(self._branches)) if k != self._anchor]
        while not self._out_done:
            live = []
            for k in others:
                if self._next(k) is None:
                    if self._ended[k] and not self._eof_sent[k]:
                        self._push(k, None)
                        yield from self._drain()
                else:
                    live.append(k)
            if not live:
                return
            times = {i: _when(frame) for i in live if (frame := self._peek[i]) is not None}
            k = min(live, key=lambda i: (0, Fraction(0), i) if (t := times[i]) is None else (1, t, i))
            if not to_end and not _before(times[k], until):
                return
            self._push(k, self._take(k))
            yield from self._drain()

    # -- the stage ------------------------------------------------------------------------

    def push(self, frame: Frame) -> Iterator[Frame]:
        if self.finished:
            return
        if not self.configured:
            self._configure(frame)
        yield from self._feed_others(_when(frame), to_end=False)
        self._push(self._anchor, frame)
        yield from self._drain()

    def flush(self) -> Iterator[Frame]:
        if self._flushed:
            return
        self._flushed = True
        if not self.configured:
            return  # the anchor gave no frame: the graph never started (nothing to output)
        self._push(self._anchor, None)
        yield from self._drain()
        yield from self._feed_others(None, to_end=True)
        yield from self._drain()

    def interrupt(self) -> None:
        """The output wants no more frames: the branches' DNN filters stop waiting too."""
        for branch in self._branches:
            for stage in branch.stages if branch is not None else ():
                stop = getattr(stage, "interrupt", None)
                if stop is not None:
                    stop()

    def close(self) -> None:
        first: BaseException | None = None
        for k, branch in enumerate(self._branches):
            if branch is None:
                continue
            if self._peek[k] is not None:  # pulled from the branch, never needed by the graph
                self._peek[k] = None
                branch.stats.over_limit += 1
            if not self._ended[k]:
                branch.stats.stopped_early = True
            it = self._iters[k]
            try:
                if it is not None:
                    it.close()
                branch.close()
            except Exception as exc:  # noqa: BLE001 - close all, report the first
                first = first or exc
        self._graph = None
        if first is not None:
            raise first


def stream_index(source: Source, smap: str) -> int:
    """The index of the video stream of ``source`` that the -map argument ``smap`` names."""
    parsed = StreamMap.parse(smap)
    streams = list(source.streams)
    hits = [s for s in streams if parsed.matches(streams, s)]
    if not hits:
        raise InvalidArgumentError(
            f"Stream specifier '{smap.partition(':')[2]}' in filtergraph description matches no streams.",
            option="filter_complex",
        )
    if hits[0].type != "video":
        raise NotSupportedError(
            f"-filter_complex: input stream {smap} is {hits[0].type}: audio graphs are not supported yet",
            option="filter_complex",
        )
    return int(hits[0].index)


def complex_pipeline(
    plan: ComplexPlan,
    source: Source,
    *,
    open_input: Callable[[int], Source],
    sink: VideoOutput | None = None,
    max_frames: int | None = None,
    threaded: bool | None = None,
) -> Pipeline:
    """The pipeline of one output of a complex graph with a core (``plan.linear`` is False).

    ``source`` is input #0, already open (and wired to ``sink`` by ``plan_output`` when there is
    one); ``open_input(k)`` opens input file ``k`` once more, with its options, for a core input
    that reads it (the pipeline closes it).
    """
    anchor = next((k for k, gi in enumerate(plan.inputs) if gi.file == 0), None)
    if anchor is None:
        raise NotSupportedError(
            "-filter_complex: a graph that reads no video of input #0 is not supported yet", option="filter_complex"
        )
    branches: list[Pipeline | None] = []
    try:
        source.use_video(stream_index(source, plan.inputs[anchor].map))
        for k, gi in enumerate(plan.inputs):
            if k == anchor:
                branches.append(None)
                continue
            src = open_input(gi.file)
            try:
                src.use_video(stream_index(src, gi.map))
                branches.append(Pipeline(src, list(gi.chain), threaded=threaded))
            except BaseException:
                src.close()
                raise
        stage = GraphStage(plan, branches, anchor)
        chain: list[Any] = [*plan.inputs[anchor].chain, stage, *plan.chain]
        pipeline = Pipeline(source, chain, sink=sink, max_frames=max_frames, threaded=threaded)
    except BaseException:
        for branch in branches:
            if branch is not None:
                with contextlib.suppress(Exception):
                    branch.close()
        raise
    pipeline.stats.graph_inputs = stage.input_stats
    return pipeline
