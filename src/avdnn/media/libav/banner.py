"""ffmpeg's stderr banner: the ``Input #N``/``Output #N`` blocks and the version header.

Tools that drive the ffmpeg binary (imageio-ffmpeg, moviepy, ffmpeg-python's probe users) parse
these lines, so they must be byte for byte what ffmpeg prints. They come from libavformat's own
``av_dump_format`` (libavformat/dump.c), called through ctypes on the very AVFormatContext PyAV
opened, instead of re-typing dump.c in Python: every codec string, profile, tag, colour
description and side data line then follows the FFmpeg PyAV ships.

PyAV does not expose that pointer. A Cython ``cdef class Container`` with cdef methods lays out
``PyObject_HEAD``, its vtable pointer, then ``AVFormatContext *ptr`` (av/container/core.pxd), so
the pointer is the word after the vtable. It is used only after checking that it points at an
AVFormatContext (its first field, ``av_class``, is ``avformat_get_class()``); otherwise nothing
is printed (:func:`dump_format` returns False) rather than guessing.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from avdnn._util.redact import redact_url
from avdnn.media.libav.bindings import _find
from avdnn.media.streams.streamcopy import CopyPath

__all__ = ["GraphMapping", "announce_output", "dump_format", "stream_mapping", "version_header"]

_AV_LOG_INFO = 32
_PTR_OFFSET = 3 * ctypes.sizeof(ctypes.c_void_p)  # ob_refcnt, ob_type, __pyx_vtab
_lock = threading.Lock()
_libs: tuple[ctypes.CDLL, ctypes.CDLL] | None = None


def _load() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    global _libs
    with _lock:
        if _libs is None:
            avf, avu = ctypes.CDLL(_find("avformat")), ctypes.CDLL(_find("avutil"))
            avf.avformat_get_class.restype = ctypes.c_void_p
            avf.avformat_get_class.argtypes = []
            avf.av_dump_format.restype = None
            avf.av_dump_format.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
            avu.av_log_set_level.argtypes = [ctypes.c_int]
            avu.av_log_get_level.restype = ctypes.c_int
            avf.avformat_configuration.restype = ctypes.c_char_p
            _libs = (avf, avu)
        return _libs


def _format_context(container: Any) -> int | None:
    """The AVFormatContext* of a PyAV container, checked (see the module docstring)."""
    import av

    if not isinstance(container, av.container.Container):
        return None
    avf, _ = _load()
    ptr = ctypes.c_void_p.from_address(id(container) + _PTR_OFFSET).value
    if not ptr or ctypes.c_void_p.from_address(ptr).value != avf.avformat_get_class():
        return None
    return int(ptr)


def dump_format(container: Any, index: int, url: str, *, output: bool) -> bool:
    """Print ``Input #index, FORMAT, from 'URL':`` (or ``Output #index, ..., to``) on stderr.

    libavformat prints it through av_log at INFO with FFmpeg's default log callback (the one the
    ffmpeg binary uses) for the duration of the call; its text is caught from file descriptor 2
    and written to ``sys.stderr``, so it lands where Python's stderr goes (a test's capture, a
    redirect), and PyAV's own log routing is put back after. Returns False when the context
    cannot be reached.
    """
    import av.logging

    ptr = _format_context(container)
    if ptr is None:
        return False
    avf, avu = _load()
    previous = av.logging.get_level()
    lib_level = avu.av_log_get_level()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 2)
            av.logging.restore_default_callback()
            avu.av_log_set_level(max(lib_level, _AV_LOG_INFO))
            avf.av_dump_format(ptr, index, url.encode("utf-8", "surrogateescape"), int(output))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            avu.av_log_set_level(lib_level)
            av.logging.set_level(previous)
        tmp.seek(0)
        # a tag that is not UTF-8 (a Latin-1 title) shows its bytes as escapes, "Caf\\xe9": ffmpeg
        # writes the raw byte, which a terminal cannot show and a text stream may refuse to take
        text = tmp.read().decode("utf-8", "backslashreplace")
    sys.stderr.write(text)
    sys.stderr.flush()
    return True


def version_header(program: str, version: str) -> str:
    """ffmpeg's first banner lines: ``NAME version V Copyright ...``, configuration and libraries.

    imageio-ffmpeg reads the version from the first line and the second one after it.
    """
    import av

    avf, _ = _load()
    lines = [
        f"{program} version {version} Copyright (c) 2000-2026 the FFmpeg developers",
        f"  built with PyAV {av.__version__}",
        f"  configuration: {(avf.avformat_configuration() or b'').decode()}",
    ]
    for lib in ("libavutil", "libavcodec", "libavformat", "libavdevice", "libavfilter", "libswscale", "libswresample"):
        v = av.library_versions.get(lib)
        if v:
            text = f"{v[0]:2d}.{v[1]:3d}.{v[2]:3d}"
            lines.append(f"  {lib:<15}{text} / {text}")
    return "\n".join(lines)


def _coder(codec_name: str, coder_name: str) -> str:
    """ffmpeg's ``h264 (native)`` / ``h264 (libx264)``: the codec and, unless the same, the coder."""
    return f"{codec_name} ({'native' if coder_name == codec_name else coder_name})"


@dataclass(frozen=True)
class GraphMapping:
    """A -filter_complex graph in ``Stream mapping:``: the streams it reads and its output pad."""

    #: (input file, stream index, decoder name, the filter pad it feeds: "overlay", "scale:default")
    inputs: list[tuple[int, int, str, str]]
    #: the pad the output's video leaves the graph by ("overlay:default")
    output: str


#: One output stream: input file, input stream index, output index, decoder, encoder (None: copy).
Row = tuple[int, int, int, str | None, str | None]


def stream_mapping(
    rows: list[Row],
    *,
    graph: GraphMapping | None = None,
    video: int | None = None,
    graphs: dict[int, GraphMapping] | None = None,
) -> str:
    """ffmpeg's ``Stream mapping:`` block (print_stream_maps): a complex graph's inputs first, as
    ``Stream #1:0 (h264) -> overlay``, then each output stream; one that leaves a graph (``graphs``
    by output index; ``graph`` for the one at ``video``) shows its pad
    (``overlay:default -> Stream #0:0 (rawvideo)``)."""
    import av

    by_output = dict(graphs or {})
    if graph is not None and video is not None:
        by_output[video] = graph
    out = ["Stream mapping:"]
    for file, index, decoder, pad in sorted({row for g in by_output.values() for row in g.inputs}):
        out.append(f"  Stream #{file}:{index} ({decoder}) -> {pad}")
    for file, src, dst, dec, enc in rows:
        if dst in by_output:
            out.append(f"  {by_output[dst].output} -> Stream #0:{dst} ({enc})")
        elif enc is None:
            out.append(f"  Stream #{file}:{src} -> #0:{dst} (copy)")
        else:
            enc_codec = av.Codec(enc, "w")
            out.append(
                f"  Stream #{file}:{src} -> #0:{dst} ({_coder(dec or '', dec or '')} -> "
                f"{_coder(enc_codec.canonical_name, enc)})"
            )
    return "\n".join(out)


def announce_output(sink: Any, graphs: dict[int, GraphMapping] | None = None) -> None:
    """``Stream mapping:`` now, and ``Output #0`` once ``sink``'s muxer has its header, as ffmpeg
    prints them. ``graphs``: the -filter_complex graph each video stream comes from, by output index."""
    rows: list[Row] = []
    for i, entry in enumerate(sink.stream_order):
        source = getattr(entry, "source", None)  # a video stream through a chain: (file, index, decoder)
        if isinstance(source, tuple):
            rows.append((source[0], source[1], i, source[2], entry.codec_name))
        else:
            enc = None if isinstance(entry, CopyPath) else getattr(entry, "codec_name", None)
            ctx = entry.stream.codec_context
            rows.append((entry.input_file, entry.stream.index, i, ctx.name if ctx is not None else None, enc))
    sys.stderr.write(stream_mapping(rows, graphs=graphs) + "\n")
    name = redact_url(sink.name)  # an output URL's credentials are never shown either
    sink.on_header = lambda container: dump_format(container, 0, name, output=True)
