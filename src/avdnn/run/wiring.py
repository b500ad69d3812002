"""Wiring an output: which input streams it takes and how each reaches the sink.

ffmpeg's stream selection (:mod:`avdnn.run.selection`) gives the output's streams; each video
stream that is not copied goes through a chain of its own (a :class:`LanePlan`: its ``-vf``,
``-filter:v:N`` or ``-filter_complex`` pad, its per-stream encoder settings). The first one is
the output's chain on the input it comes from (any input: that one drives the output, its
demuxer feeding the other streams of its file); every other one is run by a pipeline of its
own (:mod:`avdnn.run.lanes`). The other streams get side paths in the sink
(:mod:`avdnn.run.streampaths`), and each other input that feeds the output a companion demuxer.
An output that gets no stream is ffmpeg's "Output file does not contain any stream".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from avdnn.errors import InvalidArgumentError
from avdnn.graph.complexplan import ComplexPlan
from avdnn.media.input.companion import CompanionInput
from avdnn.media.input.source import Source
from avdnn.media.output.sink import Sink
from avdnn.media.output.videolane import VideoSettings
from avdnn.run.complexoutputs import check_reopenable
from avdnn.run.metadata import plan_dispositions, plan_metadata
from avdnn.run.selection import StreamOptions, select_streams
from avdnn.run.streampaths import build_sides, filtered_copy_error

__all__ = ["LanePlan", "OutputPlan", "lane_settings", "plan_output"]

#: Options with a stream specifier that are not the encoder's AVOptions (ffmpeg_opt.c's own).
_NOT_ENCODER = frozenset({"filter", "s", "r", "pix_fmt", "ar", "ac"})


@dataclass
class LanePlan:
    """One video stream of the output that goes through a chain."""

    out_index: int
    #: its rank among the output's video streams (``v:nth``)
    nth: int
    #: the input file (command-line index) and its stream
    file: int
    stream: Any
    chain: str
    #: the -filter_complex part it runs (None: a chain of its own)
    plan: ComplexPlan | None
    settings: VideoSettings


@dataclass
class OutputPlan:
    """What :func:`plan_output` decided: the driving input, the companions, the chained video streams."""

    driver: int
    companions: list[CompanionInput]
    lanes: list[LanePlan]


def lane_settings(opts: StreamOptions, nth: int) -> VideoSettings:
    """Video stream ``nth``'s encoder settings from the options with a stream specifier (the most
    specific wins, as ffmpeg's): ``-c:v:N``, ``-pix_fmt:v:N``, ``-r:v:N``, ``-s:v:N``, and every
    encoder AVOption (``-b:v:1 1M``, ``-crf:v:1 30``, ``-preset:v fast``)."""
    from avdnn.media.values import parse_size

    codec = opts.lookup(opts.codecs, "video", nth)
    size = opts.stream_option("s", "video", nth)
    rate = opts.stream_option("r", "video", nth)
    names = {name for name, _ in opts.per_stream} - _NOT_ENCODER
    options = {name: v for name in sorted(names) if (v := opts.stream_option(name, "video", nth)) is not None}
    try:
        fps = Fraction(rate) if rate is not None else None
    except (ValueError, ZeroDivisionError):
        raise InvalidArgumentError(f"Invalid framerate value: {rate}", option="r") from None
    return VideoSettings(
        codec=None if codec == "copy" else codec,
        pix_fmt=opts.stream_option("pix_fmt", "video", nth),
        rate=fps,
        size=parse_size(size) if size is not None else None,
        options=options,
    )


def plan_output(
    inputs: Sequence[Source | None],
    sink: Sink,
    opts: StreamOptions,
    filters: str,
    *,
    bitexact: bool,
    pads: dict[int, tuple[str, ComplexPlan]] | None = None,
) -> OutputPlan:
    """Choose the output's streams (ffmpeg's rules) and hand them to the inputs and the sink.

    ``inputs`` are the run's inputs in command-line order (None: not opened, no map of this
    output names it); ``filters`` the output's ``-vf`` (every video stream's, unless its own
    ``-filter:v:N``), ``pads`` the ``-filter_complex`` parts by the position of the map that
    takes them. The first chained video may come from any input: that input drives the output.
    Returns the plan (the companions are not started); the sink's target is opened.
    """
    opened = [(k, src) for k, src in enumerate(inputs) if src is not None]
    pads = pads or {}
    defaults = {kind: sink.default_codec(kind) for kind in ("video", "audio", "subtitle")}
    files = {id(s): (k, src.offset) for k, src in opened for s in src.streams}
    own = [[] if src is None else list(src.streams) for src in inputs]
    origins: list[int] = []
    streams = select_streams(own[0], opts, defaults=defaults, more_files=own[1:], origins=origins)
    if not streams and not sink.takes_no_stream:
        raise InvalidArgumentError("Output file does not contain any stream", file=sink.name)
    lanes: list[LanePlan] = []
    nth = 0
    for position, stream in enumerate(streams):
        if stream.type != "video":
            continue
        pad = pads.get(origins[position])
        own_chain = opts.stream_option("filter", "video", nth)
        chain, plan = pad if pad is not None else (own_chain if own_chain is not None else filters, None)
        chained = bool(chain.strip())
        explicit = opts.codecs.get(f"v:{nth}", opts.codecs.get("v"))
        # -c copy with -vf copies the other streams (a deliberate difference: ffmpeg refuses the pair)
        copied = explicit == "copy" or (explicit is None and opts.codecs.get("") == "copy" and not chained)
        if copied and chained:
            raise filtered_copy_error()
        if not copied:
            file = files[id(stream)][0]
            lanes.append(LanePlan(position, nth, file, stream, chain, plan, lane_settings(opts, nth)))
        nth += 1
    for lane in lanes[1:]:  # each further video stream reads its input again (run.lanes)
        src = inputs[lane.file]
        assert src is not None
        check_reopenable(src.url, src.format, lane.file, who=f"video stream #{lane.nth} of the output")
    if not lanes and filters.strip():
        raise InvalidArgumentError(
            "a filter chain (-vf) was given but the output has no video stream to filter", option="vf"
        )
    used = {files[id(s)][0] for s in streams}
    driver = lanes[0].file if lanes else min(used or {opened[0][0]})
    source = inputs[driver]
    assert source is not None  # the streams chosen are those of opened inputs
    source.use_video(lanes[0].stream.index if lanes else None)
    sides = build_sides(
        streams,
        opts,
        video_outputs={lane.out_index for lane in lanes},
        offset=source.offset,
        bitexact=bitexact,
        defaults=defaults,
        input_trim=source.input_trim,
        trim_file=driver,
        file_of=lambda s: files[id(s)],
    )
    # side.input_file from here on: 0 for the driving input's own demuxer, k >= 1 for companion k
    others = [(k, src) for k, src in opened if k != driver]
    relative = {driver: 0, **{k: n for n, (k, _) in enumerate(others, start=1)}}
    for side in sides:
        side.input_file = relative[side.input_file]
    sink.set_streams(sides, [(lane.out_index, lane.settings) for lane in lanes])  # the encoders are chosen
    for lane, video in zip(lanes, sink.lanes, strict=True):
        ctx = lane.stream.codec_context
        video.source = (lane.file, lane.stream.index, ctx.name if ctx is not None else None)
    first = inputs[0] if inputs[0] is not None else source  # ffmpeg copies metadata from input 0
    if sink.muxer_name not in ("md5", "framemd5", "hash", "framehash", "crc", "framecrc"):
        sink.dispositions = plan_dispositions(streams)
        sink.metadata, sink.stream_metadata, sink.chapters = plan_metadata(
            streams,
            sides,
            opts,
            container=first.container,
            global_tags=sink.metadata,
            bitexact=sink.bitexact,
            video_encoders={
                video.video_index: video.codec_name for video in sink.lanes if video.video_index is not None
            },
        )
    sink.display_matrix = lambda: source.output_display_matrix
    sink.begin()  # the target opens (an output without video writes its header)
    companions = [
        CompanionInput(other, [s for s in sides if s.input_file == n], sink)
        for n, (_, other) in enumerate(others, start=1)
        if any(s.input_file == n for s in sides)
    ]
    return OutputPlan(driver, companions, lanes)
