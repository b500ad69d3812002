"""A decoded frame's display matrix, read without PyAV's side-data wrappers.

PyAV 18's ``Frame.side_data`` wraps every entry, and each wrapper takes the entry's metadata
dictionary as its own and frees it when collected, although the frame owns and frees it too.
An entry with metadata (a PNG's named ICC profile) is then freed twice and the process dies,
often only at exit. So the matrix is read the way libavutil hands it out:
``av_frame_get_side_data(frame, AV_FRAME_DATA_DISPLAYMATRIX)`` through ctypes on the AVFrame
PyAV holds, from the very libavutil PyAV loaded (:mod:`.libav`). The AVFrame pointer is the
first field of PyAV's Cython Frame object; it is used only after the AVFrame's leading fields
(``width``, ``height``, stable across FFmpeg versions) are seen to match the frame's.
"""

from __future__ import annotations

import ctypes
import logging
import struct
import threading
from typing import Any

from avdnn.media.input.rotate import Matrix, matrix_flip, rotation_set
from avdnn.media.libav.bindings import _find, _fn

log = logging.getLogger("avdnn")

_P = ctypes.c_void_p
_AV_FRAME_DATA_DISPLAYMATRIX = 6  # enum AVFrameSideDataType (libavutil/frame.h), stable
_PTR_OFFSET = 3 * ctypes.sizeof(_P)  # PyObject_HEAD (refcount, type), Cython's vtable, then ``ptr``
_WIDTH_OFFSET = 8 * ctypes.sizeof(_P) + 8 * 4 + ctypes.sizeof(_P)  # after data[8], linesize[8], extended_data


class _AVFrameSideData(ctypes.Structure):  # libavutil/frame.h
    _fields_ = [("type", ctypes.c_int), ("data", _P), ("size", ctypes.c_size_t), ("metadata", _P), ("buf", _P)]


_lock = threading.Lock()
_get: Any = None


def _getter() -> Any:
    global _get
    with _lock:
        if _get is None:
            avu = ctypes.CDLL(_find("avutil"))
            _fn(avu, "av_frame_get_side_data", ctypes.POINTER(_AVFrameSideData), _P, ctypes.c_int)
            _get = avu.av_frame_get_side_data
    return _get


def _avframe(frame: Any) -> int | None:
    """The AVFrame* inside a PyAV frame, or None when the layout is not the expected one."""
    ptr = _P.from_address(id(frame) + _PTR_OFFSET).value
    if not ptr:
        return None
    width, height = struct.unpack("=ii", ctypes.string_at(ptr + _WIDTH_OFFSET, 8))
    return ptr if (width, height) == (frame.width, frame.height) else None


def display_matrix(frame: Any) -> Matrix | None:
    """The frame's DISPLAYMATRIX as nine int32, or None when it has none."""
    ptr = _avframe(frame)
    if ptr is None:  # an unexpected PyAV layout: the angle alone, which PyAV reads safely
        log.debug("display matrix: unexpected PyAV frame layout; using the rotation angle only")
        angle = frame.rotation
        return tuple(matrix_flip(rotation_set(angle), False, False)) if angle else None
    sd = _getter()(ptr, _AV_FRAME_DATA_DISPLAYMATRIX)
    if not sd or sd.contents.size < 36 or not sd.contents.data:
        return None
    return struct.unpack("=9i", ctypes.string_at(sd.contents.data, 36))
