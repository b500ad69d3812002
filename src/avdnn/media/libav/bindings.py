"""ctypes access to the libraries PyAV loaded, and the libavfilter facts PyAV does not expose.

* :func:`probe_chain` configures a throwaway ``buffer -> chain -> buffersink`` graph and
  reads what the sink negotiated (size, pixel format, time base, *frame rate*, SAR). The
  ffmpeg CLI derives the encoder time base from the chain's output frame rate
  (``fps=10`` -> 1/10); PyAV's graph API cannot tell us that.
* :func:`probe_audio_chain` does the same for an audio chain (sample format, rate, layout).

Filters' AVOptions are walked in :mod:`avdnn.media.libav.filteropts`, libavcodec's facts in
:mod:`avdnn.media.libav.codecs`; both use the handles and structures defined here.

The libraries are the very ones PyAV loaded (``av.libs`` next to the ``av`` package, or
whatever ``/proc/self/maps`` shows), so versions and struct layouts always agree. Layouts
are those of libavutil 60 / libavfilter 11 (FFmpeg 8); the leading fields used here have
been stable since libavutil 59 / libavfilter 10. No global mutable state besides the
library handles, which are loaded once under a lock.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import threading
from dataclasses import dataclass
from fractions import Fraction

from avdnn import errors

__all__ = [
    "AudioChainInfo",
    "ChainInfo",
    "probe_audio_chain",
    "probe_chain",
]

_P = ctypes.c_void_p


class _Rational(ctypes.Structure):
    _fields_ = [("num", ctypes.c_int), ("den", ctypes.c_int)]


class _ChLayout(ctypes.Structure):  # libavutil/channel_layout.h AVChannelLayout
    _fields_ = [("order", ctypes.c_int), ("nb_channels", ctypes.c_int), ("mask", ctypes.c_uint64), ("opaque", _P)]


class _PixDescHead(ctypes.Structure):  # libavutil/pixdesc.h AVPixFmtDescriptor, name and nb_components
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_uint8)]


class _AVOption(ctypes.Structure):  # libavutil/opt.h
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("help", ctypes.c_char_p),
        ("offset", ctypes.c_int),
        ("type", ctypes.c_int),
        ("default_val", ctypes.c_int64),  # union {i64; dbl; str; q; arr}: reinterpreted below
        ("min", ctypes.c_double),
        ("max", ctypes.c_double),
        ("flags", ctypes.c_int),
        ("unit", ctypes.c_char_p),
    ]


class _AVFilter(ctypes.Structure):  # libavfilter/avfilter.h, public head only
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("description", ctypes.c_char_p),
        ("inputs", _P),
        ("outputs", _P),
        ("priv_class", _P),
        ("flags", ctypes.c_int),
    ]


_SINK = "buffersink@avdnn_out"

_lock = threading.Lock()
_libs: tuple[ctypes.CDLL, ctypes.CDLL] | None = None


def _find(stem: str) -> str:
    import av

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(av.__file__)))
    for pattern in (f"av.libs/lib{stem}-*.so*", f"av/.dylibs/lib{stem}*.dylib", f"av.libs/{stem}-*.dll"):
        hits = sorted(glob.glob(os.path.join(pkg, pattern)))
        if hits:
            return hits[0]
    try:  # PyAV built against shared system FFmpeg: use what the process mapped
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.split()[-1]
                if re.search(rf"/lib{stem}(-[^/]*)?\.so", path):
                    return path
    except OSError:
        pass
    raise errors.BackendUnavailableError(f"cannot locate the lib{stem} that PyAV loaded")


def _fn(lib: ctypes.CDLL, name: str, restype: object, *argtypes: object) -> None:
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)


def _load() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    global _libs
    with _lock:
        if _libs is None:
            avu, avf = ctypes.CDLL(_find("avutil")), ctypes.CDLL(_find("avfilter"))
            c_int, c_char_p = ctypes.c_int, ctypes.c_char_p
            _fn(avu, "av_strerror", c_int, c_int, c_char_p, ctypes.c_size_t)
            _fn(avu, "av_get_pix_fmt_name", c_char_p, c_int)
            _fn(avu, "av_get_pix_fmt", c_int, c_char_p)
            # the descriptor's first fields: name (char *), nb_components (uint8_t)
            _fn(avu, "av_pix_fmt_desc_get", ctypes.POINTER(_PixDescHead), c_int)
            _fn(avu, "av_find_best_pix_fmt_of_2", c_int, c_int, c_int, c_int, c_int, ctypes.POINTER(c_int))
            _fn(avu, "av_opt_next", ctypes.POINTER(_AVOption), _P, ctypes.POINTER(_AVOption))
            _fn(avu, "av_opt_child_class_iterate", _P, _P, ctypes.POINTER(_P))
            _fn(avu, "av_opt_set_int", c_int, _P, c_char_p, ctypes.c_int64, c_int)
            _fn(avf, "avfilter_get_by_name", ctypes.POINTER(_AVFilter), c_char_p)
            _fn(avf, "avfilter_filter_pad_count", ctypes.c_uint, ctypes.POINTER(_AVFilter), c_int)
            _fn(avf, "avfilter_graph_alloc", _P)
            _fn(avf, "avfilter_graph_free", None, ctypes.POINTER(_P))
            _fn(avf, "avfilter_graph_parse_ptr", c_int, _P, c_char_p, _P, _P, _P)
            _fn(avf, "avfilter_graph_config", c_int, _P, _P)
            _fn(avf, "avfilter_graph_get_filter", _P, _P, c_char_p)
            for getter in ("w", "h", "format"):
                _fn(avf, f"av_buffersink_get_{getter}", c_int, _P)
            for getter in ("time_base", "frame_rate", "sample_aspect_ratio"):
                _fn(avf, f"av_buffersink_get_{getter}", _Rational, _P)
            _fn(avf, "av_buffersink_get_sample_rate", c_int, _P)
            _fn(avf, "av_buffersink_get_ch_layout", c_int, _P, ctypes.POINTER(_ChLayout))
            _fn(avu, "av_get_sample_fmt_name", c_char_p, c_int)
            _fn(avu, "av_channel_layout_describe", c_int, ctypes.POINTER(_ChLayout), c_char_p, ctypes.c_size_t)
            _fn(avu, "av_channel_layout_uninit", None, ctypes.POINTER(_ChLayout))
            _fn(avu, "av_channel_layout_default", None, ctypes.POINTER(_ChLayout), c_int)
            _libs = (avu, avf)
        return _libs


def _strerror(avu: ctypes.CDLL, code: int) -> str:
    buf = ctypes.create_string_buffer(256)
    if avu.av_strerror(code, buf, len(buf)) < 0:
        return errors.av_err2str(code)
    return buf.value.decode("utf-8", "replace")


@dataclass(frozen=True)
class ChainInfo:
    """What a buffersink at the end of a chain negotiated."""

    width: int
    height: int
    pix_fmt: str
    time_base: Fraction
    frame_rate: Fraction | None
    sar: Fraction


def _q(r: _Rational) -> Fraction | None:
    return Fraction(r.num, r.den) if r.num and r.den else None


def probe_chain(
    chain: str,
    *,
    width: int,
    height: int,
    pix_fmt: str,
    time_base: Fraction,
    frame_rate: Fraction | None = None,
    sar: Fraction | None = None,
) -> ChainInfo:
    """Configure ``buffer,<chain>,buffersink`` for the given input and report the sink side.

    ``chain`` is FFmpeg filtergraph text (already escaped); ``""`` probes buffer->buffersink.
    Raises the :mod:`avdnn.errors` leaf for the libavfilter error code.
    """
    if width <= 0 or height <= 0 or time_base <= 0 or not re.fullmatch(r"\w+", pix_fmt):
        raise errors.InvalidArgumentError(f"invalid probe input: {width}x{height} {pix_fmt!r} time_base {time_base}")
    tb, s = Fraction(time_base), Fraction(sar) if sar else Fraction(0, 1)
    src = (
        f"buffer=video_size={width}x{height}:pix_fmt={pix_fmt}"
        f":time_base={tb.numerator}/{tb.denominator}:pixel_aspect={s.numerator}/{s.denominator}"
    )
    if frame_rate:
        fr = Fraction(frame_rate)
        src += f":frame_rate={fr.numerator}/{fr.denominator}"
    text = ",".join(part for part in (src, chain, _SINK) if part)
    avu, avf = _load()
    graph = _P(avf.avfilter_graph_alloc())
    if not graph:
        raise errors.OutOfMemoryError("cannot allocate a filter graph")
    try:
        avu.av_opt_set_int(graph, b"threads", 1, 0)  # no worker pool for a throwaway graph
        ret = avf.avfilter_graph_parse_ptr(graph, text.encode(), None, None, None)
        if ret >= 0:
            ret = avf.avfilter_graph_config(graph, None)
        if ret < 0:
            raise errors.from_code(
                ret, f"cannot configure filter chain {chain!r} on {width}x{height} {pix_fmt}: {_strerror(avu, ret)}"
            )
        sink = avf.avfilter_graph_get_filter(graph, _SINK.encode())
        if not sink:
            raise errors.from_code(errors.AVERROR_BUG, f"probe graph has no {_SINK}")
        fmt = avu.av_get_pix_fmt_name(avf.av_buffersink_get_format(sink))
        return ChainInfo(
            width=avf.av_buffersink_get_w(sink),
            height=avf.av_buffersink_get_h(sink),
            pix_fmt=fmt.decode() if fmt else "none",
            time_base=_q(avf.av_buffersink_get_time_base(sink)) or Fraction(0, 1),
            frame_rate=_q(avf.av_buffersink_get_frame_rate(sink)),
            sar=_q(avf.av_buffersink_get_sample_aspect_ratio(sink)) or Fraction(0, 1),
        )
    finally:
        avf.avfilter_graph_free(ctypes.byref(graph))


@dataclass(frozen=True)
class AudioChainInfo:
    """What an abuffersink at the end of an audio chain negotiated."""

    sample_fmt: str
    sample_rate: int
    layout: str
    channels: int
    time_base: Fraction


def probe_audio_chain(chain: str, *, sample_fmt: str, sample_rate: int, layout: str) -> AudioChainInfo:
    """Configure ``abuffer,<chain>,abuffersink`` and report what libavfilter negotiated.

    The encoder of a transcoded audio stream is opened from this before any frame exists, as
    the ffmpeg CLI opens it from its configured filter graph, so every output stream can be
    declared (and the header written) without holding frames back.
    """
    if sample_rate <= 0 or not re.fullmatch(r"\w+", sample_fmt) or not re.fullmatch(r"[\w.()+-]+", layout):
        raise errors.InvalidArgumentError(f"invalid audio probe input: {sample_fmt!r} {sample_rate} {layout!r}")
    src = f"abuffer=sample_fmt={sample_fmt}:sample_rate={sample_rate}:channel_layout={layout}:time_base=1/{sample_rate}"
    sink_name = "abuffersink@avdnn_out"
    text = ",".join(part for part in (src, chain, sink_name) if part)
    avu, avf = _load()
    graph = _P(avf.avfilter_graph_alloc())
    if not graph:
        raise errors.OutOfMemoryError("cannot allocate a filter graph")
    layout_out = _ChLayout()
    try:
        avu.av_opt_set_int(graph, b"threads", 1, 0)
        ret = avf.avfilter_graph_parse_ptr(graph, text.encode(), None, None, None)
        if ret >= 0:
            ret = avf.avfilter_graph_config(graph, None)
        if ret < 0:
            raise errors.from_code(
                ret,
                f"cannot configure audio filter chain {chain!r} on "
                f"{sample_rate} Hz {layout} {sample_fmt}: {_strerror(avu, ret)}",
            )
        sink = avf.avfilter_graph_get_filter(graph, sink_name.encode())
        fmt = avu.av_get_sample_fmt_name(avf.av_buffersink_get_format(sink))
        avf.av_buffersink_get_ch_layout(sink, ctypes.byref(layout_out))
        buf = ctypes.create_string_buffer(128)
        avu.av_channel_layout_describe(ctypes.byref(layout_out), buf, len(buf))
        return AudioChainInfo(
            sample_fmt=fmt.decode() if fmt else "none",
            sample_rate=avf.av_buffersink_get_sample_rate(sink),
            layout=buf.value.decode(),
            channels=layout_out.nb_channels,
            time_base=_q(avf.av_buffersink_get_time_base(sink)) or Fraction(0, 1),
        )
    finally:
        avu.av_channel_layout_uninit(ctypes.byref(layout_out))
        avf.avfilter_graph_free(ctypes.byref(graph))
