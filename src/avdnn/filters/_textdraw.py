"""drawtext's fallback renderer: Pillow rasterises the labels, numpy blends them into the planes.

Used only when libavfilter has no drawtext (PyAV's wheels are built without freetype). Colours
are parsed by libavfilter itself (a 1x1 ``color`` source, so every FFmpeg colour syntax works)
and converted to the frame's format by libswscale; the coverage mask is blended into each plane
(chroma planes get the mask averaged over their subsampling blocks). Position, size and colours
follow FFmpeg's options; the glyph pixels are Pillow's, not freetype-through-FFmpeg's.

Only the labels' rectangles are rasterised and blended: each label's extent (with its box
border), widened to whole chroma blocks and merged where labels overlap, so a few labels on a
large frame cost a few small blends, and the pixels are those a whole-frame blend gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from avdnn.errors import AvdnnError, InvalidArgumentError, NotSupportedError
from avdnn.media.filtergraph import FilterGraph
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import lookup

Rect = tuple[int, int, int, int]  # x0, y0, x1, y1 (end exclusive)


def require_pillow(label: str) -> Any:
    """Pillow, or AVERROR(ENOSYS) naming the install command."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise NotSupportedError(
            "drawtext: this libavfilter has no drawtext (no freetype) and Pillow is not installed to draw the "
            "labels instead: pip install pillow",
            filter=label,
        ) from None
    return Image, ImageDraw, ImageFont


def parse_color(text: str, label: str, option: str) -> tuple[int, int, int, int]:
    """An FFmpeg colour (``red``, ``0xRRGGBB[AA]``, ``#RRGGBB``, ``red@0.5``...) as RGBA bytes."""
    graph = FilterGraph()
    try:
        src = graph.add("color", options={"c": text, "s": "1x1", "d": "0.04"})
        graph.chain(src, graph.add("format", options={"pix_fmts": "rgba"}), graph.sink("video"))
        graph.configure()
        px = graph.pull_one().to_ndarray()[0, 0]
    except (AvdnnError, ValueError) as exc:
        raise InvalidArgumentError(f"Cannot find color '{text}'", filter=label, option=option) from (
            exc.__cause__ or exc
        )
    return int(px[0]), int(px[1]), int(px[2]), int(px[3])


def color_in_format(rgba: tuple[int, int, int, int], fmt: str) -> list[np.ndarray]:
    """One sample per plane of ``fmt`` for this colour (BT.601, as FFmpeg's drawing utilities)."""
    import av

    block = np.empty((4, 4, 3), dtype=np.uint8)
    block[...] = rgba[:3]
    frame = av.VideoFrame.from_ndarray(block, format="rgb24").reformat(
        format=fmt, src_colorspace="ITU601", dst_colorspace="ITU601"
    )
    return [p[0, 0] for p in Frame.from_av(frame).planes]


class Layer:
    """Where one colour goes on a frame of one size and format: per plane, flat indices and coverage."""

    def __init__(self, mask: np.ndarray, rgba: tuple[int, int, int, int], fmt: str) -> None:
        spec = lookup(fmt)
        samples = color_in_format(rgba, fmt)
        self.planes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        h, w = mask.shape
        for pspec, value in zip(spec.planes, samples, strict=True):
            pw, ph = pspec.size(w, h)
            cover = _subsample(mask, pspec.log2_w, pspec.log2_h, (ph, pw)) * (rgba[3] / 255.0)
            idx = np.flatnonzero(cover > 1 / 512)
            self.planes.append((idx, cover.reshape(-1)[idx].astype(np.float32), np.asarray(value, dtype=np.float32)))

    def blend(self, planes: list[np.ndarray]) -> None:
        for plane, (idx, alpha, value) in zip(planes, self.planes, strict=True):
            if not len(idx):
                continue
            top = np.iinfo(plane.dtype).max
            a = alpha[:, None] if plane.ndim == 3 else alpha  # packed: every channel of the covered pixels
            flat = plane.reshape(-1, plane.shape[2]) if plane.ndim == 3 else plane.reshape(-1)
            px = flat[idx].astype(np.float32)
            flat[idx] = np.clip(np.rint(px * (1 - a) + value * a), 0, top).astype(plane.dtype)


class TextRenderer:
    """Draw (text, x, y) items onto frames with one font, colour and box style."""

    def __init__(self, values: dict[str, Any], fontsize: int, *, label: str) -> None:
        self.Image, self.ImageDraw, font_mod = require_pillow(label)
        fontfile = values.get("fontfile")
        try:
            self.font = font_mod.truetype(fontfile, fontsize) if fontfile else font_mod.load_default(fontsize)
        except OSError as exc:
            raise InvalidArgumentError(
                f'Could not load font "{fontfile}": {exc}', filter=label, option="fontfile"
            ) from exc
        self.fg = parse_color(values.get("fontcolor") or "black", label, "fontcolor")
        self.boxcolor = parse_color(values.get("boxcolor") or "white", label, "boxcolor")
        self.box = bool(values.get("box"))
        try:
            self.border = int(float(str(values.get("boxborderw") or "0").split("|")[0]))
            self.alpha = min(max(float(values.get("alpha") or "1"), 0.0), 1.0)
        except ValueError as exc:
            raise InvalidArgumentError(
                f"avdnn's drawtext takes numbers for boxborderw/alpha: {exc}", filter=label
            ) from None
        self._colors: dict[tuple[str, tuple[int, int, int, int]], list[np.ndarray]] = {}

    def _masks(
        self, size: tuple[int, int], origin: tuple[int, int], texts: Sequence[tuple[str, int, int]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Box and ink coverage (0..1) of the ``size`` rectangle at ``origin``, all labels drawn."""
        box = self.Image.new("L", size, 0)
        ink = self.Image.new("L", size, 0)
        draw_box, draw_ink = self.ImageDraw.Draw(box), self.ImageDraw.Draw(ink)
        ox, oy = origin
        for text, x, y in texts:
            if self.box:
                x0, y0, x1, y1 = draw_ink.textbbox((x - ox, y - oy), text, font=self.font)
                b = self.border
                draw_box.rectangle((x0 - b, y0 - b, x1 + b - 1, y1 + b - 1), fill=255)
            draw_ink.text((x - ox, y - oy), text, font=self.font, fill=255)
        return np.asarray(box, dtype=np.float32) / 255, np.asarray(ink, dtype=np.float32) / 255

    def rects(
        self, width: int, height: int, block: tuple[int, int], texts: Sequence[tuple[str, int, int]]
    ) -> list[Rect]:
        """Where the labels can put ink: their extents on whole chroma blocks, clipped, overlaps merged."""
        if not hasattr(self, "_measure"):
            self._measure = self.ImageDraw.Draw(self.Image.new("L", (1, 1), 0))
        bw, bh = block
        pad = 1 + (self.border if self.box else 0)  # the box border and a pixel of antialiasing
        out: list[Rect] = []
        for text, x, y in texts:
            x0, y0, x1, y1 = (int(v) for v in self._measure.textbbox((x, y), text, font=self.font))
            r = (
                max(0, (x0 - pad) // bw * bw),
                max(0, (y0 - pad) // bh * bh),
                min(width, -(-(x1 + pad) // bw) * bw),
                min(height, -(-(y1 + pad) // bh) * bh),
            )
            if r[0] < r[2] and r[1] < r[3]:
                out.append(r)
        merged = True
        while merged:  # a pixel is blended once, as by one whole-frame mask
            merged = False
            for i in range(len(out)):
                for j in range(i + 1, len(out)):
                    a, b = out[i], out[j]
                    if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                        out[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                        del out[j]
                        merged = True
                        break
                if merged:
                    break
        return out

    def _color(self, rgba: tuple[int, int, int, int], fmt: str) -> list[np.ndarray]:
        key = (fmt, rgba)
        if key not in self._colors:
            self._colors[key] = color_in_format(rgba, fmt)
        return self._colors[key]

    def draw(self, frame: Frame, texts: Sequence[tuple[str, int, int]]) -> Frame:
        if not texts:
            return frame
        spec = lookup(frame.format)
        block = (1 << max(p.log2_w for p in spec.planes), 1 << max(p.log2_h for p in spec.planes))
        rects = self.rects(frame.width, frame.height, block, texts)
        if not rects:
            return frame
        planes = [np.array(p, copy=True) for p in frame.planes]
        values = [(rgba, self._color(rgba, frame.format)) for rgba in ([self.boxcolor] if self.box else []) + [self.fg]]
        for x0, y0, x1, y1 in rects:
            box, ink = self._masks((x1 - x0, y1 - y0), (x0, y0), texts)
            for mask, (rgba, samples) in zip([box] * self.box + [ink], values, strict=True):
                coverage = mask * (rgba[3] / 255.0) * self.alpha
                for plane, pspec, value in zip(planes, spec.planes, samples, strict=True):
                    lw, lh = pspec.log2_w, pspec.log2_h
                    region = plane[y0 >> lh : -(-y1 >> lh), x0 >> lw : -(-x1 >> lw)]
                    a = _subsample(coverage, pspec.log2_w, pspec.log2_h, region.shape[:2])
                    if region.ndim == 3:
                        a = a[..., None]
                    mixed = region.astype(np.float32) * (1 - a) + np.asarray(value, dtype=np.float32) * a
                    region[...] = np.clip(np.rint(mixed), 0, np.iinfo(region.dtype).max).astype(region.dtype)
        return frame.with_planes(planes)


def label_renderer(values: dict[str, Any], boxcolor: str, *, label: str) -> TextRenderer | None:
    """The boxed labels a drawing filter puts by its shapes, from its ``text``, ``fontsize``,
    ``fontcolor``, ``boxcolor`` and ``fontfile`` options (None with ``text=0``)."""
    if not values.get("text", True):
        return None
    style = {
        "fontcolor": values.get("fontcolor") or "black",
        "boxcolor": values.get("boxcolor") or boxcolor,
        "box": True,
        "boxborderw": "3",
        "fontfile": values.get("fontfile"),
    }
    return TextRenderer(style, int(values.get("fontsize") or 16), label=label)


def _subsample(mask: np.ndarray, log2_w: int, log2_h: int, shape: tuple[int, ...]) -> np.ndarray:
    """The mean of ``mask`` over each chroma sample's block, as a (h, w) array of ``shape``."""
    if not log2_w and not log2_h:
        return mask
    bh, bw = 1 << log2_h, 1 << log2_w
    h, w = shape[0], shape[1]
    padded = np.pad(mask, ((0, h * bh - mask.shape[0]), (0, w * bw - mask.shape[1])), mode="edge")
    out: np.ndarray = padded.reshape(h, bh, w, bw).mean(axis=(1, 3))
    return out
