"""Wiring an output: which input streams it takes and how each reaches the sink.

ffmpeg's stream selection (graph.plan) gives the output's streams; this hands the chain's
video to the source, the other streams to side paths in the sink, and makes a companion
demuxer for each other input that feeds the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidArgumentError, NotSupportedError
from ..media.sink import Sink
from ..media.source import Source
from .plan import StreamOptions, build_sides, filtered_copy_error, plan_dispositions, plan_metadata, select_streams


def check_input_codecs(source: Source, names: dict[str, str]) -> None:
    """The input's ``-c:v``/``-c:a``: avdnn decodes with each stream's own decoder, so it must be that one."""
    for kind, name in names.items():
        stream = next((s for s in source.streams if s.type == kind), None)
        have = stream.codec_context.name if stream is not None and stream.codec_context is not None else "none"
        if have != name:
            raise NotSupportedError(
                f"input -c:{kind[0]} {name}: avdnn decodes the stream with its own decoder "
                f"({have}); forcing another decoder is not supported yet",
                option=f"c:{kind[0]}",
            )


def plan_output(
    source: Source, sink: Sink, opts: StreamOptions, filters: str, *, bitexact: bool, others: Sequence[Source] = ()
) -> list[Any]:
    """Choose the output's streams (ffmpeg's rules, graph.plan) and hand them to source and sink.

    Returns the demuxers of the other inputs that feed some of the output's streams (not started).
    """
    defaults = {kind: sink.default_codec(kind) for kind in ("video", "audio", "subtitle")}
    files = {id(s): (k, src.offset) for k, src in enumerate([source, *others]) for s in src.streams}
    streams = select_streams(
        list(source.streams), opts, defaults=defaults, more_files=[list(o.streams) for o in others]
    )
    chain_given = bool(filters.strip())
    video = next((s for s in streams if s.type == "video"), None)
    if (
        video is not None
        and opts.lookup(opts.codecs, "video", 0) == "copy"
        and not (chain_given and "v" not in opts.codecs and "v:0" not in opts.codecs)
    ):
        if chain_given:
            raise filtered_copy_error()
        video = None  # the video is copied: nothing is decoded
    if video is None and chain_given:
        raise InvalidArgumentError(
            "a filter chain (-vf) was given but the output has no video stream to filter", option="vf"
        )
    if video is not None and files[id(video)][0] != 0:
        raise NotSupportedError(
            f"the video of input #{files[id(video)][0]}: the chain's video comes from the "
            "first input in this version (map its video first: -map 0:v)",
            option="map",
        )
    source.use_video(None if video is None else video.index)
    sides = build_sides(
        streams,
        opts,
        video_stream=video,
        offset=source.offset,
        bitexact=bitexact,
        defaults=defaults,
        chain_given=chain_given,
        input_trim=source.input_trim,
        file_of=lambda s: files[id(s)],
    )
    if sink.muxer_name not in ("md5", "framemd5", "hash", "framehash", "crc", "framecrc"):
        sink.dispositions = plan_dispositions(streams)
        sink.metadata, sink.stream_metadata, sink.chapters = plan_metadata(
            streams,
            sides,
            opts,
            container=source.container,
            global_tags=sink.metadata,
            bitexact=sink.bitexact,
            video_encoder=None if video is None else sink.codec_name,
        )
    sink.display_matrix = lambda: source.output_display_matrix
    sink.set_streams(sides, None if video is None else streams.index(video))  # may write the header
    from ..media.companion import CompanionInput

    return [
        CompanionInput(other, [s for s in sides if s.input_file == k], sink)
        for k, other in enumerate(others, start=1)
        if any(s.input_file == k for s in sides)
    ]
