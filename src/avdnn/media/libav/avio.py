"""ctypes access to libavformat's I/O layer and muxer table, which PyAV does not expose.

* :class:`AvioWriter`: a URL opened for writing with ``avio_open2``, as the ffmpeg tool opens an
  output (its protocol AVOptions applied and consumed, an interrupt callback of ours), written
  through ``avio_write``/``avio_flush``; PyAV opens an output with ``avio_open`` and no options.
* :func:`protocol_name`: the protocol libavformat would open a URL with (``file`` for a path).
* :func:`guess_codec`: ``av_guess_codec``, the codec ffmpeg gives an output stream it picks
  automatically (the segment muxer's inner format, image2's by extension).

Struct heads are those of FFmpeg >= 7 (stable public fields only); the libraries are the ones
PyAV loaded (:mod:`avdnn.media.libav.bindings`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping

from avdnn import errors
from avdnn.media.libav.bindings import _find, _fn, _load, _strerror

__all__ = ["AvioWriter", "guess_codec", "protocol_name"]

_P = ctypes.c_void_p
AVIO_FLAG_WRITE = 2
_AV_DICT_IGNORE_SUFFIX = 2
_MEDIA_TYPES = {"video": 0, "audio": 1, "subtitle": 3}


class _IOContext(ctypes.Structure):  # libavformat/avio.h AVIOContext, public head
    _fields_ = [
        ("av_class", _P),
        ("buffer", _P),
        ("buffer_size", ctypes.c_int),
        ("buf_ptr", _P),
        ("buf_end", _P),
        ("opaque", _P),
        ("read_packet", _P),
        ("write_packet", _P),
        ("seek", _P),
        ("pos", ctypes.c_int64),
        ("eof_reached", ctypes.c_int),
        ("error", ctypes.c_int),
        ("write_flag", ctypes.c_int),
        ("max_packet_size", ctypes.c_int),
    ]


_InterruptFn = ctypes.CFUNCTYPE(ctypes.c_int, _P)


class _InterruptCB(ctypes.Structure):  # libavformat/avio.h AVIOInterruptCB
    _fields_ = [("callback", _InterruptFn), ("opaque", _P)]


class _DictEntry(ctypes.Structure):  # libavutil/dict.h AVDictionaryEntry
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _OutputFormat(ctypes.Structure):  # AVOutputFormat, public head
    _fields_ = [("name", ctypes.c_char_p), ("long_name", ctypes.c_char_p)]


class _Codec(ctypes.Structure):  # AVCodec, public head
    _fields_ = [("name", ctypes.c_char_p)]


_lock = threading.Lock()
_libs: tuple[ctypes.CDLL, ctypes.CDLL] | None = None


def _avformat() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    """(libavformat, libavcodec), their functions typed once."""
    global _libs
    avu, _ = _load()
    with _lock:
        if _libs is None:
            avf, avc = ctypes.CDLL(_find("avformat")), ctypes.CDLL(_find("avcodec"))
            c_int, c_char_p = ctypes.c_int, ctypes.c_char_p
            _fn(avf, "avio_find_protocol_name", c_char_p, c_char_p)
            _fn(
                avf,
                "avio_open2",
                c_int,
                ctypes.POINTER(ctypes.POINTER(_IOContext)),
                c_char_p,
                c_int,
                ctypes.POINTER(_InterruptCB),
                ctypes.POINTER(_P),
            )
            _fn(avf, "avio_write", None, ctypes.POINTER(_IOContext), c_char_p, c_int)
            _fn(avf, "avio_flush", None, ctypes.POINTER(_IOContext))
            _fn(avf, "avio_closep", c_int, ctypes.POINTER(ctypes.POINTER(_IOContext)))
            _fn(avf, "av_guess_format", ctypes.POINTER(_OutputFormat), c_char_p, c_char_p, c_char_p)
            _fn(avf, "av_guess_codec", c_int, ctypes.POINTER(_OutputFormat), c_char_p, c_char_p, c_char_p, c_int)
            _fn(avc, "avcodec_find_encoder", ctypes.POINTER(_Codec), c_int)
            _fn(avc, "avcodec_get_name", c_char_p, c_int)
            _fn(avu, "av_dict_set", c_int, ctypes.POINTER(_P), c_char_p, c_char_p, c_int)
            _fn(avu, "av_dict_get", ctypes.POINTER(_DictEntry), _P, c_char_p, ctypes.POINTER(_DictEntry), c_int)
            _fn(avu, "av_dict_free", None, ctypes.POINTER(_P))
            _libs = (avf, avc)
        return _libs


def protocol_name(url: str) -> str | None:
    """The protocol libavformat opens ``url`` with (``file`` for a plain path; None: none it has)."""
    avf, _ = _avformat()
    name = avf.avio_find_protocol_name(url.encode())
    return name.decode() if name else None


def guess_format(filename: str) -> str | None:
    """The muxer libavformat chooses for an output named ``filename`` with no ``-f`` (its extension,
    an image sequence pattern), as ffmpeg chooses it; None when it can choose none."""
    avf, _ = _avformat()
    fmt = avf.av_guess_format(None, filename.encode(), None)
    return fmt.contents.name.decode() if fmt else None


def guess_codec(format_name: str, filename: str, media_type: str) -> tuple[str | None, str | None]:
    """``av_guess_codec`` for a stream of ``media_type`` in an output of ``format_name`` named
    ``filename``: (the codec's name, the encoder libavcodec has for it), each None when there is none.

    As in ffmpeg: the segment muxer answers for the format its file name names, image2 for the
    image codec of the extension; every other muxer gives its default codec of the type.
    """
    avf, avc = _avformat()
    fmt = avf.av_guess_format(format_name.encode(), None, None)
    if not fmt or media_type not in _MEDIA_TYPES:
        return None, None
    codec_id = avf.av_guess_codec(fmt, None, filename.encode(), None, _MEDIA_TYPES[media_type])
    if codec_id == 0:  # AV_CODEC_ID_NONE
        return None, None
    encoder = avc.avcodec_find_encoder(codec_id)
    return avc.avcodec_get_name(codec_id).decode(), encoder.contents.name.decode() if encoder else None


class AvioWriter:
    """A URL opened for writing through libavformat's protocols, as ffmpeg opens an output.

    ``options`` are the output's AVOptions: those the protocol takes are consumed (as
    ``avio_open2`` consumes them), the others are left in :attr:`unused` for the muxer.
    ``interrupt()`` is libavformat's interrupt callback: asked while a protocol waits (a connect,
    a write to a full socket), True ends the wait with AVERROR_EXIT. A failed write raises
    the protocol's error (``Connection reset by peer``, ``Broken pipe``) as avdnn's.
    """

    def __init__(self, url: str, options: Mapping[str, str], *, interrupt: Callable[[], bool]) -> None:
        avf, _ = _avformat()
        self._avf = avf
        self.url = url
        self._interrupt = interrupt
        # kept referenced for as long as libavformat may call it (the URLContext copies the struct)
        self._callback = _InterruptFn(self._asked)
        cb = _InterruptCB(self._callback, None)
        avu, _ = _load()
        opts = _P()
        for key, value in options.items():
            avu.av_dict_set(ctypes.byref(opts), key.encode(), str(value).encode(), 0)
        self._ctx = ctypes.POINTER(_IOContext)()
        try:
            ret = avf.avio_open2(
                ctypes.byref(self._ctx), url.encode(), AVIO_FLAG_WRITE, ctypes.byref(cb), ctypes.byref(opts)
            )
            self.unused = _dict_items(avu, opts)
        finally:
            avu.av_dict_free(ctypes.byref(opts))
        if ret < 0:
            raise errors.from_code(ret, _strerror(avu, ret))
        #: The largest write the protocol sends as one unit (a UDP datagram); 0: no such limit.
        self.max_packet_size: int = self._ctx.contents.max_packet_size
        self.name = url
        self.closed = False

    def _asked(self, _opaque: int | None) -> int:
        try:
            return 1 if self._interrupt() else 0
        except Exception:  # noqa: BLE001 - never raise into C; an interrupt that cannot decide interrupts
            return 1

    def _check(self) -> None:
        code = self._ctx.contents.error
        if code < 0:
            avu, _ = _load()
            raise errors.from_code(code, _strerror(avu, code))

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:
        """Send ``data`` and flush it (one write of the muxer's buffer is one unit, a datagram)."""
        if self.closed:
            raise errors.IOFailureError("write to a closed output", file=self.url)
        if data:
            self._avf.avio_write(self._ctx, data, len(data))
        self._avf.avio_flush(self._ctx)
        self._check()
        return len(data)

    def flush(self) -> None:
        if not self.closed:
            self._avf.avio_flush(self._ctx)
            self._check()

    def close(self) -> None:
        """Flush what is left and close the connection (once; the close's own error is raised)."""
        if self.closed:
            return
        self.closed = True
        ret = self._avf.avio_closep(ctypes.byref(self._ctx))
        if ret < 0:
            avu, _ = _load()
            raise errors.from_code(ret, _strerror(avu, ret))


def _dict_items(avu: ctypes.CDLL, opts: ctypes.c_void_p) -> dict[str, str]:
    out: dict[str, str] = {}
    entry = avu.av_dict_get(opts, b"", None, _AV_DICT_IGNORE_SUFFIX)
    while entry:
        out[(entry.contents.key or b"").decode()] = (entry.contents.value or b"").decode()
        entry = avu.av_dict_get(opts, b"", entry, _AV_DICT_IGNORE_SUFFIX)
    return out
