"""The output's tags, chapters and stream dispositions, as ffmpeg copies and sets them."""

from __future__ import annotations

from typing import Any

from avdnn.errors import NotSupportedError
from avdnn.media.streams.sidepath import SidePath
from avdnn.media.streams.streamcopy import CopyPath
from avdnn.run.selection import StreamOptions

__all__ = ["plan_dispositions", "plan_metadata"]


def plan_metadata(
    streams: list[Any],
    sides: list[SidePath],
    opts: StreamOptions,
    *,
    container: Any,
    global_tags: dict[str, str],
    bitexact: bool,
    video_encoders: dict[int, str],
) -> tuple[dict[str, str], dict[int, dict[str, str]], list[Any]]:
    """Global tags, per-stream tags and chapters of the output, as ffmpeg copies and sets them
    (``video_encoders``: the encoder of each chained video stream, by output index).

    Input global tags and each stream's tags are copied (``-map_metadata -1``: none), ``encoder``
    names avdnn's libavformat and each stream's encoder unless bitexact (then "Lavc NAME"), the
    output's ``-metadata`` wins, and the input's chapters are copied (``-map_chapters -1``: none).
    """
    import av

    for flag, name in ((opts.map_metadata, "map_metadata"), (opts.map_chapters, "map_chapters")):
        if flag not in ("0", "-1"):
            raise NotSupportedError(f"-{name} {flag}: only 0 (the input) and -1 (none) are supported", option=name)
    lavf = "Lavf" + ".".join(str(x) for x in av.library_versions["libavformat"])
    lavc = "Lavc" + ("" if bitexact else ".".join(str(x) for x in av.library_versions["libavcodec"]))
    # AVDictionary keys are case-insensitive: Matroska's ENCODER is ffmpeg's encoder
    tags = {} if opts.map_metadata == "-1" else {k: v for k, v in container.metadata.items() if k.lower() != "encoder"}
    if not bitexact:
        tags["encoder"] = lavf
    tags.update(global_tags)
    per_stream: dict[int, dict[str, str]] = {}
    counts: dict[str, int] = {}
    encoders = {side.out_index: side.codec_name for side in sides if not isinstance(side, CopyPath)}
    for index, stream in enumerate(streams):
        nth = counts.get(stream.type, 0)
        counts[stream.type] = nth + 1
        st_tags = (
            {}
            if opts.map_metadata == "-1"
            else {k: v for k, v in stream.metadata.items() if k.lower() not in ("encoder", "duration")}
        )
        enc = encoders.get(index) or video_encoders.get(index)
        if enc is not None:
            st_tags["encoder"] = f"{lavc} {enc}"
        letter = {"video": "v", "audio": "a", "subtitle": "s", "data": "d", "attachment": "t"}[stream.type]
        for spec in ("", letter, f"{letter}:{nth}", str(index)):
            st_tags.update(opts.stream_metadata.get(spec, {}))
        per_stream[index] = st_tags
    chapters = [] if opts.map_chapters == "-1" else list(container.chapters())
    return tags, per_stream, chapters


def plan_dispositions(streams: list[Any]) -> list[int]:
    """Each output stream's disposition, as ffmpeg's set_dispositions: the input's, and where a type
    has several streams and none is the default, the first of them (not an attached picture) is."""
    out = [int(getattr(s, "disposition", 0) or 0) for s in streams]
    count: dict[str, int] = {}
    have_default: set[str] = set()
    for s, d in zip(streams, out, strict=True):
        count[s.type] = count.get(s.type, 0) + 1
        if d & 0x1:
            have_default.add(s.type)
    for i, s in enumerate(streams):
        if count[s.type] < 2 or s.type in have_default or out[i] & 0x400:
            continue
        out[i] |= 0x1  # AV_DISPOSITION_DEFAULT
        have_default.add(s.type)
    return out
