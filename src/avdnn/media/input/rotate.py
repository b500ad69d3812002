"""Autorotation: the display matrix turned into the transpose/flip filters ffmpeg inserts.

A phone clip stores its pixels sideways and a display matrix saying how to show them. The
ffmpeg CLI applies it before the user's filters (fftools/ffmpeg_filter.c, ``get_rotation``
and the ``insert_filter`` calls of configure_input_video_filter), so every filter, a detector
included, sees the picture upright, and the output carries no matrix. ``-display_rotation``,
``-display_hflip`` and ``-display_vflip`` replace the stream's matrix with one built as
fftools/ffmpeg_demux.c builds it (av_display_rotation_set, then av_display_matrix_flip).

The matrix arithmetic of libavutil/display.c is restated here (nine integers, a few lines):
PyAV reads a frame's rotation angle but neither builds a matrix nor exposes its flip signs,
which decide between ``transpose=clock`` and ``transpose=cclock_flip``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Matrix = tuple[int, ...]  # nine int32, 16.16 fixed point except [2], [5], [8] (2.30)

#: The filters fftools inserts for each rotation, as (name, args) pairs.
FilterList = list[tuple[str, str | None]]


def _fp(x: int) -> float:
    return x / 65536.0


def rotation_get(matrix: Sequence[int]) -> float:
    """libavutil's av_display_rotation_get: counter-clockwise degrees, NaN for a degenerate matrix."""
    s0 = math.hypot(_fp(matrix[0]), _fp(matrix[3]))
    s1 = math.hypot(_fp(matrix[1]), _fp(matrix[4]))
    if s0 == 0.0 or s1 == 0.0:
        return math.nan
    return -math.atan2(_fp(matrix[1]) / s1, _fp(matrix[0]) / s0) * 180 / math.pi


def rotation_set(angle: float) -> list[int]:
    """libavutil's av_display_rotation_set: the matrix of a counter-clockwise rotation."""
    radians = -angle * math.pi / 180.0
    c, s = math.cos(radians), math.sin(radians)
    m = [0] * 9
    m[0], m[1], m[3], m[4] = int(c * 65536), int(-s * 65536), int(s * 65536), int(c * 65536)
    m[8] = 1 << 30
    return m


def matrix_flip(matrix: list[int], hflip: bool, vflip: bool) -> list[int]:
    """libavutil's av_display_matrix_flip."""
    if not (hflip or vflip):
        return matrix
    flip = (-1 if hflip else 1, -1 if vflip else 1, 1)
    return [v * flip[i % 3] for i, v in enumerate(matrix)]


def matrix_from_options(rotation: float | None, hflip: bool, vflip: bool) -> Matrix:
    """The matrix ffmpeg's demuxer puts on a stream given -display_rotation/-display_hflip/-display_vflip.

    fftools/ffmpeg_demux.c (add_display_matrix_to_stream) sets the *negated* angle: the option
    says how the picture is rotated, the matrix how to undo it.
    """
    return tuple(matrix_flip(rotation_set(-(rotation or 0.0)), hflip, vflip))


def get_rotation(matrix: Sequence[int] | None) -> float:
    """fftools' get_rotation: clockwise degrees in [0, 360), rounded to a whole degree."""
    theta = -round(rotation_get(matrix)) if matrix is not None else 0.0
    if math.isnan(theta):
        return 0.0
    theta -= 360 * math.floor(theta / 360 + 0.9 / 360)
    return float(theta)


def autorotate_filters(matrix: Sequence[int] | None) -> FilterList:
    """The filters configure_input_video_filter inserts for ``matrix`` (empty for none)."""
    if matrix is None:
        return []
    theta = get_rotation(matrix)
    if abs(theta - 90) < 1.0:
        return [("transpose", "cclock_flip" if matrix[3] > 0 else "clock")]
    if abs(theta - 180) < 1.0:
        out: FilterList = []
        if matrix[0] < 0:
            out.append(("hflip", None))
        if matrix[4] < 0:
            out.append(("vflip", None))
        return out
    if abs(theta - 270) < 1.0:
        return [("transpose", "clock_flip" if matrix[3] < 0 else "cclock")]
    if abs(theta) > 1.0:
        return [("rotate", f"{theta:f}*PI/180")]
    if matrix[4] < 0:
        return [("vflip", None)]
    return []


def swaps_axes(filters: FilterList) -> bool:
    """Whether the inserted filters turn a WxH picture into HxW."""
    return any(name == "transpose" for name, _ in filters)
