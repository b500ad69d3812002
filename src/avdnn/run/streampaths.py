"""Each output stream's path around the chain: copied, or decoded and encoded again.

The chain's video goes through the chain; every other stream of the output gets a path in the
sink (:mod:`avdnn.media.streams.sidepath`): audio and subtitles are copied or encoded (SubRip to
ASS in Matroska, as ffmpeg converts them), data and attachments copied, with the output's
per-stream ``-c``, ``-b:a``, ``-ar``, ``-ac``, ``-af``, ``-max_muxing_queue_size`` and
``-muxing_queue_data_threshold`` (a video that is not copied goes through a chain of its own:
:mod:`avdnn.run.wiring`). A deliberate difference, documented: ``-c copy`` together with ``-vf``
copies the streams that are not filtered (ffmpeg refuses the pair).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from avdnn.errors import AVERROR_ENCODER_NOT_FOUND, InvalidArgumentError, NotFoundError
from avdnn.media.output.muxqueue import MAX_MUXING_QUEUE_SIZE, MUXING_QUEUE_DATA_THRESHOLD, MuxingQueue
from avdnn.media.streams.audio import AudioEncodePath
from avdnn.media.streams.sidepath import SidePath
from avdnn.media.streams.streamcopy import CopyPath
from avdnn.media.streams.subtitles import SubtitleEncodePath
from avdnn.run.selection import StreamOptions

__all__ = ["build_sides", "filtered_copy_error"]


def filtered_copy_error() -> InvalidArgumentError:
    """ffmpeg's refusal of a filter chain on a stream-copied video (exit 234)."""
    return InvalidArgumentError(
        "Filtergraph was specified, but codec copy was selected for the "
        "video stream. Filtering and streamcopy cannot be used together.",
        option="c:v",
    )


def build_sides(
    streams: list[Any],
    opts: StreamOptions,
    *,
    video_outputs: set[int],
    offset: Any,
    bitexact: bool,
    defaults: dict[str, str | None],
    input_trim: tuple[int | None, int | None] = (None, None),
    trim_file: int = 0,
    file_of: Callable[[Any], tuple[int, Any]] | None = None,
) -> list[SidePath]:
    """One path per output stream other than the chained videos (``video_outputs``: their output
    indexes), in output order.

    ``file_of`` gives a stream's input file index and timestamp offset when there are several
    inputs (default: input 0 and ``offset``); each path records its ``input_file``.
    ``input_trim`` is the own trim (its -ss with accurate seek, -t/-to) of input ``trim_file``, the
    one whose demuxer feeds the chain.
    """
    sides: list[SidePath] = []
    base_offset = offset
    counts: dict[str, int] = {}
    for out_index, stream in enumerate(streams):
        nth = counts.get(stream.type, 0)
        counts[stream.type] = nth + 1
        codec = opts.lookup(opts.codecs, stream.type, nth)
        if out_index in video_outputs:
            continue
        file_index, offset = file_of(stream) if file_of is not None else (0, base_offset)
        label = f"{file_index}:{stream.index} {stream.type}"
        trim = input_trim if file_index == trim_file else (None, None)
        if stream.type == "subtitle" and codec != "copy":
            codec = codec or defaults.get("subtitle")
            if not codec:
                raise NotFoundError(
                    "Automatic encoder selection failed: the output format has no default "
                    "subtitle encoder; choose one with -c:s",
                    code=AVERROR_ENCODER_NOT_FOUND,
                    option="c:s",
                )
            sides.append(
                SubtitleEncodePath(stream, out_index, codec=codec, offset=offset, label=label, input_trim=trim)
            )
            continue
        if stream.type in ("data", "attachment", "video") or codec == "copy":  # a video here is copied
            sides.append(CopyPath(stream, out_index, offset=offset, label=label, input_trim=trim))
            continue
        codec = codec or defaults.get("audio")
        if not codec:
            raise InvalidArgumentError(
                f"the output format has no audio encoder for stream 0:{stream.index}", option="c:a"
            )

        def num(name: str, kind: str = stream.type, i: int = nth) -> int | None:
            text = opts.stream_option(name, kind, i)
            return None if text is None else _number(text, name)

        sides.append(
            AudioEncodePath(
                stream,
                out_index,
                codec=codec,
                offset=offset,
                label=label,
                bitexact=bitexact,
                input_trim=trim,
                bit_rate=num("b"),
                sample_rate=num("ar"),
                channels=num("ac"),
                filters=_parse_audio_chain(opts.audio_filters),
                filters_text=opts.audio_filters,
            )
        )
    nths: dict[str, int] = {}
    for side in sides:
        side.input_file = file_of(side.stream)[0] if file_of is not None else 0
        kind = side.stream.type
        nth = nths[kind] = nths.get(kind, -1) + 1
        packets = opts.stream_option("max_muxing_queue_size", kind, nth)
        data = opts.stream_option("muxing_queue_data_threshold", kind, nth)
        side.muxing_queue = MuxingQueue(
            MAX_MUXING_QUEUE_SIZE if packets is None else _number(packets, "max_muxing_queue_size"),
            MUXING_QUEUE_DATA_THRESHOLD if data is None else _number(data, "muxing_queue_data_threshold"),
        )
    return sides


def _number(text: str, name: str) -> int:
    """ffmpeg's numbers with SI suffixes (``128k``, ``1M``)."""
    m = re.fullmatch(r"([0-9.]+)([kKMG]?)(i?)", text.strip())
    if m is None:
        raise InvalidArgumentError(f"Invalid value '{text}' for option '{name}'", option=name)
    base = 1024 if m.group(3) else 1000
    power = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3}[m.group(2)]
    return int(float(m.group(1)) * base**power)


def _parse_audio_chain(text: str) -> list[tuple[str, str | None]]:
    if not text:
        return []
    from avdnn.graph.parse import parse_chain

    return [(spec.name, spec.args) for spec in parse_chain(text)]
