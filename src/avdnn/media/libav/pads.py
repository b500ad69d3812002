"""ctypes access to what a multi-input filter graph needs and PyAV does not expose.

* :func:`filter_pads`: the pads of one filter *instance* (its options decide how many:
  ``hstack=inputs=3``, ``split=3``), with their names and media types, as
  ``avfilter_graph_segment_link`` sees them when it links a ``-filter_complex`` graph;
* :func:`probe_graph`: configure a throwaway graph written as filtergraph text (several
  ``buffer`` sources, one ``buffersink`` named :data:`SINK`) and report the sink side, whose
  frame rate the ffmpeg CLI turns into the encoder time base.

Same libraries and struct layouts as :mod:`.libav` (libavfilter 10/11); only the public head of
``AVFilterContext`` is read.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from fractions import Fraction

from avdnn import errors
from avdnn.media.libav.bindings import _P, ChainInfo, _load, _q, _Rational, _strerror

__all__ = ["SINK", "FilterPads", "filter_pads", "probe_graph"]

#: The name of the buffersink in :func:`probe_graph` text.
SINK = "buffersink@avdnn_out"
_MEDIA = {0: "video", 1: "audio", 2: "data", 3: "subtitle", 4: "attachment"}


class _FilterContextHead(ctypes.Structure):  # libavfilter/avfilter.h AVFilterContext, public head
    _fields_ = [
        ("av_class", _P),
        ("filter", _P),
        ("name", ctypes.c_char_p),
        ("input_pads", _P),
        ("inputs", _P),
        ("nb_inputs", ctypes.c_uint),
        ("output_pads", _P),
        ("outputs", _P),
        ("nb_outputs", ctypes.c_uint),
    ]


@dataclass(frozen=True)
class FilterPads:
    """The input and output pads of a filter instance: (name, media type) each."""

    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]


_ready = False
_lock = threading.Lock()


def _libs() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    global _ready
    avu, avf = _load()
    with _lock:
        if not _ready:
            c_int, c_char_p = ctypes.c_int, ctypes.c_char_p
            for name, res, args in (
                ("avfilter_graph_create_filter", c_int, (ctypes.POINTER(_P), _P, c_char_p, c_char_p, _P, _P)),
                ("avfilter_pad_get_name", c_char_p, (_P, c_int)),
                ("avfilter_pad_get_type", c_int, (_P, c_int)),
            ):
                fn = getattr(avf, name)
                fn.restype, fn.argtypes = res, list(args)
            _ready = True
    return avu, avf


def filter_pads(name: str, args: str | None) -> FilterPads:
    """Pads of ``name`` initialised with ``args`` (what PyAV's ``Graph.add`` would create).

    Raises the :mod:`avdnn.errors` leaf of libavfilter's error (unknown filter: ENOENT-like
    :class:`~avdnn.errors.FilterNotFoundError` is the caller's check; bad options: EINVAL...).
    """
    avu, avf = _libs()
    flt = avf.avfilter_get_by_name(name.encode())
    if not flt:
        raise errors.FilterNotFoundError(f"No such filter: '{name}'")
    graph = _P(avf.avfilter_graph_alloc())
    if not graph:
        raise errors.OutOfMemoryError("cannot allocate a filter graph")
    try:
        ctx = _P()
        ret = avf.avfilter_graph_create_filter(
            ctypes.byref(ctx),
            ctypes.cast(flt, _P),
            b"avdnn_pads",
            None if args is None else args.encode(),
            None,
            graph,
        )
        if ret < 0:
            raise errors.from_code(ret, f"Error initializing filter '{name}': {_strerror(avu, ret)}")
        head = ctypes.cast(ctx, ctypes.POINTER(_FilterContextHead)).contents

        def pads(array: int | None, n: int) -> tuple[tuple[str, str], ...]:
            out = []
            for i in range(n):
                pad_name = avf.avfilter_pad_get_name(array, i)
                kind = _MEDIA.get(avf.avfilter_pad_get_type(array, i), "unknown")
                out.append((pad_name.decode() if pad_name else "", kind))
            return tuple(out)

        return FilterPads(pads(head.input_pads, head.nb_inputs), pads(head.output_pads, head.nb_outputs))
    finally:
        avf.avfilter_graph_free(ctypes.byref(graph))


def probe_graph(text: str) -> ChainInfo:
    """Configure ``text`` (complete filtergraph text ending in ``buffersink@avdnn_out``) and
    report what that sink negotiated."""
    avu, avf = _libs()
    graph = _P(avf.avfilter_graph_alloc())
    if not graph:
        raise errors.OutOfMemoryError("cannot allocate a filter graph")
    try:
        avu.av_opt_set_int(graph, b"threads", 1, 0)
        ret = avf.avfilter_graph_parse_ptr(graph, text.encode(), None, None, None)
        if ret >= 0:
            ret = avf.avfilter_graph_config(graph, None)
        if ret < 0:
            raise errors.from_code(ret, f"cannot configure filter graph {text!r}: {_strerror(avu, ret)}")
        sink = avf.avfilter_graph_get_filter(graph, SINK.encode())
        if not sink:
            raise errors.from_code(errors.AVERROR_BUG, f"probe graph has no {SINK}")
        fmt = avu.av_get_pix_fmt_name(avf.av_buffersink_get_format(sink))
        rate: _Rational = avf.av_buffersink_get_frame_rate(sink)
        return ChainInfo(
            width=avf.av_buffersink_get_w(sink),
            height=avf.av_buffersink_get_h(sink),
            pix_fmt=fmt.decode() if fmt else "none",
            time_base=_q(avf.av_buffersink_get_time_base(sink)) or Fraction(0, 1),
            frame_rate=_q(rate),
            sar=_q(avf.av_buffersink_get_sample_aspect_ratio(sink)) or Fraction(0, 1),
        )
    finally:
        avf.avfilter_graph_free(ctypes.byref(graph))
