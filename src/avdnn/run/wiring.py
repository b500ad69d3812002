"""Wiring an output: which input streams it takes and how each reaches the sink.

ffmpeg's stream selection (:mod:`avdnn.run.selection`) gives the output's streams; this hands
the chain's video to the input it comes from (any input: that one drives the output), the other
streams to side paths in the sink (:mod:`avdnn.run.streampaths`), and makes a companion demuxer
for each other input that feeds the output.
"""

from __future__ import annotations

from collections.abc import Sequence

from avdnn.errors import InvalidArgumentError
from avdnn.media.input.companion import CompanionInput
from avdnn.media.input.source import Source
from avdnn.media.output.sink import Sink
from avdnn.run.metadata import plan_dispositions, plan_metadata
from avdnn.run.selection import StreamOptions, select_streams
from avdnn.run.streampaths import build_sides, filtered_copy_error

__all__ = ["plan_output"]


def plan_output(
    inputs: Sequence[Source | None], sink: Sink, opts: StreamOptions, filters: str, *, bitexact: bool
) -> tuple[int, list[CompanionInput]]:
    """Choose the output's streams (ffmpeg's rules) and hand them to the inputs and the sink.

    ``inputs`` are the run's inputs in command-line order (None: not opened, no map of this
    output names it). The chain's video may come from any of them: that input drives the
    output (its demuxer feeds the chain and its own other streams); each other input that
    feeds a stream gets a companion demuxer. Returns the driving input's index and the
    companions (not started).
    """
    opened = [(k, src) for k, src in enumerate(inputs) if src is not None]
    defaults = {kind: sink.default_codec(kind) for kind in ("video", "audio", "subtitle")}
    files = {id(s): (k, src.offset) for k, src in opened for s in src.streams}
    own = [[] if src is None else list(src.streams) for src in inputs]
    streams = select_streams(own[0], opts, defaults=defaults, more_files=own[1:])
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
    used = {files[id(s)][0] for s in streams}
    driver = files[id(video)][0] if video is not None else min(used or {opened[0][0]})
    source = inputs[driver]
    assert source is not None  # the streams chosen are those of opened inputs
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
        trim_file=driver,
        file_of=lambda s: files[id(s)],
    )
    # side.input_file from here on: 0 for the driving input's own demuxer, k >= 1 for companion k
    others = [(k, src) for k, src in opened if k != driver]
    relative = {driver: 0, **{k: n for n, (k, _) in enumerate(others, start=1)}}
    for side in sides:
        side.input_file = relative[side.input_file]
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
            video_encoder=None if video is None else sink.codec_name,
        )
    sink.display_matrix = lambda: source.output_display_matrix
    sink.set_streams(sides, None if video is None else streams.index(video))  # may write the header
    return driver, [
        CompanionInput(other, [s for s in sides if s.input_file == n], sink)
        for n, (_, other) in enumerate(others, start=1)
        if any(s.input_file == n for s in sides)
    ]
