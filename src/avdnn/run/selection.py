"""Stream selection: which input streams one output takes, in what order (ffmpeg's -map rules).

ffmpeg's rules (fftools/ffmpeg_mux_init.c), reproduced:

* without ``-map``: the best video stream (largest picture; the default-disposition one first),
  the best audio stream (most channels), and the first subtitle stream the muxer can carry,
  each only where the muxer has a default codec of that type;
* ``-map`` in order: ``0``, ``0:v``, ``0:a:1``, ``0:3``, ``0:V`` (no attached pictures),
  ``-0:s`` (removes what earlier maps added), a trailing ``?`` (no error when nothing matches);
* ``-vn``/``-an``/``-sn``/``-dn`` remove a type also from explicit maps;
* per stream, ``-c[:SPEC]`` (``copy`` or an encoder; the most specific specifier wins, as in
  ffmpeg: :meth:`StreamOptions.lookup`) and, for audio, ``-b:a``, ``-ar``, ``-ac``, ``-af``.

What each chosen stream goes through is :mod:`avdnn.run.streampaths`; its tags and dispositions
:mod:`avdnn.run.metadata`. Deliberate differences, documented: data streams are taken only when
mapped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from avdnn.errors import AvdnnError, InvalidArgumentError, NotSupportedError
from avdnn.media.libav.streamflags import had_packets

#: :func:`select_streams`' origin of a stream chosen without -map, and of an unlabeled graph's video.
AUTOMATIC = -1
GRAPH_VIDEO = -2

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
                raise InvalidArgumentError(
                    f"Output with label '{text[1:-1]}' does not exist in any defined filter graph, or was "
                    "already used elsewhere.",
                    option="map",
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
    #: the output's video and the other streams are chosen automatically (run.complexoutputs)
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


def select_streams(
    streams: list[Any],
    opts: StreamOptions,
    *,
    defaults: dict[str, str | None],
    accepts: Any = None,
    more_files: Sequence[list[Any]] = (),
    origins: list[int] | None = None,
) -> list[Any]:
    """The input streams an output takes, in output order (ffmpeg's -map / automatic selection).

    ``streams`` are input 0's; ``more_files`` the streams of inputs 1, 2, ... (``-map 1:a``; the
    automatic selection looks at every input, the first best winning, as ffmpeg's does). A stream
    mapped twice is taken twice. ``origins``, when given, receives for each stream taken the
    position of the ``-map`` that took it (:data:`AUTOMATIC` without maps, :data:`GRAPH_VIDEO` for
    the video of an unlabeled ``-filter_complex`` output).
    """
    files = [streams, *more_files]
    letters = {"video": "vn", "audio": "an", "subtitle": "sn", "data": "dn"}

    def disabled(k: int, stream: Any) -> bool:
        return letters.get(stream.type, "") in opts.input_disabled.get(k, set())

    chosen: list[Any] = []
    taken_by: list[int] = []
    if opts.maps:
        parsed = [StreamMap.parse(m) for m in opts.maps]
        for position, smap in enumerate(parsed):
            if smap.file >= len(files):
                raise InvalidArgumentError(f"Invalid input file index: {smap.file}.", option="map")
            own = files[smap.file]
            hits = [s for s in own if smap.matches(own, s)]
            if smap.negative:
                keep = [k for k, s in enumerate(chosen) if not any(s is h for h in hits)]
                chosen, taken_by = [chosen[k] for k in keep], [taken_by[k] for k in keep]
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
            taken_by += [position] * len(hits)
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
        taken_by += [GRAPH_VIDEO if opts.graph_video is not None else AUTOMATIC] * len(chosen)
        if defaults.get("audio") and not opts.an:
            best = _best(streams, "audio", lambda s: s.codec_context.channels if s.codec_context is not None else 0)
            chosen += [best] if best is not None else []
        if not opts.sn:
            chosen += _auto_subtitle(streams, defaults.get("subtitle"), opts)
        taken_by += [AUTOMATIC] * (len(chosen) - len(taken_by))
    drop = {"video": opts.vn, "audio": opts.an, "subtitle": opts.sn, "data": opts.dn}
    keep = [k for k, s in enumerate(chosen) if not drop.get(s.type, False)]
    if origins is not None:
        origins[:] = [taken_by[k] for k in keep]
    return [chosen[k] for k in keep]


def _best(streams: list[Any], kind: str, size: Any) -> Any:
    """ffmpeg's map_auto_video/audio: each file's best stream by its score (size, then whether the
    probe read packets of it, then the default disposition; ties: the first), then the best file's,
    its default bonus taken off. A score of 0 is never chosen (ffmpeg's best scores start at 0): a
    cut file's audio whose channels the probe never found and of which it read no packet."""
    best, best_score = None, 0
    files: dict[int, list[Any]] = {}
    for s in streams:
        if s.type == kind:
            files.setdefault(id(getattr(s, "container", None)), []).append(s)
    for candidates in files.values():
        file_best, file_score = None, 0
        for s in candidates:
            probed = had_packets(s)
            score = size(s) + 100_000_000 * (probed is None or probed) + 5_000_000 * _default(s)
            if kind == "video" and _attached_pic(s):
                score = 1
            if score > file_score:
                file_best, file_score = s, score
        if file_best is None:
            continue
        if not (kind == "video" and _attached_pic(file_best)):
            file_score -= 5_000_000 * _default(file_best)
        if file_score > best_score:
            best, best_score = file_best, file_score
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


def referenced_inputs(maps: Sequence[str], count: int) -> set[int]:
    """The inputs an output's ``-map`` options name (all ``count`` without maps: ffmpeg's automatic
    selection looks at every input). Only these are opened for the output, so an input that
    cannot be read fails the outputs that use it and no other."""
    if not maps:
        return set(range(count))
    try:
        named = {StreamMap.parse(m).file for m in maps if not m.startswith("-")}
    except AvdnnError:
        return set(range(count))  # the map is refused by select_streams, with its own message
    return {k for k in named if k < count} or {0}
