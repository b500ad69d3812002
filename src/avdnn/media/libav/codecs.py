"""ctypes access to what ffmpeg's tool asks libavcodec and cmdutils, and PyAV does not expose.

* :func:`av_option_owner`: which library's AVOptions know a command-line option (cmdutils'
  opt_default), so an unknown option is ffmpeg's "Unrecognized option";
* what an encoder accepts (avcodec_get_supported_config: channel layouts, colour ranges) and
  ffmpeg's choice among pixel formats, for the format/aformat filters ffmpeg appends;
* libavutil's size, duration and channel-layout parsing (raw inputs, -s, -ss/-t/-to).

The libraries and structures are :mod:`avdnn.media.libav`'s (the ones PyAV loaded).
"""

from __future__ import annotations

import ctypes

from avdnn.media.libav.bindings import _P, _AVOption, _ChLayout, _find, _fn, _load, _lock

__all__ = [
    "av_option_owner",
    "best_pix_fmt",
    "default_channel_layout",
    "encoder_channel_layouts",
    "encoder_color_ranges",
    "parse_duration",
    "parse_video_size",
]

_avcodec: ctypes.CDLL | None = None

_COLOR_RANGES = {1: "tv", 2: "pc"}
_AV_CODEC_CONFIG_CHANNEL_LAYOUT = 4
_AV_CODEC_CONFIG_COLOR_RANGE = 5


def _c_text(text: str) -> bytes | None:
    """``text`` as the C string argv would carry (undecodable bytes as they came); None with a NUL."""
    return None if "\x00" in text else text.encode("utf-8", "surrogateescape")


def parse_video_size(text: str) -> tuple[int, int] | None:
    """libavutil's av_parse_video_size: ``WxH`` or an abbreviation; None when it cannot parse it."""
    avu, _ = _load()
    raw = _c_text(text)
    if raw is None:
        return None
    w, h = ctypes.c_int(0), ctypes.c_int(0)
    fn = avu.av_parse_video_size
    fn.restype, fn.argtypes = (
        ctypes.c_int,
        [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.c_char_p],
    )
    if fn(ctypes.byref(w), ctypes.byref(h), raw) < 0:
        return None
    return w.value, h.value


def parse_duration(text: str) -> int | None:
    """libavutil's av_parse_time for a duration (``[-][HH:]MM:SS[.m...]``, ``[-]S+[.m...][s|ms|us]``),
    in microseconds, exactly as ffmpeg reads ``-ss``/``-t``/``-to``; None when it refuses it."""
    avu, _ = _load()
    raw = _c_text(text)
    if raw is None:
        return None
    us = ctypes.c_int64(0)
    fn = avu.av_parse_time
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int]
    if fn(ctypes.byref(us), raw, 1) < 0:
        return None
    return us.value


_classes: dict[str, int] | None = None
AV_OPT_SEARCH_CHILDREN = 1 << 0
AV_OPT_SEARCH_FAKE_OBJ = 1 << 1


def _av_classes() -> dict[str, int]:
    """The AVClasses ffmpeg's cmdutils looks options up in (codec, format, swscale, swresample)."""
    global _classes
    avu, _ = _load()
    with _lock:
        if _classes is None:
            found: dict[str, int] = {}
            for stem, getter in (
                ("avcodec", "avcodec_get_class"),
                ("avformat", "avformat_get_class"),
                ("swscale", "sws_get_class"),
                ("swresample", "swr_get_class"),
            ):
                lib = ctypes.CDLL(_find(stem))
                _fn(lib, getter, _P)
                found[stem] = int(getattr(lib, getter)())
            _fn(
                avu,
                "av_opt_find",
                ctypes.POINTER(_AVOption),
                _P,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_int,
            )
            _classes = found
        return _classes


def av_option_owner(name: str) -> str | None:
    """Which library's AVOptions know ``name`` (the part before any ``:``), as cmdutils' opt_default
    looks it up: "avcodec", "avformat", "swscale", "swresample", or None (an unknown option).

    Codec options also match with a leading stream letter (``-vb`` -> ``b``), as in ffmpeg.
    """
    avu, _ = _load()
    base = name.split(":", 1)[0].encode()
    for stem, cls in _av_classes().items():
        holder = _P(cls)
        flags = AV_OPT_SEARCH_FAKE_OBJ | (AV_OPT_SEARCH_CHILDREN if stem in ("avcodec", "avformat") else 0)
        if avu.av_opt_find(ctypes.byref(holder), base, None, 0, flags):
            return stem
        if (
            stem == "avcodec"
            and base[:1] in (b"v", b"a", b"s")
            and avu.av_opt_find(ctypes.byref(holder), base[1:], None, 0, AV_OPT_SEARCH_FAKE_OBJ)
        ):
            return stem
    return None


def _encoder(name: str) -> tuple[ctypes.CDLL, int | None]:
    global _avcodec
    with _lock:
        if _avcodec is None:
            lib = ctypes.CDLL(_find("avcodec"))
            _fn(lib, "avcodec_find_encoder_by_name", _P, ctypes.c_char_p)
            _fn(
                lib,
                "avcodec_get_supported_config",
                ctypes.c_int,
                _P,
                _P,
                ctypes.c_int,
                ctypes.c_uint,
                ctypes.POINTER(_P),
                ctypes.POINTER(ctypes.c_int),
            )
            _avcodec = lib
        lib = _avcodec
    return lib, lib.avcodec_find_encoder_by_name(name.encode())


def _supported_config(name: str, config: int) -> tuple[ctypes.c_void_p, ctypes.c_int] | None:
    """avcodec_get_supported_config of encoder ``name``: (array, count); None when it takes any."""
    lib, codec = _encoder(name)
    if not codec:
        return None
    out, count = _P(), ctypes.c_int(0)
    if lib.avcodec_get_supported_config(None, codec, config, 0, ctypes.byref(out), ctypes.byref(count)) < 0 or not out:
        return None
    return out, count


def encoder_channel_layouts(name: str) -> list[str] | None:
    """Channel layouts an audio encoder accepts, described as ffmpeg's aformat takes them; None: any.

    ffmpeg's choose_channel_layouts lists these in the aformat it appends (ac3 takes 5.1(side),
    not 5.1), and PyAV does not report them.
    """
    avu, _ = _load()
    config = _supported_config(name, _AV_CODEC_CONFIG_CHANNEL_LAYOUT)
    if config is None:
        return None
    out, count = config
    layouts = ctypes.cast(out, ctypes.POINTER(_ChLayout))
    names = []
    buf = ctypes.create_string_buffer(128)
    for i in range(count.value):
        avu.av_channel_layout_describe(ctypes.byref(layouts[i]), buf, len(buf))
        names.append(buf.value.decode())
    return names or None


def encoder_color_ranges(name: str) -> list[str] | None:
    """Colour ranges an encoder accepts ("tv", "pc"); None when it takes any.

    The ffmpeg CLI adds these to the format= it appends for the encoder (mjpeg wants "pc"),
    which PyAV does not report.
    """
    config = _supported_config(name, _AV_CODEC_CONFIG_COLOR_RANGE)
    if config is None:
        return None
    out, count = config
    values = ctypes.cast(out, ctypes.POINTER(ctypes.c_int))
    ranges = [_COLOR_RANGES[values[i]] for i in range(count.value) if values[i] in _COLOR_RANGES]
    return ranges or None


def best_pix_fmt(candidates: list[str], target: str) -> str:
    """The candidate losing least against ``target``: ffmpeg's choose_pixel_fmt for an encoder
    that does not take the requested -pix_fmt (av_find_best_pix_fmt_of_2 over its list, with
    alpha wanted when the target has an even number of components, as ffmpeg's FIXME says)."""
    avu, _ = _load()
    ids = {}
    for name in (target, *candidates):
        ids[name] = avu.av_get_pix_fmt(name.encode())
    src = ids[target]
    desc = avu.av_pix_fmt_desc_get(src)
    has_alpha = int(bool(desc) and desc.contents.value % 2 == 0)
    best = -1
    for name in candidates:
        best = avu.av_find_best_pix_fmt_of_2(best, ids[name], src, has_alpha, None)
    name_of = avu.av_get_pix_fmt_name(best)
    return name_of.decode() if name_of else candidates[0]


def default_channel_layout(channels: int) -> str:
    """av_channel_layout_default's name for N channels (2: stereo), as ffmpeg guesses a raw input's."""
    avu, _ = _load()
    layout = _ChLayout()
    avu.av_channel_layout_default(ctypes.byref(layout), channels)
    buf = ctypes.create_string_buffer(128)
    avu.av_channel_layout_describe(ctypes.byref(layout), buf, len(buf))
    avu.av_channel_layout_uninit(ctypes.byref(layout))
    return buf.value.decode()
