"""Tags (container, stream, chapter and frame metadata) kept as the bytes the file holds.

libavformat stores a tag as bytes and ffmpeg shows and copies those bytes whatever their
encoding. Old tools and cameras write Latin-1 (a Matroska title, an MP4 ``©nam``, a JPEG's EXIF
``Make``), which PyAV's default, strict UTF-8, refuses with a UnicodeDecodeError as the file is
opened. avdnn reads and writes tags with :data:`METADATA_ERRORS`: a byte that is not UTF-8
becomes a lone surrogate (U+DC80 + the byte, as :func:`os.fsdecode` does) and is written back as
that same byte, so an output carries the bytes ffmpeg would copy, and a ``-metadata`` value that
came through argv (decoded the same way by Python) is written as the bytes that were typed.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

__all__ = ["METADATA_ENCODING", "METADATA_ERRORS", "frame_tags", "tag_bytes"]

log = logging.getLogger("avdnn")

#: How PyAV decodes and encodes every tag of the containers avdnn opens (av.open's keywords).
METADATA_ENCODING = "utf-8"
METADATA_ERRORS = "surrogateescape"


def tag_bytes(value: str) -> bytes:
    """The bytes a tag read by avdnn holds in the file (``'Caf\\udce9'`` -> ``b'Caf\\xe9'``)."""
    return value.encode(METADATA_ENCODING, METADATA_ERRORS)


def frame_tags(frame: Any) -> dict[str, str]:
    """A decoded frame's metadata, as far as PyAV can give it.

    PyAV reads a frame's dictionary as strict UTF-8 with no way to ask otherwise, and a decoder
    puts what the file says there (the mjpeg decoder: a camera's EXIF strings, often Latin-1).
    Such a frame keeps its metadata for the libavfilter segments after it (the AVFrame is
    passed on as is: ``showinfo`` and ``metadata=print`` see the bytes ffmpeg sees); only the
    Python copy avdnn's own filters read is empty, said once per process, never a failure.
    """
    try:
        return dict(frame.metadata)
    except UnicodeDecodeError:
        _warn_once()
        return {}


@functools.cache
def _warn_once() -> None:  # no arguments: one line per process, whatever the number of frames
    log.warning(
        "frame metadata that is not UTF-8 (a camera's EXIF?) is not shown to avdnn's filters; "
        "the frame keeps it for libavfilter"
    )
