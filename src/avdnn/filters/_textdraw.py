"""drawtext's fallback renderer: Pillow rasterises the labels, numpy blends them into the planes.

Used only when libavfilter has no drawtext (PyAV's wheels are built without freetype). Colours
are parsed by libavfilter itself (a 1x1 ``color`` source, so every FFmpeg colour syntax works)
and converted to the frame's format by libswscale; the coverage mask is blended into each plane
(chroma planes get the mask averaged over their subsampling blocks). Position, size and colours
follow FFmpeg's options; the glyph pixels are Pillow's, not freetype-through-FFmpeg's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..media.frame import Frame
from ..media.pixfmt import lookup


def parse_color(text: str, label: str, option: str) -> tuple[int, int, int, int]:
    """An FFmpeg colour (``red``, ``0xRRGGBB[AA]``, ``#RRGGBB``, ``red@0.5``...) as RGBA bytes."""
    import av

    graph = av.filter.Graph()
    try:
        src = graph.add("color", c=text, s="1x1", d="0.04")
        fmt = graph.add("format", pix_fmts="rgba")
        sink = graph.add("buffersink")
        graph.link_nodes(src, fmt, sink)
        graph.configure()
        px = graph.vpull().to_ndarray()[0, 0]
    except (av.FFmpegError, ValueError) as exc:
        raise InvalidArgumentError(f"Cannot find color '{text}'", filter=label, option=option) from exc
    return int(px[0]), int(px[1]), int(px[2]), int(px[3])


def color_in_format(rgba: tuple[int, int, int, int], fmt: str) -> list[np.ndarray]:
    """One sample per plane of ``fmt`` for this colour (BT.601, as FFmpeg's drawing utilities)."""
    import av

    block = np.empty((4, 4, 3), dtype=np.uint8)
    block[...] = rgba[:3]
    frame = av.VideoFrame.from_ndarray(block, format="rgb24").reformat(
        format=fmt, src_colorspace="ITU601", dst_colorspace="ITU601")
    return [p[0, 0] for p in Frame.from_av(frame).planes]


class TextRenderer:
    """Draw (text, x, y) items onto frames with one font, colour and box style."""

    def __init__(self, values: dict[str, Any], fontsize: int, *, label: str) -> None:
        from .overlay_bboxes import require_pillow

        self.Image, self.ImageDraw, font_mod = require_pillow(label)
        fontfile = values.get("fontfile")
        try:
            self.font = font_mod.truetype(fontfile, fontsize) if fontfile else font_mod.load_default(fontsize)
        except OSError as exc:
            raise InvalidArgumentError(f"Could not load font \"{fontfile}\": {exc}", filter=label,
                                       option="fontfile") from exc
        self.fg = parse_color(values.get("fontcolor") or "black", label, "fontcolor")
        self.boxcolor = parse_color(values.get("boxcolor") or "white", label, "boxcolor")
        self.box = bool(values.get("box"))
        try:
            self.border = int(float(str(values.get("boxborderw") or "0").split("|")[0]))
            self.alpha = min(max(float(values.get("alpha") or "1"), 0.0), 1.0)
        except ValueError as exc:
            raise InvalidArgumentError(f"avdnn's drawtext takes numbers for boxborderw/alpha: {exc}",
                                       filter=label) from None
        self._colors: dict[tuple[str, tuple[int, int, int, int]], list[np.ndarray]] = {}

    def _masks(self, width: int, height: int, texts: Sequence[tuple[str, int, int]]) -> tuple[Any, Any]:
        box = self.Image.new("L", (width, height), 0)
        ink = self.Image.new("L", (width, height), 0)
        draw_box, draw_ink = self.ImageDraw.Draw(box), self.ImageDraw.Draw(ink)
        for text, x, y in texts:
            if self.box:
                x0, y0, x1, y1 = draw_ink.textbbox((x, y), text, font=self.font)
                b = self.border
                draw_box.rectangle((x0 - b, y0 - b, x1 + b - 1, y1 + b - 1), fill=255)
            draw_ink.text((x, y), text, font=self.font, fill=255)
        return np.asarray(box, dtype=np.float32) / 255, np.asarray(ink, dtype=np.float32) / 255

    def _color(self, rgba: tuple[int, int, int, int], fmt: str) -> list[np.ndarray]:
        key = (fmt, rgba)
        if key not in self._colors:
            self._colors[key] = color_in_format(rgba, fmt)
        return self._colors[key]

    def draw(self, frame: Frame, texts: Sequence[tuple[str, int, int]]) -> Frame:
        if not texts:
            return frame
        box, ink = self._masks(frame.width, frame.height, texts)
        planes = [np.array(p, copy=True) for p in frame.planes]
        layers = ([(box, self.boxcolor)] if self.box else []) + [(ink, self.fg)]
        spec = lookup(frame.format)
        for mask, rgba in layers:
            coverage = mask * (rgba[3] / 255.0) * self.alpha
            for plane, pspec, value in zip(planes, spec.planes, self._color(rgba, frame.format), strict=True):
                a = _subsample(coverage, pspec.log2_w, pspec.log2_h, plane.shape[:2])
                if plane.ndim == 3:
                    a = a[..., None]
                mixed = plane.astype(np.float32) * (1 - a) + np.asarray(value, dtype=np.float32) * a
                plane[...] = np.clip(np.rint(mixed), 0, np.iinfo(plane.dtype).max).astype(plane.dtype)
        return frame.with_planes(planes)


def _subsample(mask: np.ndarray, log2_w: int, log2_h: int, shape: tuple[int, ...]) -> np.ndarray:
    """The mean of ``mask`` over each chroma sample's block, as a (h, w) array of ``shape``."""
    if not log2_w and not log2_h:
        return mask
    bh, bw = 1 << log2_h, 1 << log2_w
    h, w = shape[0], shape[1]
    padded = np.pad(mask, ((0, h * bh - mask.shape[0]), (0, w * bw - mask.shape[1])), mode="edge")
    return padded.reshape(h, bh, w, bw).mean(axis=(1, 3))
