"""One run built from its :class:`~avdnn.run.request.RunRequest`: inputs opened, streams wired, started.

The order is ffmpeg's: the request's options are checked before anything opens (a
``-filter_complex`` graph is cut to this output's part first), then the inputs the output's maps
name are opened, the sink is made, the streams are chosen and wired to it, the banner is
printed, and the pipeline runs. Whatever fails on the way closes what was opened before it (an
output already created is aborted, never left half-written). Without an output the frames are
handed to the caller (:class:`~avdnn.run.framestream.FrameStream`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from avdnn.errors import AvdnnError, InvalidArgumentError, NotSupportedError
from avdnn.graph.template import fill_fields
from avdnn.media.input.source import Source
from avdnn.media.libav.banner import announce_output
from avdnn.media.output.sidefile import overwrite_scope, refuse_existing
from avdnn.media.output.sink import Sink
from avdnn.media.output.target import check_not_an_input
from avdnn.media.output.videolane import VideoLane
from avdnn.run.complexgraph import complex_pipeline
from avdnn.run.complexoutputs import apply_complex, check_reopenable, graph_mapping
from avdnn.run.framestream import FrameStream, LimitedFrameStream
from avdnn.run.inputs import check_input_codecs, dump_input, open_source
from avdnn.run.lanes import LaneRunner
from avdnn.run.pipeline import Pipeline
from avdnn.run.request import (
    RunRequest,
    check_output_options,
    fold_stream_options,
    output_size,
    output_window,
    refuse_output_only,
)
from avdnn.run.selection import StreamOptions, referenced_inputs
from avdnn.run.stats import RunStats
from avdnn.run.stop import current_stop
from avdnn.run.wiring import LanePlan, OutputPlan, plan_output

__all__ = ["RunBuilder"]

#: Source keywords that shift or cut the input's timeline (they act on the driving input only).
_TIMING_OPTIONS = {"seek", "duration", "to", "itsoffset", "stream_loop", "realtime", "readrate"}


class RunBuilder:
    """Checks a request, then builds its run: :meth:`frames` without an output, :meth:`run` with one."""

    def __init__(self, request: RunRequest) -> None:
        r = self.request = request
        self.filters, self.maps, self.stream_options, self.graph, self.pads = apply_complex(
            r.filter_complex, r.filters, r.map, r.stream_options, n_inputs=r.n_inputs
        )
        self.start_us, self.recording_us = output_window(r.start_time, r.recording_time, r.stop_time)
        self.rate = check_output_options(rate=r.rate, fps_mode=r.fps_mode, pix_fmt=r.pix_fmt, frames=r.frames)

    def _open_input(self, k: int) -> Source:
        """Input ``k`` once more, for a core input of the graph (its own decoder)."""
        url, fmt, options = self.request.input_of(k)
        check_reopenable(url, fmt, k)
        return open_source(
            url, input_format=fmt, input_options=options, source_options=self.request.source_options_of(k)
        )

    def side_files(self) -> list[tuple[str, str]]:
        """The files the request's filters write (``metadata_jsonl=file=``...): (filter label, path)."""
        r = self.request
        # with -filter_complex the chain is cut from the graph (labels and all): the graph says it
        chains = [(r.filter_complex, True) if r.filter_complex else (self.filters, False)]
        if self.stream_options is not None:  # -filter:v:1 ...: a chain of another video stream
            chains += [(text, False) for (name, _), text in self.stream_options.per_stream.items() if name == "filter"]
        filled = [fill_fields(text, {}, graph=graph) for text, graph in chains if text]
        return [pair for f in filled for pair in zip(f.writers, f.writes, strict=True)]

    def frames(self) -> FrameStream:
        """The frames leaving the chain, for the caller's loop (the request has no output)."""
        with overwrite_scope(self.request.overwrite):
            return self._frames()

    def _frames(self) -> FrameStream:
        r = self.request
        # every keyword is consumed or refused: frames handed to the caller come from input 0
        # through the chain (or from the graph's inputs), so the output's options have no use
        # (but overwrite: it rules the files the filters write, when they write one)
        given = {**r.keywords(), "map": self.maps, "stream_options": self.stream_options, "rate": self.rate}
        if self.side_files():
            given.pop("overwrite")
        refuse_output_only(given, graph=None if self.graph is None else self.graph.linear)
        if len(self.pads) > 1:
            raise InvalidArgumentError(
                "-filter_complex: several outputs of the graph, but the run has no output (its frames are "
                "iterated): give output=... or map one",
                option="filter_complex",
            )
        source = open_source(
            r.input, input_format=r.input_format, input_options=r.input_options, source_options=r.source_options
        )
        try:
            check_input_codecs(source, r.input_codecs or {})
            if r.banner:
                dump_input(source)
            pipeline = (
                complex_pipeline(self.graph, source, open_input=self._open_input, max_frames=r.frames)
                if self.graph is not None and not self.graph.linear
                else Pipeline(source, self.filters, max_frames=r.frames)
            )
        except BaseException:
            source.close()
            raise
        stream = FrameStream(pipeline)
        return LimitedFrameStream(stream, r.frames) if r.frames is not None else stream

    def run(self) -> RunStats:
        """Run to the request's output; returns the accounting, or raises after finishing the output."""
        with overwrite_scope(self.request.overwrite):  # the files the filters write: -y or not, as the output
            return self._run()

    def _run(self) -> RunStats:
        r = self.request
        opts = fold_stream_options(
            self.stream_options,
            map=self.maps,
            vn=r.vn,
            an=r.an,
            sn=r.sn,
            dn=r.dn,
            codec=r.codec,
            audio_codec=r.audio_codec,
            subtitle_codec=r.subtitle_codec,
            audio_bitrate=r.audio_bitrate,
            audio_rate=r.audio_rate,
            audio_channels=r.audio_channels,
            audio_filters=r.audio_filters,
        )
        used = referenced_inputs(opts.maps, r.n_inputs)
        inputs: list[Source | None] = [None] * r.n_inputs
        if 0 in used:
            inputs[0] = open_source(
                r.input,
                input_format=r.input_format,
                input_options=r.input_options,
                source_options=r.source_options,
                video=False,
            )
        try:
            if inputs[0] is not None:
                check_input_codecs(inputs[0], r.input_codecs or {})
                if r.banner:
                    dump_input(inputs[0])
            sink = self._sink(opts)
        except BaseException:
            _close_all(inputs)
            raise
        lanes: list[LaneRunner] = []
        try:
            plan = self._wire(inputs, used, sink, opts)
            source = inputs[plan.driver]
            assert source is not None
            others = [src for k, src in enumerate(inputs) if src is not None and k != plan.driver]
            first = plan.lanes[0] if plan.lanes else None
            if r.banner:
                opened = [src for src in inputs if src is not None]
                graphs = {
                    lane.out_index: graph_mapping(lane.plan, opened) for lane in plan.lanes if lane.plan is not None
                }
                announce_output(sink, graphs)
            if first is not None and first.plan is not None and not first.plan.linear:
                pipeline = complex_pipeline(
                    first.plan, source, open_input=self._open_input, sink=sink, max_frames=r.frames
                )
            else:
                pipeline = Pipeline(source, first.chain if first is not None else "", sink=sink, max_frames=r.frames)
            for lane, video in zip(plan.lanes[1:], sink.lanes[1:], strict=True):
                lanes.append(LaneRunner(self._lane_pipeline(lane, video), video, sink))
            pipeline.stats.more_video = [runner.stats for runner in lanes]
        except BaseException:
            for runner in lanes:
                with contextlib.suppress(AvdnnError):
                    runner.pipeline.close()
            _close_all(inputs)
            sink.abort()
            raise
        companions = plan.companions
        try:
            for companion in companions:
                companion.start()
            for runner in lanes:
                runner.start()
            return pipeline.run(r.progress)
        finally:
            for companion in companions:
                companion.close()  # its input too (when its demuxer ended: never under it)
            fed = {id(companion.source) for companion in companions}
            for other in others:
                if id(other) not in fed:
                    other.close()

    def _lane_pipeline(self, lane: LanePlan, video: VideoLane) -> Callable[[], Pipeline]:
        """How another video stream's pipeline is made: its input opened again, its own chain."""
        r = self.request

        def build() -> Pipeline:
            url, fmt, options = r.input_of(lane.file)
            check_reopenable(url, fmt, lane.file)
            source = open_source(
                url, input_format=fmt, input_options=options, source_options=r.source_options_of(lane.file)
            )
            try:
                source.use_video(lane.stream.index)
                video.display_matrix = lambda: source.output_display_matrix
                if lane.plan is not None and not lane.plan.linear:
                    return complex_pipeline(
                        lane.plan, source, open_input=self._open_input, sink=video, max_frames=r.frames
                    )
                return Pipeline(source, lane.chain, sink=video, max_frames=r.frames)
            except BaseException:
                source.close()
                raise

        return build

    def _sink(self, opts: StreamOptions) -> Sink:
        """The output, created (or refused: it exists without ``overwrite``) before the other inputs open."""
        r = self.request
        assert r.output is not None, "run() needs an output; frames() iterates"
        if isinstance(r.output, str) and r.overwrite:  # without -y the file exists: ffmpeg says that first
            check_not_an_input(r.output, [r.input_of(k)[:2] for k in range(r.n_inputs)])
        for label, path in self.side_files():  # before the output is created, not after
            try:
                refuse_existing([path], r.overwrite)
            except AvdnnError as exc:
                raise exc.with_context(filter=label) from None
        stop = current_stop()
        return Sink(
            r.output,
            format=r.format,
            codec=None if r.codec == "copy" else r.codec,
            pix_fmt=r.pix_fmt,
            rate=self.rate,
            overwrite=r.overwrite,
            bitexact=r.bitexact,
            codec_options=r.codec_options,
            fps_mode=r.fps_mode,
            metadata=r.metadata,
            start_time=self.start_us,
            recording_time=self.recording_us,
            format_options=r.format_options,
            size=output_size(r.size),
            stopped=stop.is_set if stop is not None else None,
        )

    def _wire(self, inputs: list[Source | None], used: set[int], sink: Sink, opts: StreamOptions) -> OutputPlan:
        """Open the other inputs the output uses, choose its streams and wire them to the sink.

        Returns the plan: the driving input's index (whose video feeds the first chain), the
        companions (the other inputs feeding streams around the chain, not started) and the
        output's chained video streams.
        """
        r = self.request
        for k, (url, fmt, options) in enumerate(r.more_inputs, start=1):
            if k in used:
                inputs[k] = more = open_source(
                    url, input_format=fmt, input_options=options, source_options=r.source_options_of(k), video=False
                )
                if r.banner:
                    dump_input(more, k)
        plan = plan_output(
            inputs, sink, opts, r.filters if self.graph is None else "", bitexact=sink.bitexact, pads=self.pads
        )
        driver, companions = plan.driver, plan.companions
        for companion in companions:  # an input feeding streams around the chain is read as is
            k = next(k for k, src in enumerate(inputs) if src is companion.source)
            timing = set(r.source_options_of(k) or {}) & _TIMING_OPTIONS
            if timing:
                raise NotSupportedError(
                    f"input options {', '.join(sorted(timing))} of input #{k}, whose streams go around "
                    f"the chain of input #{driver}'s video, are not supported yet",
                    option="i",
                )
            if companion.source.live:
                # its demuxer has neither the live input's reopening nor its drop queue (it paces itself
                # on the video, which a live input cannot wait for): refused rather than read unbounded
                raise NotSupportedError(
                    f"input #{k} '{companion.source.name}' is live but does not drive the output (its streams "
                    f"would go around the chain of input #{driver}'s video, without a live input's reopening "
                    "and drop queue): not supported yet; take the chain's video from the live input, or give "
                    "each live input an output of its own",
                    option="map",
                )
        return plan


def _close_all(inputs: Sequence[Source | None]) -> None:
    for src in inputs:
        if src is not None:
            src.close()
