"""The run plan of one output: which input streams it takes, in what order, and each one's path.

ffmpeg's rules (fftools/ffmpeg_mux_init.c), reproduced:

* without ``-map``: the best video stream (largest picture; the default-disposition one first),
  the best audio stream (most channels), and the first subtitle stream the muxer can carry,
  each only where the muxer has a default codec of that type;
* ``-map`` in order: ``0``, ``0:v``, ``0:a:1``, ``0:3``, ``0:V`` (no attached pictures),
  ``-0:s`` (removes what earlier maps added), a trailing ``?`` (no error when nothing matches);
* ``-vn``/``-an``/``-sn``/``-dn`` remove a type also from explicit maps;
* per stream, ``-c[:SPEC]`` (``copy`` or an encoder; the most specific specifier wins, as in
  ffmpeg) and, for audio, ``-b:a``, ``-ar``, ``-ac``, ``-af``.

The video stream goes through the chain; the others go around it (:mod:`avdnn.media.streams.sidepath`):
audio and subtitles are copied or encoded (SubRip to ASS in Matroska, as ffmpeg converts them),
data and attachments copied. Deliberate differences, documented: ``-c copy`` together with ``-vf``
copies the streams that are not filtered (ffmpeg refuses the pair); data streams are taken only
when mapped; one video stream per output goes through the chain (others only with ``-c:v copy``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from avdnn.errors import AVERROR_ENCODER_NOT_FOUND, InvalidArgumentError, NotFoundError, NotSupportedError
from avdnn.media.streams.audio import AudioEncodePath
from avdnn.media.streams.sidepath import SidePath
from avdnn.media.streams.streamcopy import CopyPath
from avdnn.media.streams.subtitles import SubtitleEncodePath

_TYPES = {"v": "video", "V": "video", "a": "audio", "s": "subtitle", "d": "data", "t": "attachment"}
_MAP_RE = re.compile(r"^(?P<neg>-)?(?P<file>\d+)(?::(?P<spec>[^?]*))?(?P<opt>\?)?$")


@dataclass(frozen=True)
class StreamMap:
    """One ``-map`` argument."""

    text: str
    negative: bool
    file: int
    type: str | None  # a key of _TYPES
    index: int | None  # n-th of the type, or the absolute stream index when type is None
    optional: bool

    @classmethod
    def parse(cls, text: str) -> StreamMap:
        m = _MAP_RE.match(text)
        if m is None:
            if text.startswith("["):
                raise NotSupportedError(
                    f"-map '{text}': output pads of -filter_complex are not supported yet", option="map"
                )
            raise InvalidArgumentError(f"Invalid stream specifier: {text}", option="map")
        spec = m.group("spec")
        kind: str | None = None
        index: int | None = None
        if spec:
            parts = spec.split(":")
            if parts[0] in _TYPES:
                kind = parts.pop(0)
            if len(parts) > 1 or (parts and not parts[0].isdigit()):
                raise NotSupportedError(
                    f"-map '{text}': stream specifier '{spec}' (programs, metadata, ids) is not supported yet",
                    option="map",
                )
            if parts:
                index = int(parts[0])
        return cls(text, bool(m.group("neg")), int(m.group("file")), kind, index, bool(m.group("opt")))

    def matches(self, streams: list[Any], stream: Any) -> bool:
        if self.type is not None:
            if stream.type != _TYPES[self.type]:
                return False
            if self.type == "V" and _attached_pic(stream):
                return False
            if self.index is None:
                return True
            same = [s for s in streams if s.type == stream.type and not (self.type == "V" and _attached_pic(s))]
            return self.index < len(same) and same[self.index] is stream
        return self.index is None or stream.index == self.index


def _attached_pic(stream: Any) -> bool:
    return bool(int(getattr(stream, "disposition", 0) or 0) & 0x400)  # AV_DISPOSITION_ATTACHED_PIC


def _default(stream: Any) -> bool:
    return bool(int(getattr(stream, "disposition", 0) or 0) & 0x1)  # AV_DISPOSITION_DEFAULT


@dataclass
class StreamOptions:
    """The stream options of one output, as the CLI and the API take them."""

    maps: list[str] = field(default_factory=list)
    vn: bool = False
    an: bool = False
    sn: bool = False
    dn: bool = False
    #: ``-c[:SPEC] NAME`` by specifier ("" for plain -c; "v", "a", "a:1", ...)
    codecs: dict[str, str] = field(default_factory=dict)
    #: per-stream encoder options by (name, specifier): ``-b:a 128k`` is ("b", "a")
    per_stream: dict[tuple[str, str], str] = field(default_factory=dict)
    audio_filters: str = ""
    #: -map_metadata / -map_chapters: "0" (the input, ffmpeg's default) or "-1" (none)
    map_metadata: str = "0"
    map_chapters: str = "0"
    #: -vn/-an/-sn/-dn given as input options, by input file index: those streams are disabled
    #: (ffmpeg's user_set_discard): never chosen, and a map that names one is an error
    input_disabled: dict[int, set[str]] = field(default_factory=dict)
    #: -metadata:s:SPEC key=value, by stream specifier ("a:0", "v", "s"...)
    stream_metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the video of an unlabeled -filter_complex output, as a -map argument: without -map it is
    #: the output's video and the other streams are chosen automatically (graph.complex)
    graph_video: str | None = None

    def lookup(self, table: dict[str, str], media_type: str, nth: int) -> str | None:
        """ffmpeg's rule: the most specific specifier matching the output stream wins."""
        letter = {"video": "v", "audio": "a", "subtitle": "s", "data": "d", "attachment": "t"}[media_type]
        for key in (f"{letter}:{nth}", letter, ""):
            if key in table:
                return table[key]
        return None

    def stream_option(self, name: str, media_type: str, nth: int) -> str | None:
        table = {spec: v for (n, spec), v in self.per_stream.items() if n == name}
        return self.lookup(table, media_type, nth)


@dataclass
class OutputPlan:
    """What one output carries: input streams in output order, and where the video goes."""

    streams: list[Any]
    video_index: int | None  # position of the chain's video stream among ``streams``
    sides: list[SidePath]


def select_streams(
    streams: list[Any],
    opts: StreamOptions,
    *,
    defaults: dict[str, str | None],
    accepts: Any = None,
    more_files: Sequence[list[Any]] = (),
) -> list[Any]:
    """The input streams an output takes, in output order (ffmpeg's -map / automatic selection).

    ``streams`` are input 0's; ``more_files`` the streams of inputs 1, 2, ... (``-map 1:a``; the
    automatic selection looks at every input, the first best winning, as ffmpeg's does).
    """
    files = [streams, *more_files]
    letters = {"video": "vn", "audio": "an", "subtitle": "sn", "data": "dn"}

    def disabled(k: int, stream: Any) -> bool:
        return letters.get(stream.type, "") in opts.input_disabled.get(k, set())

    chosen: list[Any] = []
    if opts.maps:
        parsed = [StreamMap.parse(m) for m in opts.maps]
        for smap in parsed:
            if smap.file >= len(files):
                raise InvalidArgumentError(f"Invalid input file index: {smap.file}.", option="map")
            own = files[smap.file]
            hits = [s for s in own if smap.matches(own, s)]
            if smap.negative:
                chosen = [s for s in chosen if s not in hits]
                continue
            if not hits and not smap.optional:
                raise InvalidArgumentError(
                    f"Stream map '{smap.text}' matches no streams.\nTo ignore this, add a trailing '?' to the map.",
                    option="map",
                )
            for s in hits:
                if disabled(smap.file, s):
                    raise InvalidArgumentError(
                        f"Stream #{smap.file}:{s.index} is disabled and cannot be mapped.", option="map"
                    )
            chosen += hits
    else:
        streams = [s for k, file in enumerate(files) for s in file if not disabled(k, s)]
        if opts.graph_video is not None and not opts.vn:
            smap = StreamMap.parse(opts.graph_video)
            own = files[smap.file]
            chosen += [s for s in own if smap.matches(own, s)][:1]
        elif defaults.get("video") and not opts.vn:
            best = _best(
                streams,
                "video",
                lambda s: s.codec_context.width * s.codec_context.height if s.codec_context is not None else 0,
            )
            chosen += [best] if best is not None else []
        if defaults.get("audio") and not opts.an:
            best = _best(streams, "audio", lambda s: s.codec_context.channels if s.codec_context is not None else 0)
            chosen += [best] if best is not None else []
        if not opts.sn:
            chosen += _auto_subtitle(streams, defaults.get("subtitle"), opts)
    drop = {"video": opts.vn, "audio": opts.an, "subtitle": opts.sn, "data": opts.dn}
    return [s for s in chosen if not drop.get(s.type, False)]


def _best(streams: list[Any], kind: str, size: Any) -> Any:
    """ffmpeg's map_auto_video/audio score: size, then the default disposition; ties: the first."""
    best, best_score = None, -1
    for s in streams:
        if s.type != kind:
            continue
        score = size(s) + 5_000_000 * _default(s)
        if kind == "video" and _attached_pic(s):
            score = 1
        if score > best_score:
            best, best_score = s, score
    return best


def _auto_subtitle(streams: list[Any], muxer_codec: str | None, opts: StreamOptions) -> list[Any]:
    """The first subtitle stream whose kind (text or bitmap) the muxer's subtitle encoder shares."""
    import av

    forced = opts.codecs.get("s")  # only -c:s / -scodec count here (opt_match_per_type_str), not a plain -c
    if not muxer_codec and not forced:
        return []
    out_props = 0
    if muxer_codec:
        try:
            codec = av.Codec(muxer_codec, "w")
            out_props = (codec.text_sub and 1) | (codec.bitmap_sub and 2)
        except (av.FFmpegError, ValueError):
            out_props = 0
    for s in streams:
        if s.type != "subtitle":
            continue
        ctx = s.codec_context
        try:
            dec = av.Codec(ctx.name, "r") if ctx is not None else None
        except (av.FFmpegError, ValueError):
            dec = None
        in_props = 0 if dec is None else (dec.text_sub and 1) | (dec.bitmap_sub and 2)
        if forced or in_props & out_props:
            return [s]
    return []


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
    video_stream: Any,
    offset: Any,
    bitexact: bool,
    defaults: dict[str, str | None],
    chain_given: bool,
    input_trim: tuple[int | None, int | None] = (None, None),
    trim_file: int = 0,
    file_of: Callable[[Any], tuple[int, Any]] | None = None,
) -> list[SidePath]:
    """One path per output stream other than the chain's video, in output order.

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
        if stream is video_stream:
            if codec == "copy" and chain_given:
                raise filtered_copy_error()
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
        if stream.type in ("data", "attachment") or codec == "copy":
            sides.append(CopyPath(stream, out_index, offset=offset, label=label, input_trim=trim))
            continue
        if stream.type == "video":
            raise NotSupportedError(
                f"a second video stream (0:{stream.index}) can only be copied (-c:v copy) "
                "in this version: one chain per output",
                option="map",
            )
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
    for side in sides:
        side.input_file = file_of(side.stream)[0] if file_of is not None else 0
    return sides


def plan_metadata(
    streams: list[Any],
    sides: list[SidePath],
    opts: StreamOptions,
    *,
    container: Any,
    global_tags: dict[str, str],
    bitexact: bool,
    video_encoder: str | None,
) -> tuple[dict[str, str], dict[int, dict[str, str]], list[Any]]:
    """Global tags, per-stream tags and chapters of the output, as ffmpeg copies and sets them.

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
        enc = encoders.get(index) or (
            video_encoder if stream.type == "video" and index not in [s.out_index for s in sides] else None
        )
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
