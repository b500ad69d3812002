"""Whether the probe read packets of a stream: ``AVSTREAM_EVENT_FLAG_NEW_PACKETS``, which PyAV does not expose.

ffmpeg's automatic stream selection (fftools' map_auto_video/audio) scores a stream that had
packets read by ``avformat_find_stream_info`` 100,000,000 above one that had none: a damaged
file's video whose size the probe never found is still taken when its packets were seen, and a
cut file's audio stream that the probe saw no packet of (0 channels) is not.

The flag lives in the public ``AVStream`` (libavformat/avformat.h), after the embedded
``AVPacket attached_pic``: ``event_flags`` at 200 and ``r_frame_rate`` right after it in
libavformat 62 / libavcodec 62 (FFmpeg 8) on a 64-bit system. The stream is reached the way
:mod:`.banner` reaches the AVFormatContext (``streams`` after its five leading pointers and two
ints) and is used only when its ``av_class`` is ``av_stream_get_class()``, its ``index`` is
the stream's, and for a video stream the ``r_frame_rate`` there is PyAV's ``base_rate``;
otherwise the answer is None (unknown), and the caller keeps its behaviour without the flag.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from fractions import Fraction
from typing import Any

from avdnn.media.libav.banner import _format_context
from avdnn.media.libav.bindings import _find, _fn

__all__ = ["had_packets"]

_P = ctypes.c_void_p
_LAVF_MAJOR = 62  # the layout below
AVSTREAM_EVENT_FLAG_NEW_PACKETS = 1 << 1
_NB_STREAMS = 5 * ctypes.sizeof(_P) + 4  # av_class, iformat, oformat, priv_data, pb; ctx_flags
_STREAMS = _NB_STREAMS + 4
_INDEX = ctypes.sizeof(_P)  # after av_class
_EVENT_FLAGS = 200  # libavformat 62: 96 bytes of fields, then AVPacket attached_pic (104)
_R_FRAME_RATE = _EVENT_FLAGS + 4

_lock = threading.Lock()
_stream_class: int | None = None


def _class() -> int:
    global _stream_class
    with _lock:
        if _stream_class is None:
            avf = ctypes.CDLL(_find("avformat"))
            _fn(avf, "av_stream_get_class", _P)
            _stream_class = int(avf.av_stream_get_class() or 0)
        return _stream_class


def _int(addr: int) -> int:
    return int(ctypes.c_int.from_address(addr).value)


def had_packets(stream: Any) -> bool | None:
    """Whether libavformat read packets of this input stream while probing (None: cannot tell)."""
    import av

    if (
        sys.maxsize <= 2**32
        or av.library_versions["libavformat"][0] != _LAVF_MAJOR
        or not isinstance(getattr(stream, "container", None), av.container.InputContainer)
    ):
        return None
    ctx = _format_context(stream.container)
    if ctx is None or not 0 <= stream.index < _int(ctx + _NB_STREAMS):
        return None
    streams = _P.from_address(ctx + _STREAMS).value
    st = _P.from_address(streams + stream.index * ctypes.sizeof(_P)).value if streams else None
    if not st or _P.from_address(st).value != _class() or _int(st + _INDEX) != stream.index:
        return None
    if stream.type == "video":
        num, den = _int(st + _R_FRAME_RATE), _int(st + _R_FRAME_RATE + 4)
        if (Fraction(num, den) if num and den else None) != stream.base_rate:
            return None
    return bool(_int(st + _EVENT_FLAGS) & AVSTREAM_EVENT_FLAG_NEW_PACKETS)
