"""``-h filter=NAME`` and ``-filters``: one place that renders what filters and options exist.

avdnn filters describe themselves from their declared options; libavfilter filters from
their AVOptions read through :mod:`avdnn.media.libav`.
"""

from __future__ import annotations

from avdnn.errors import FilterNotFoundError, InvalidArgumentError
from avdnn.filters.options import did_you_mean
from avdnn.filters.registry import get_filter, is_avdnn_filter, list_filters

USAGE = """usage: avdnn [options] [input options] -i INPUT [output options] OUTPUT
       avdnn models [NAME...]        the model zoo (avdnn models --help)

Global options:
  -y / -n                 overwrite / never overwrite the output
  -hide_banner            do not print the banner
  -loglevel LEVEL         quiet, panic, fatal, error, warning, info (default), verbose, debug
  -stats / -nostats       show / hide the progress line (default: shown on a terminal)
  -h filter=NAME          options of a filter (avdnn's or libavfilter's)
  -filters                list the filters
  -version, --version     versions of avdnn, PyAV and FFmpeg's libraries
Input options (before -i):
  -f FMT                  input format, e.g. lavfi for a source graph (-f lavfi -i testsrc)
  -KEY VALUE              any demuxer or decoder AVOption (-framerate 25, -video_size 64x64, ...)
Output options (before the output path):
  -vf / -filter:v CHAIN   the video filter chain, FFmpeg syntax (avdnn's and libavfilter's filters)
  -map SPEC               streams to keep: 0, 0:v, 0:a:1, 0:3, -0:s (remove), 0:a? (optional)
  -vn / -an / -sn / -dn   no video / audio / subtitle / data streams
  -c[:SPEC] CODEC         encoder per stream (-c:v, -c:a, -c:s, -c:a:1, -acodec...), or copy
  -b:a RATE, -ar HZ, -ac N  audio bitrate, sample rate, channels
  -af / -filter:a CHAIN   the audio filter chain (libavfilter)
  -ss / -t / -to TIME     output start, duration, end (ffmpeg's duration syntax)
  -frames:v N             stop after N video frames (the other streams end where the video ended)
  -pix_fmt FMT            output pixel format
  -r RATE                 output frame rate
  -f FMT                  output format: mp4, matroska, webm, md5, framemd5, rawvideo, null, image2...
  -fps_mode MODE          auto, passthrough, cfr, vfr
  -metadata KEY=VALUE     global metadata of the output
  -bitexact               no version strings anywhere (-fflags +bitexact: the muxer's only)
  -KEY VALUE              any encoder or muxer AVOption (-crf 20, -preset fast, -movflags +faststart)
  OUTPUT                  a path, or - for stdout
An option no part of the run takes is an error, as in ffmpeg (Unrecognized option).
"""


def help_text(topic: str) -> str:
    """Text for ``-h`` and ``-h filter=NAME``."""
    if not topic:
        return USAGE
    kind, _, name = topic.partition("=")
    if kind != "filter" or not name:
        raise InvalidArgumentError(f"Unknown help topic '{topic}'; try -h filter=NAME")
    if is_avdnn_filter(name):
        return _avdnn_filter_help(name)
    return _lavfi_filter_help(name)


def _avdnn_filter_help(name: str) -> str:
    cls = get_filter(name)
    lines = [f"Filter {name} (avdnn)", f"  {cls.description}"]
    if cls.pix_fmts:
        lines.append(f"  Pixel formats: {' '.join(cls.pix_fmts)}")
    extra = getattr(cls, "help_extra", None)
    if callable(extra):
        lines.append(extra())
    groups: dict[str, list[str]] = {}
    for opt in cls.options:
        groups.setdefault(opt.group or f"{name} AVOptions", []).append(opt.describe())
    for group, rows in groups.items():
        lines.append(f"{group}:" if group.endswith("AVOptions") else f"{group} AVOptions:")
        lines += rows
    return "\n".join(lines) + "\n"


def _lavfi_filter_help(name: str) -> str:
    from avdnn.media.libav import filteropts

    info = filteropts.filter_info(name)
    if info is None:
        raise FilterNotFoundError(f"Unknown filter '{name}'{did_you_mean(name, _all_names())}")
    lines = [f"Filter {name} (libavfilter)", f"  {info.description or ''}"]
    opts = filteropts.filter_options(name) or []
    if opts:
        lines.append(f"{name} AVOptions:")
    for o in opts:
        if o.type == "const":
            lines.append(f"     {o.name:<22}{'':<12}{o.help}")
            continue
        default = "" if o.default is None else f" (default {o.default})"
        lines.append(f"  {o.name:<23} <{o.type}>{'':<4}{o.help}{default}")
    return "\n".join(lines) + "\n"


def _all_names() -> list[str]:
    import av.filter

    return sorted(set(av.filter.filters_available) | set(list_filters()))


def filters_text() -> str:
    """``-filters``: avdnn's filters first, then every libavfilter video filter PyAV has."""
    import av.filter

    lines = ["Filters (A = avdnn, L = libavfilter):"]
    for name in list_filters():
        lines.append(f" A {name:<20} {get_filter(name).description}")
    for name in sorted(set(av.filter.filters_available) - set(list_filters())):
        lines.append(f" L {name}")
    return "\n".join(lines) + "\n"


def listing_text(name: str) -> str:
    """ffmpeg's ``-encoders``, ``-decoders``, ``-codecs``, ``-formats``, ``-muxers``, ``-demuxers``,
    ``-pix_fmts`` and ``-protocols``, from the FFmpeg PyAV loaded (media.listings)."""
    from avdnn.media.libav import listings

    table = {
        "encoders": lambda: listings.coders_text(True),
        "decoders": lambda: listings.coders_text(False),
        "codecs": listings.codecs_text,
        "formats": listings.formats_text,
        "muxers": lambda: listings.formats_text(demuxers=False),
        "demuxers": lambda: listings.formats_text(muxers=False),
        "pix_fmts": listings.pix_fmts_text,
        "protocols": listings.protocols_text,
    }
    return table[name]()
