"""What the ffmpeg tool decides for an output's video: the image2 codec by file extension, the
``-fps_mode auto`` of a muxer (ffmpeg_mux_init.c) and the encoder it opens (ffmpeg_enc.c's
enc_open: threads, time base, rate, aspect ratio, colour, field order, the display matrix).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from avdnn.media.frame import Frame
from avdnn.media.output.hashmux import HashStream

__all__ = ["AVFMT_NOTIMESTAMPS", "AVFMT_VARIABLE_FPS", "IMAGE2_CODECS", "auto_fps_mode", "open_video_encoder"]

#: ffmpeg's image2 codec by file extension (libavformat/img2.c), for -f image2 outputs.
IMAGE2_CODECS = {
    "png": "png",
    "jpg": "mjpeg",
    "jpeg": "mjpeg",
    "bmp": "bmp",
    "tif": "tiff",
    "tiff": "tiff",
    "ppm": "ppm",
    "pgm": "pgm",
    "pbm": "pbm",
    "pam": "pam",
    "webp": "libwebp",
    "gif": "gif",
    "tga": "targa",
    "exr": "exr",
    "qoi": "qoi",
    "sgi": "sgi",
    "pcx": "pcx",
    "dpx": "dpx",
    "jp2": "jpeg2000",
    "j2k": "jpeg2000",
    "xwd": "xwd",
    "pfm": "pfm",
    "phm": "phm",
    "hdr": "hdr",
}
AVFMT_NOTIMESTAMPS = 0x80
AVFMT_VARIABLE_FPS = 0x400
AV_CODEC_FLAG_BITEXACT = 0x800000


def auto_fps_mode(format_name: str, flags: int, rate_given: bool) -> str:
    """ffmpeg's -fps_mode auto for a muxer (ffmpeg_mux_init.c); -r asks for a constant rate."""
    if format_name == "avi":
        mode = "vfr"
    elif flags & AVFMT_VARIABLE_FPS:
        mode = "passthrough" if flags & AVFMT_NOTIMESTAMPS else "vfr"
    else:
        mode = "vscfr"
    if rate_given and mode == "vfr":
        mode = "vscfr"
    return mode


def open_video_encoder(
    container: Any,
    codec_name: str,
    canonical_name: str,
    frame: Frame,
    rate: Fraction,
    tb: Fraction,
    *,
    options: dict[str, str],
    bitexact: bool,
    display_matrix: Callable[[], Sequence[int] | None] | None,
) -> tuple[Any, Any]:
    """The output's video encoder, opened for its first frame: (what encodes, the output stream).

    With a container both are its new stream; for a hash muxer (no container) a bare codec
    context and the :class:`HashStream` the hash header describes.
    """
    import av

    if container is not None:
        stream = container.add_stream(codec_name, rate=rate, options=options)
        enc = stream.codec_context
    else:
        stream = None
        enc = av.CodecContext.create(codec_name, "w")
        enc.options = dict(options)
    enc.width, enc.height, enc.pix_fmt = frame.width, frame.height, frame.format
    enc.thread_type, enc.thread_count = "AUTO", 0  # ffmpeg's defaults (PyAV's are slice threads)
    enc.time_base = tb
    enc.framerate = rate
    if frame.sample_aspect_ratio:
        enc.sample_aspect_ratio = frame.sample_aspect_ratio
    if bitexact:
        enc.flags |= AV_CODEC_FLAG_BITEXACT
    color = frame._color_props()
    if color is not None:
        enc.color_range, enc.colorspace, enc.color_primaries, enc.color_trc = color
    # ffmpeg's enc_open: the field order from the first frame (progressive unless interlaced)
    src = frame._av
    if src is not None and src.interlaced_frame:
        # AV_FIELD_TT / AV_FIELD_BB (PyAV 18 does not expose top_field_first: top first, the common case)
        enc.field_order = 2 if getattr(src, "top_field_first", True) else 3
    else:
        enc.field_order = 1  # AV_FIELD_PROGRESSIVE
    if stream is not None:
        matrix = display_matrix() if display_matrix is not None else None
        if matrix is not None:
            stream.set_display_matrix(list(matrix))
        enc.open(strict=False)
        return stream, stream
    enc.open()
    hashed = HashStream(
        "video",
        canonical_name,
        tb,
        width=frame.width,
        height=frame.height,
        sar=frame.sample_aspect_ratio,
        extradata=enc.extradata or None,
    )
    return enc, hashed
