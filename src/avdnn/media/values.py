"""ffmpeg's video sizes on the command line (``-s WxH``, ``-s hd720``): libavutil's own parser.

Durations are media.timing's ``parse_time`` (av_parse_time's syntax, in microseconds).
"""

from __future__ import annotations

from avdnn.errors import InvalidArgumentError


def parse_size(text: str, option: str = "s") -> tuple[int, int]:
    """``-s`` as av_parse_video_size reads it (``WxH`` or a name such as ``hd720``)."""
    from avdnn.media.libav.codecs import parse_video_size

    size = parse_video_size(text)
    if size is None:
        raise InvalidArgumentError(f"Invalid frame size: {text}.", option=option)
    return size
