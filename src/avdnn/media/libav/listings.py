"""ffmpeg's listings (``-encoders``, ``-codecs``, ``-formats``, ``-pix_fmts``, ``-protocols``...).

Tools read them to pick a codec (imageio-ffmpeg looks for ``libx264`` in ``-encoders``), so they
are printed in fftools/opt_common.c's formats and order, from the libraries PyAV loaded. PyAV's
``av.codecs_available`` is an unordered set without capabilities or descriptors, so the
registries are walked through ctypes (av_codec_iterate, avcodec_descriptor_next,
av_muxer_iterate, av_demuxer_iterate, av_pix_fmt_desc_next, avio_enum_protocols), exactly the
calls opt_common.c makes. Struct heads are those of FFmpeg >= 7 (stable public fields only).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator

from avdnn.media.libav.bindings import _find

__all__ = ["codecs_text", "coders_text", "formats_text", "pix_fmts_text", "protocols_text"]

_P = ctypes.c_void_p


class _Codec(ctypes.Structure):  # libavcodec/codec.h AVCodec, public head
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("long_name", ctypes.c_char_p),
        ("type", ctypes.c_int),
        ("id", ctypes.c_int),
        ("capabilities", ctypes.c_int),
    ]


class _Descriptor(ctypes.Structure):  # libavcodec/codec_desc.h AVCodecDescriptor
    _fields_ = [
        ("id", ctypes.c_int),
        ("type", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("long_name", ctypes.c_char_p),
        ("props", ctypes.c_int),
    ]


class _Muxer(ctypes.Structure):  # libavformat/avformat.h AVOutputFormat, public head
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("long_name", ctypes.c_char_p),
        ("mime_type", ctypes.c_char_p),
        ("extensions", ctypes.c_char_p),
        ("audio_codec", ctypes.c_int),
        ("video_codec", ctypes.c_int),
        ("subtitle_codec", ctypes.c_int),
        ("flags", ctypes.c_int),
        ("codec_tag", _P),
        ("priv_class", _P),
    ]


class _Demuxer(ctypes.Structure):  # AVInputFormat, public head
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("long_name", ctypes.c_char_p),
        ("flags", ctypes.c_int),
        ("extensions", ctypes.c_char_p),
        ("codec_tag", _P),
        ("priv_class", _P),
    ]


class _Class(ctypes.Structure):  # libavutil/log.h AVClass head
    _fields_ = [
        ("class_name", ctypes.c_char_p),
        ("item_name", _P),
        ("option", _P),
        ("version", ctypes.c_int),
        ("log_level_offset_offset", ctypes.c_int),
        ("parent_log_context_offset", ctypes.c_int),
        ("category", ctypes.c_int),
    ]


class _Component(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("plane", "step", "offset", "shift", "depth")]


class _PixDesc(ctypes.Structure):  # libavutil/pixdesc.h AVPixFmtDescriptor
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("nb_components", ctypes.c_uint8),
        ("log2_chroma_w", ctypes.c_uint8),
        ("log2_chroma_h", ctypes.c_uint8),
        ("flags", ctypes.c_uint64),
        ("comp", _Component * 4),
    ]


_CAP_DRAW_HORIZ_BAND, _CAP_DR1, _CAP_EXPERIMENTAL = 1 << 0, 1 << 1, 1 << 9
_CAP_FRAME_THREADS, _CAP_SLICE_THREADS = 1 << 12, 1 << 13
_PROP_INTRA_ONLY, _PROP_LOSSY, _PROP_LOSSLESS = 1, 2, 4
_PIX_FLAG_PAL, _PIX_FLAG_BITSTREAM, _PIX_FLAG_HWACCEL = 1 << 1, 1 << 2, 1 << 3
_DEVICE_CATEGORIES = range(40, 46)  # AV_CLASS_CATEGORY_DEVICE_*
_TYPE_CHARS = {0: "V", 1: "A", 2: "D", 3: "S", 4: "T"}

_lock = threading.Lock()
_libs: dict[str, ctypes.CDLL] = {}


def _lib(stem: str) -> ctypes.CDLL:
    with _lock:
        if not _libs:
            avc, avf = ctypes.CDLL(_find("avcodec")), ctypes.CDLL(_find("avformat"))
            avu, sws = ctypes.CDLL(_find("avutil")), ctypes.CDLL(_find("swscale"))
            pp = ctypes.POINTER(_P)
            for lib, name, res, args in (
                (avc, "av_codec_iterate", ctypes.POINTER(_Codec), [pp]),
                (avc, "av_codec_is_encoder", ctypes.c_int, [ctypes.POINTER(_Codec)]),
                (avc, "avcodec_descriptor_next", ctypes.POINTER(_Descriptor), [ctypes.POINTER(_Descriptor)]),
                (avf, "av_muxer_iterate", ctypes.POINTER(_Muxer), [pp]),
                (avf, "av_demuxer_iterate", ctypes.POINTER(_Demuxer), [pp]),
                (avf, "avio_enum_protocols", ctypes.c_char_p, [pp, ctypes.c_int]),
                (avu, "av_pix_fmt_desc_next", ctypes.POINTER(_PixDesc), [ctypes.POINTER(_PixDesc)]),
                (avu, "av_pix_fmt_desc_get_id", ctypes.c_int, [ctypes.POINTER(_PixDesc)]),
                (avu, "av_get_bits_per_pixel", ctypes.c_int, [ctypes.POINTER(_PixDesc)]),
                (sws, "sws_isSupportedInput", ctypes.c_int, [ctypes.c_int]),
                (sws, "sws_isSupportedOutput", ctypes.c_int, [ctypes.c_int]),
            ):
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            _libs.update(avcodec=avc, avformat=avf, avutil=avu, swscale=sws)
        return _libs[stem]


def _s(b: bytes | None) -> str:
    return b.decode() if b else ""


def _codecs() -> Iterator[_Codec]:
    avc, it = _lib("avcodec"), _P()
    while c := avc.av_codec_iterate(ctypes.byref(it)):
        yield c.contents


def _descriptors() -> list[_Descriptor]:
    """opt_common.c's get_codecs_sorted: by media type, then name."""
    avc = _lib("avcodec")
    out: list[_Descriptor] = []
    d = avc.avcodec_descriptor_next(None)
    while d:
        out.append(d.contents)
        d = avc.avcodec_descriptor_next(d)
    return sorted(out, key=lambda x: (x.type, x.name))


def _is_encoder(c: _Codec) -> bool:
    return bool(_lib("avcodec").av_codec_is_encoder(ctypes.byref(c)))


def coders_text(encoder: bool) -> str:
    """``-encoders`` / ``-decoders`` (opt_common.c print_codecs)."""
    kind = "Encoders" if encoder else "Decoders"
    lines = [
        f"{kind}:",
        " V..... = Video",
        " A..... = Audio",
        " S..... = Subtitle",
        " .F.... = Frame-level multithreading",
        " ..S... = Slice-level multithreading",
        " ...X.. = Codec is experimental",
        " ....B. = Supports draw_horiz_band",
        " .....D = Supports direct rendering method 1",
        " ------",
    ]
    codecs = [c for c in _codecs() if _is_encoder(c) == encoder]
    for d in _descriptors():
        for c in codecs:
            if c.id != d.id:
                continue
            cap = c.capabilities
            flags = (
                _TYPE_CHARS.get(c.type, "?")
                + ("F" if cap & _CAP_FRAME_THREADS else ".")
                + ("S" if cap & _CAP_SLICE_THREADS else ".")
                + ("X" if cap & _CAP_EXPERIMENTAL else ".")
                + ("B" if cap & _CAP_DRAW_HORIZ_BAND else ".")
                + ("D" if cap & _CAP_DR1 else ".")
            )
            line = f" {flags} {_s(c.name):<20} {_s(c.long_name)}"
            if c.name != d.name:
                line += f" (codec {_s(d.name)})"
            lines.append(line)
    return "\n".join(lines) + "\n"


def codecs_text() -> str:
    """``-codecs`` (opt_common.c show_codecs)."""
    lines = [
        "Codecs:",
        " D..... = Decoding supported",
        " .E.... = Encoding supported",
        " ..V... = Video codec",
        " ..A... = Audio codec",
        " ..S... = Subtitle codec",
        " ..D... = Data codec",
        " ..T... = Attachment codec",
        " ...I.. = Intra frame-only codec",
        " ....L. = Lossy compression",
        " .....S = Lossless compression",
        " -------",
    ]
    codecs = list(_codecs())
    for d in _descriptors():
        if b"_deprecated" in (d.name or b""):
            continue
        dec = [c for c in codecs if c.id == d.id and not _is_encoder(c)]
        enc = [c for c in codecs if c.id == d.id and _is_encoder(c)]
        flags = (
            ("D" if dec else ".")
            + ("E" if enc else ".")
            + _TYPE_CHARS.get(d.type, "?")
            + ("I" if d.props & _PROP_INTRA_ONLY else ".")
            + ("L" if d.props & _PROP_LOSSY else ".")
            + ("S" if d.props & _PROP_LOSSLESS else ".")
        )
        line = f" {flags} {_s(d.name):<20} {_s(d.long_name)}"
        for label, group in (("decoders", dec), ("encoders", enc)):
            if any(c.name != d.name for c in group):
                line += f" ({label}: " + " ".join(_s(c.name) for c in group) + ")"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _is_device(cls: int | None) -> bool:
    return cls is not None and cls != 0 and _Class.from_address(cls).category in _DEVICE_CATEGORIES


def formats_text(muxers: bool = True, demuxers: bool = True) -> str:
    """``-formats`` / ``-muxers`` / ``-demuxers`` (opt_common.c show_formats_devices): by name."""
    avf = _lib("avformat")
    table: dict[str, list[object]] = {}  # name -> [decode, encode, device, long_name]
    if muxers:
        it = _P()
        while m := avf.av_muxer_iterate(ctypes.byref(it)):
            f = m.contents
            table[_s(f.name)] = [False, True, _is_device(f.priv_class), _s(f.long_name)]
    if demuxers:
        it = _P()
        while dm := avf.av_demuxer_iterate(ctypes.byref(it)):
            f2 = dm.contents
            row = table.setdefault(_s(f2.name), [False, False, False, _s(f2.long_name)])
            row[0], row[2] = True, _is_device(f2.priv_class)
    lines = ["Formats:", " D.. = Demuxing supported", " .E. = Muxing supported", " ..d = Is a device", " ---"]
    for name in sorted(table, key=lambda n: n.encode()):
        dec, enc, dev, long_name = table[name]
        lines.append(f" {'D' if dec else ' '}{'E' if enc else ' '}{'d' if dev else ' '} {name:<15} {long_name or ' '}")
    return "\n".join(lines) + "\n"


def pix_fmts_text() -> str:
    """``-pix_fmts`` (opt_common.c show_pix_fmts)."""
    avu, sws = _lib("avutil"), _lib("swscale")
    lines = [
        "Pixel formats:",
        "I.... = Supported Input  format for conversion",
        ".O... = Supported Output format for conversion",
        "..H.. = Hardware accelerated format",
        "...P. = Paletted format",
        "....B = Bitstream format",
        "FLAGS NAME            NB_COMPONENTS BITS_PER_PIXEL BIT_DEPTHS",
        "-----",
    ]
    d = avu.av_pix_fmt_desc_next(None)
    while d:
        desc, fmt = d.contents, avu.av_pix_fmt_desc_get_id(d)
        flags = (
            ("I" if sws.sws_isSupportedInput(fmt) else ".")
            + ("O" if sws.sws_isSupportedOutput(fmt) else ".")
            + ("H" if desc.flags & _PIX_FLAG_HWACCEL else ".")
            + ("P" if desc.flags & _PIX_FLAG_PAL else ".")
            + ("B" if desc.flags & _PIX_FLAG_BITSTREAM else ".")
        )
        depths = "-".join(str(desc.comp[i].depth) for i in range(max(desc.nb_components, 1)))
        lines.append(
            f"{flags} {_s(desc.name):<16}       {desc.nb_components}            "
            f"{avu.av_get_bits_per_pixel(d):3d}      {depths}"
        )
        d = avu.av_pix_fmt_desc_next(d)
    return "\n".join(lines) + "\n"


def protocols_text() -> str:
    """``-protocols`` (opt_common.c show_protocols)."""
    avf = _lib("avformat")
    lines = ["Supported file protocols:"]
    for output, title in ((0, "Input:"), (1, "Output:")):
        lines.append(title)
        it = _P()
        while name := avf.avio_enum_protocols(ctypes.byref(it), output):
            lines.append(f"  {_s(name)}")
    return "\n".join(lines) + "\n"
