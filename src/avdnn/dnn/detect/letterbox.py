"""Where model-input pixels sit in the frame: FFmpeg's stretch, or a letterbox.

FFmpeg stretches every frame to the model's W x H (reference s.5.3, s.7 #17). Families trained
on letterboxed images (YOLOv5/v8, YOLOX) lose accuracy that way, so avdnn can also scale with
the aspect ratio kept and pad. :class:`Letterbox` records the geometry of either choice, and
:func:`boxes_to_frame` is the one place where boxes go back from input pixels to frame pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from avdnn.errors import InvalidArgumentError


@dataclass(frozen=True)
class Letterbox:
    """The frame's picture inside the model input: ``resized`` size at offset ``pad``.

    A stretch is the case ``resized == input`` and ``pad == (0, 0)``.
    """

    frame_width: int
    frame_height: int
    input_width: int
    input_height: int
    resized_width: int
    resized_height: int
    pad_left: int = 0
    pad_top: int = 0

    def __post_init__(self) -> None:
        for name in ("frame_width", "frame_height", "input_width", "input_height", "resized_width", "resized_height"):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(f"Letterbox.{name}: expected > 0, got {getattr(self, name)}")
        if not (
            self.pad_left >= 0
            and self.pad_left + self.resized_width <= self.input_width
            and self.pad_top >= 0
            and self.pad_top + self.resized_height <= self.input_height
        ):
            raise InvalidArgumentError(
                f"Letterbox: a {self.resized_width}x{self.resized_height} picture at ({self.pad_left}, {self.pad_top}) "
                f"does not fit a {self.input_width}x{self.input_height} input"
            )

    @property
    def scale_x(self) -> float:
        """Input pixels per frame pixel, horizontally."""
        return self.resized_width / self.frame_width

    @property
    def scale_y(self) -> float:
        return self.resized_height / self.frame_height

    @property
    def is_stretch(self) -> bool:
        return (self.resized_width, self.resized_height, self.pad_left, self.pad_top) == (
            self.input_width,
            self.input_height,
            0,
            0,
        )

    @property
    def pad(self) -> tuple[int, int, int, int]:
        """Padding (left, top, right, bottom) in input pixels, as a pad filter takes it."""
        return (
            self.pad_left,
            self.pad_top,
            self.input_width - self.resized_width - self.pad_left,
            self.input_height - self.resized_height - self.pad_top,
        )


def stretch(frame_width: int, frame_height: int, input_width: int, input_height: int) -> Letterbox:
    """FFmpeg's default: the whole frame scaled to the whole input, aspect ratio ignored."""
    return Letterbox(frame_width, frame_height, input_width, input_height, input_width, input_height)


def letterbox(
    frame_width: int, frame_height: int, input_width: int, input_height: int, *, center: bool = True
) -> Letterbox:
    """The forward letterbox: the largest aspect-preserving size that fits, padded (centred by default).

    Ultralytics and YOLOX pad centred and top-left respectively; ``center=False`` gives the latter.
    """
    if min(frame_width, frame_height, input_width, input_height) <= 0:
        raise InvalidArgumentError(
            f"letterbox: expected positive sizes, got frame {frame_width}x{frame_height}, "
            f"input {input_width}x{input_height}"
        )
    scale = min(input_width / frame_width, input_height / frame_height)
    rw = min(input_width, max(1, round(frame_width * scale)))
    rh = min(input_height, max(1, round(frame_height * scale)))
    left = (input_width - rw) // 2 if center else 0
    top = (input_height - rh) // 2 if center else 0
    return Letterbox(frame_width, frame_height, input_width, input_height, rw, rh, left, top)


def placement(
    frame_width: int, frame_height: int, input_width: int, input_height: int, *, use_letterbox: bool
) -> Letterbox:
    """Where a frame lands in the model input: the centred letterbox, or FFmpeg's stretch.

    The one place both the input conversion (io_analytics) and the box mapping (the detect
    parsers) take their geometry from, so the two cannot disagree.
    """
    if use_letterbox:
        return letterbox(frame_width, frame_height, input_width, input_height)
    return stretch(frame_width, frame_height, input_width, input_height)


def boxes_to_frame(xyxy: np.ndarray, geometry: Letterbox, *, clip: bool = False) -> np.ndarray:
    """Map (N, 4) corner boxes from model-input pixels to frame pixels (float32).

    ``clip`` limits the corners to the frame, for boxes that ran into the padding.
    """
    b = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    sx = geometry.resized_width / geometry.frame_width
    sy = geometry.resized_height / geometry.frame_height
    out = np.empty_like(b)
    out[:, 0::2] = (b[:, 0::2] - geometry.pad_left) / sx
    out[:, 1::2] = (b[:, 1::2] - geometry.pad_top) / sy
    if clip:
        out[:, 0::2] = out[:, 0::2].clip(0, geometry.frame_width)
        out[:, 1::2] = out[:, 1::2].clip(0, geometry.frame_height)
    return out.astype(np.float32)


def boxes_to_input(xyxy: np.ndarray, geometry: Letterbox) -> np.ndarray:
    """The inverse of :func:`boxes_to_frame`: frame pixels to model-input pixels (float64)."""
    b = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    out = np.empty_like(b)
    out[:, 0::2] = b[:, 0::2] * (geometry.resized_width / geometry.frame_width) + geometry.pad_left
    out[:, 1::2] = b[:, 1::2] * (geometry.resized_height / geometry.frame_height) + geometry.pad_top
    return out


__all__ = ["Letterbox", "boxes_to_frame", "boxes_to_input", "letterbox", "stretch"]
