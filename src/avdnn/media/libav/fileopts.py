"""Where libav reaches past the input and output it is given: the options that name a file, a URL,
a socket or code, and the formats that open other files themselves.

FFmpeg opens more than ``-i`` and the output: a filter reads a LUT or writes a stats file, an
encoder writes its two-pass log, a demuxer follows the entries of a playlist, a muxer writes
segments beside its output. Whoever runs a stranger's command line (``avdnn serve``) must see every
one of them. These tables say, for each name, what it opens; :mod:`avdnn.graph.files` walks a
filtergraph with them and :mod:`avdnn.api.confine` decides. Entries were read from FFmpeg 8's
sources (the filters' AVOptions, libavformat's demuxers and muxers); a filter option that is not
in the table but is named like a file is caught by :func:`fileish` and refused, so a filter added
later is never let through unseen.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = [
    "AV_OPTIONS",
    "DEVICE_FORMATS",
    "DIR",
    "FORMAT",
    "FORMAT_OPTS",
    "GRAPH",
    "LISTEN",
    "MODEL",
    "NESTED_DEMUXERS",
    "NESTED_MUXERS",
    "NETWORK_PLAYLISTS",
    "OUT_URL",
    "PARAMS",
    "POLICY",
    "READ",
    "REFUSED",
    "REFUSED_FILTERS",
    "URL",
    "WRITE",
    "FileOption",
    "fileish",
    "filter_files",
    "local_demuxers",
]

#: what an option's value is
READ = "read"  # a local file read
WRITE = "write"  # a local file written
DIR = "dir"  # a local folder read (fonts, OCR data)
URL = "url"  # an input: a URL or a local path, as -i takes it
OUT_URL = "out_url"  # an output: a URL or a local path, as an output takes it
MODEL = "model"  # a model file (a DNN filter's ``model``)
FORMAT = "format"  # a demuxer's name
FORMAT_OPTS = "format_opts"  # AVOptions handed to a nested open (a dict): set by the caller only
GRAPH = "graph"  # a filtergraph (the lavfi device's ``graph``)
PARAMS = "params"  # an encoder's own ``key=value:...`` settings, some of them files
LISTEN = "listen"  # makes a protocol listen (its value says whether)
POLICY = "policy"  # the allow-lists themselves (protocol_whitelist...): set by the caller only
REFUSED = "refused"  # reaches what no path check can bound (a graph file, external references)


@dataclass(frozen=True)
class FileOption:
    """What an option's value opens; ``default``: the file it opens when it is not given."""

    kind: str
    default: str | None = None


def _same(kind: str, *names: str, default: str | None = None) -> dict[str, FileOption]:
    return {n: FileOption(kind, default) for n in names}


_MOVIE = {**_same(URL, "filename"), **_same(FORMAT, "format_name", "f"), **_same(FORMAT_OPTS, "format_opts")}
_STATS = _same(WRITE, "stats_file", "f")
_DNN = _same(MODEL, "model")

#: libavfilter's filters and their options that open something (aliases listed as options of their own)
_FILTER_FILES: dict[str, dict[str, FileOption]] = {
    "movie": _MOVIE,
    "amovie": _MOVIE,
    "metadata": _same(WRITE, "file"),
    "ametadata": _same(WRITE, "file"),
    "arnndn": _same(READ, "model", "m"),
    "cellauto": _same(READ, "filename", "f"),
    "life": _same(READ, "filename", "f"),
    "curves": {**_same(READ, "psfile"), **_same(WRITE, "plot")},
    "selectivecolor": _same(READ, "psfile"),
    "deshake": _same(WRITE, "filename"),
    "fieldhint": _same(READ, "hint"),
    "firequalizer": _same(WRITE, "dumpfile"),
    "fsync": _same(READ, "file", "f"),
    "loudnorm": _same(WRITE, "stats_file"),
    "lut1d": _same(READ, "file"),
    "lut3d": _same(READ, "file"),
    "paletteuse": _same(WRITE, "debug_kdtree"),
    "psnr": _STATS,
    "ssim": _STATS,
    "ssim360": _STATS,
    "xpsnr": _STATS,
    "vmafmotion": _same(WRITE, "stats_file"),
    "removelogo": _same(READ, "filename", "f"),
    "showcqt": _same(READ, "fontfile", "axisfile"),
    "drawtext": _same(READ, "fontfile", "textfile"),
    "subtitles": {**_same(READ, "filename", "f"), **_same(DIR, "fontsdir")},
    "ass": {**_same(READ, "filename", "f"), **_same(DIR, "fontsdir")},
    "signature": _same(WRITE, "filename"),
    "vidstabdetect": _same(WRITE, "result", default="transforms.trf"),
    "vidstabtransform": _same(READ, "input", default="transforms.trf"),
    "ocr": _same(DIR, "datapath"),
    "lensfun": _same(DIR, "db_path"),
    "nnedi": _same(READ, "weights", default="nnedi3_weights.bin"),
    "cover_rect": _same(READ, "cover"),
    "find_rect": _same(READ, "object"),
    "qrencode": _same(READ, "textfile"),
    "qrencodesrc": _same(READ, "textfile"),
    "sofalizer": _same(READ, "sofa"),
    "drawvg": _same(READ, "file"),
    "whisper": {**_same(READ, "model", "vad_model"), **_same(OUT_URL, "destination")},
    # libavfilter's own DNN filters (a lavfi input graph's; in a chain avdnn's take the names)
    "dnn_processing": _DNN,
    "dnn_detect": _DNN,
    "dnn_classify": _DNN,
    "sr": _DNN,
    "derain": _DNN,
}

#: filters that reach what a path check cannot bound, and why
REFUSED_FILTERS: dict[str, str] = {
    **dict.fromkeys(("frei0r", "frei0r_src", "ladspa", "lv2"), "it loads a plugin library"),
    **dict.fromkeys(("zmq", "azmq"), "it listens on a socket for commands"),
    **dict.fromkeys(("sendcmd", "asendcmd"), "its commands set other filters' options, files among them"),
    **dict.fromkeys(("libvmaf", "libvmaf_cuda"), "its model and feature strings name files"),
    **dict.fromkeys(("program_opencl", "openclsrc"), "it builds and runs an OpenCL program from a file"),
    "libplacebo": "its shaders and LUTs name files",
    "asr": "its speech models name files",
    "ocv": "its kernels may name files",
    **dict.fromkeys(("coreimage", "coreimagesrc"), "its filter strings may name files"),
}


def filter_files(name: str) -> dict[str, FileOption]:
    """The options of libavfilter's ``name`` that open something ({} when it has none in the table)."""
    return _FILTER_FILES.get(name, {})


#: words of an option's name that make it a file's, when the table does not know the filter
_FILE_WORDS = frozenset(
    {"file", "filename", "path", "dir", "url", "uri", "model", "shader", "plugin", "script", "db", "datapath", "sofa"}
)


def fileish(option: str) -> bool:
    """Whether a text option of a filter the table does not know is named like a file's (it is then
    refused: ``fontfile``, ``db_path``, ``model``; not ``profile``)."""
    return any(
        w in _FILE_WORDS or (w.endswith("file") and w != "profile") or w.endswith(("path", "dir"))
        for w in option.lower().split("_")
    )


#: AVOptions of libavcodec, libavformat and the protocols (what ``-NAME value`` may set) that open
#: something; the kinds are the filters' (``PARAMS``: an encoder's settings, some keys files)
AV_OPTIONS: dict[str, FileOption] = {
    **_same(READ, "ca_file", "cafile", "cert", "cert_file", "key", "key_file", "ifo_palette"),
    **_same(WRITE, "stats", "passlogfile", "x265-stats"),
    **_same(URL, "sub_name"),
    **_same(GRAPH, "graph"),
    **_same(REFUSED, "graph_file", "enable_drefs"),
    **_same(
        PARAMS,
        "x264-params",
        "x264opts",
        "x265-params",
        "svtav1-params",
        "aom-params",
        "rav1e-params",
        "vvenc-params",
        "kvazaar-params",
        "qsv_params",
    ),
    **_same(FORMAT_OPTS, "format_opts", "seg_format_options", "segment_format_options", "hls_segment_options"),
    **_same(FORMAT_OPTS, "http_opts", "protocol_opts"),
    **_same(POLICY, "protocol_whitelist", "protocol_blacklist", "format_whitelist", "codec_whitelist"),
    **_same(LISTEN, "listen", "rtmp_listen", "rtsp_flags", "mode"),
}

#: demuxers that open other files named in their data or their URL (a playlist's entries, a
#: sequence of images): read from a local file, they would reach past it
NESTED_DEMUXERS = frozenset({"concat", "hls", "applehttp", "dash", "imf", "image2", "avisynth", "vapoursynth"})
#: of those, the ones whose entries a network input may hold (its nested opens stay on the network)
NETWORK_PLAYLISTS = frozenset({"hls", "applehttp", "dash"})
#: muxers that write files other than the output they are given (segments, playlists, copies)
NESTED_MUXERS = frozenset(
    {
        "tee",
        "segment",
        "stream_segment",
        "ssegment",
        "hls",
        "dash",
        "fifo",
        "fifo_test",
        "webm_chunk",
        "smoothstreaming",
    }
)
#: libavdevice's devices, both ways: a camera, the screen, a sound card, a window (``lavfi`` apart)
DEVICE_FORMATS = frozenset(
    {
        "alsa",
        "android_camera",
        "audiotoolbox",
        "avfoundation",
        "bktr",
        "caca",
        "decklink",
        "dshow",
        "dv1394",
        "fbdev",
        "gdigrab",
        "iec61883",
        "jack",
        "kmsgrab",
        "libcdio",
        "libdc1394",
        "openal",
        "opengl",
        "oss",
        "pulse",
        "sdl",
        "sdl2",
        "sndio",
        "v4l2",
        "video4linux2",
        "vfwcap",
        "x11grab",
        "xcbgrab",
        "xv",
    }
)


@functools.cache
def local_demuxers() -> str:
    """``format_whitelist`` for a local input: every demuxer but those that open other files and the
    devices (a playlist or an ffconcat file found by probing is then refused, not followed)."""
    import av

    return ",".join(sorted(set(av.formats_available) - NESTED_DEMUXERS - DEVICE_FORMATS - {"lavfi"}))
