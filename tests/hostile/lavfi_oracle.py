"""libavfilter's own parse of a filtergraph string, through ctypes: the oracle of graph/parse.py.

``avfilter_graph_segment_parse`` (FFmpeg 6+) splits a graph string into chains of filters with
their names, instance names, link labels and options, exactly as ffmpeg's ``-vf``/
``-filter_complex`` do, before any filter is created. Options come as libavfilter's dictionary:
``key=value`` pairs in order, a positional value under the name of the filter's option it fills
(``ff_filter_opt_parse``). The library is the one PyAV loaded (avdnn.media.libav.bindings).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from avdnn.media.libav.bindings import _find

_P = ctypes.c_void_p


class _PadParams(ctypes.Structure):
    _fields_ = [("label", ctypes.c_char_p)]


class _FilterParams(ctypes.Structure):
    _fields_ = [
        ("filter", _P),
        ("filter_name", ctypes.c_char_p),
        ("instance_name", ctypes.c_char_p),
        ("opts", _P),
        ("inputs", ctypes.POINTER(ctypes.POINTER(_PadParams))),
        ("nb_inputs", ctypes.c_uint),
        ("outputs", ctypes.POINTER(ctypes.POINTER(_PadParams))),
        ("nb_outputs", ctypes.c_uint),
    ]


class _Chain(ctypes.Structure):
    _fields_ = [("filters", ctypes.POINTER(ctypes.POINTER(_FilterParams))), ("nb_filters", ctypes.c_size_t)]


class _Segment(ctypes.Structure):
    _fields_ = [
        ("graph", _P),
        ("chains", ctypes.POINTER(ctypes.POINTER(_Chain))),
        ("nb_chains", ctypes.c_size_t),
        ("scale_sws_opts", ctypes.c_char_p),
    ]


class _DictEntry(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


@dataclass(frozen=True)
class LavfiFilter:
    """One filter as libavfilter parsed it."""

    name: str
    instance: str | None
    options: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


_libs: tuple[ctypes.CDLL, ctypes.CDLL] | None = None


def _load() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    global _libs
    if _libs is None:
        avu, avf = ctypes.CDLL(_find("avutil")), ctypes.CDLL(_find("avfilter"))
        avf.avfilter_graph_alloc.restype = _P
        avf.avfilter_graph_free.argtypes = [ctypes.POINTER(_P)]
        avf.avfilter_graph_segment_parse.restype = ctypes.c_int
        avf.avfilter_graph_segment_parse.argtypes = [_P, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_P)]
        avf.avfilter_graph_segment_free.argtypes = [ctypes.POINTER(_P)]
        avu.av_dict_iterate.restype = ctypes.POINTER(_DictEntry)
        avu.av_dict_iterate.argtypes = [_P, ctypes.POINTER(_DictEntry)]
        avu.av_log_get_level.restype = ctypes.c_int
        avu.av_log_set_level.argtypes = [ctypes.c_int]
        _libs = (avu, avf)
    return _libs


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "surrogateescape")


def segment_parse(text: str) -> list[list[LavfiFilter]] | int:
    """The chains of ``text`` as libavfilter parses them, or its (negative) error code."""
    avu, avf = _load()
    graph = _P(avf.avfilter_graph_alloc())
    seg = _P()
    quiet = avu.av_log_get_level()
    avu.av_log_set_level(-8)  # its refusals are the answer here, not lines on stderr
    try:
        ret = avf.avfilter_graph_segment_parse(graph, text.encode("utf-8", "surrogateescape"), 0, ctypes.byref(seg))
        if ret < 0:
            return int(ret)
        segment = ctypes.cast(seg, ctypes.POINTER(_Segment)).contents
        chains = []
        for c in range(segment.nb_chains):
            chain = segment.chains[c].contents
            filters = []
            for f in range(chain.nb_filters):
                p = chain.filters[f].contents
                options = []
                entry = avu.av_dict_iterate(p.opts, None)
                while entry:
                    options.append((_text(entry.contents.key) or "", _text(entry.contents.value) or ""))
                    entry = avu.av_dict_iterate(p.opts, entry)
                filters.append(
                    LavfiFilter(
                        _text(p.filter_name) or "",
                        _text(p.instance_name),
                        tuple(options),
                        tuple(_text(p.inputs[k].contents.label) or "" for k in range(p.nb_inputs)),
                        tuple(_text(p.outputs[k].contents.label) or "" for k in range(p.nb_outputs)),
                    )
                )
            chains.append(filters)
        return chains
    finally:
        avu.av_log_set_level(quiet)
        if seg:
            avf.avfilter_graph_segment_free(ctypes.byref(seg))
        avf.avfilter_graph_free(ctypes.byref(graph))
