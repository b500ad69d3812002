"""drawzones: the zones, lines and their live counts on the video.

``...,zone=name=bay:points=...,line=name=gate:points=...,drawzones`` draws every zone and line the
frame carries (the analytics side data of the filters before it): each zone's outline (and, with
``fill`` > 0, its inside tinted), each line with an arrow at its middle pointing to its *in* side,
and a label with the counts so far (``bay: 2 inside, 5 entered``, ``gate: in 3, out 1``) at the
zone's first point or near the line's first point. Put ``drawbox``/``drawtext`` from the detections next to
it for the boxes.

The shapes are rasterised once per frame size and parameter set (Pillow), and blended only where
they put colour (numpy over precomputed pixel indices, chroma planes over their subsampled
coverage); a label is rasterised when its text changes (the drawtext fallback's renderer). Needs
Pillow (``pip install 'avdnn[text]'``), as drawtext does without freetype.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from avdnn.events.record import Shape, analytics_of
from avdnn.filters import _textdraw
from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.media.frame import Frame


class DrawZonesFilter(Filter):
    """Draw the frame's zones and lines with their counts."""

    name: ClassVar[str] = "drawzones"
    description: ClassVar[str] = "Draw zones, lines and their live counts (avdnn)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("color", "string", "yellow", help="colour of the zones and lines (FFmpeg colour syntax)"),
        Option("thickness", "int", 2, 1, 64, help="outline and line width in pixels"),
        Option("fill", "float", 0.0, 0, 1, help="opacity of a zone's inside (0: outline only)"),
        Option("text", "bool", True, 0, 1, help="draw the counts"),
        Option("fontsize", "int", 16, 4, 512, help="size of the counts' text"),
        Option("fontcolor", "string", "black", help="colour of the counts' text"),
        Option("boxcolor", "string", "yellow", help="colour of the box behind the counts"),
        Option("fontfile", "string", None, help="font file for the counts (default: Pillow's)", reads=True),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.Image, self.ImageDraw, _ = _textdraw.require_pillow(self.label)
        self.rgba = _textdraw.parse_color(str(values.get("color") or "yellow"), self.label, "color")
        self.thickness = int(values.get("thickness") or 2)
        self.fill = float(values.get("fill") or 0.0)
        self.renderer = _textdraw.label_renderer(values, "yellow", label=self.label)
        self._layers: dict[tuple[Any, ...], _textdraw.Layer] = {}

    def filter(self, frame: Frame) -> list[Frame]:
        analytics = analytics_of(frame)
        if analytics is None or not (analytics.zones or analytics.lines):
            return [frame]
        zones = tuple((n, z.shape) for n, z in analytics.zones.items() if z.shape is not None)
        lines = tuple((n, ln.shape) for n, ln in analytics.lines.items() if ln.shape is not None)
        key = (frame.width, frame.height, frame.format, zones, lines)
        layer = self._layers.get(key)
        if layer is None:
            if len(self._layers) > 8:
                self._layers.clear()
            layer = self._layers[key] = _textdraw.Layer(self._mask(frame, zones, lines), self.rgba, frame.format)
        planes = [np.array(p, copy=True) for p in frame.planes]
        layer.blend(planes)
        out = frame.with_planes(planes)
        if self.renderer is None:
            return [out]
        texts = []
        for name, zone in analytics.zones.items():
            if zone.shape is not None:
                x, y = _scaled(zone.shape, frame)[0]
                text = f"{name}: {len(zone.inside)} inside, {sum(zone.entered.values())} entered"
                texts.append((text, int(x) + 4, int(y) + 4))
        for name, ln in analytics.lines.items():
            if ln.shape is not None:
                (ax, ay), (bx, by) = _scaled(ln.shape, frame)
                text = f"{name}: in {sum(ln.crossed_in.values())}, out {sum(ln.crossed_out.values())}"
                # near its first point, clear of the arrow at its middle
                x, y = ax + (bx - ax) * 0.15, ay + (by - ay) * 0.15
                texts.append((text, int(x) + 6, int(y)))
        return [self.renderer.draw(out, texts)]

    def _mask(self, frame: Frame, zones: tuple[tuple[str, Shape], ...], lines: tuple[tuple[str, Shape], ...]) -> Any:
        """The coverage (0..1) of every outline, fill and arrow on a frame of this size."""
        outline = self.Image.new("L", (frame.width, frame.height), 0)
        tint = self.Image.new("L", (frame.width, frame.height), 0)
        draw, draw_tint = self.ImageDraw.Draw(outline), self.ImageDraw.Draw(tint)
        for _, shape in zones:
            pts = [(float(x), float(y)) for x, y in _scaled(shape, frame)]
            if self.fill > 0:
                draw_tint.polygon(pts, fill=round(255 * self.fill))
            draw.line([*pts, pts[0]], fill=255, width=self.thickness, joint="curve")
        for _, shape in lines:
            (ax, ay), (bx, by) = _scaled(shape, frame)
            draw.line([(ax, ay), (bx, by)], fill=255, width=self.thickness)
            draw.polygon(_arrow((ax, ay), (bx, by), 6.0 + 3 * self.thickness), fill=255)
        a = np.asarray(outline, dtype=np.float32) / 255
        b = np.asarray(tint, dtype=np.float32) / 255
        return a + (1 - a) * b


def _scaled(shape: Shape, frame: Frame) -> list[tuple[float, float]]:
    """A shape's points in this frame's pixels (a scale between the zone and here moves them)."""
    points, (w, h) = shape
    sx = frame.width / w if w else 1.0
    sy = frame.height / h if h else 1.0
    return [(x * sx, y * sy) for x, y in points]


def _arrow(a: tuple[float, float], b: tuple[float, float], size: float) -> list[tuple[float, float]]:
    """A triangle at the line's middle pointing to its in side (the left of a -> b on the picture)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    nx, ny = uy, -ux  # left of the direction, image y down
    mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    tip = (mx + nx * size * 1.5, my + ny * size * 1.5)
    return [(mx + ux * size / 2, my + uy * size / 2), tip, (mx - ux * size / 2, my - uy * size / 2)]


__all__ = ["DrawZonesFilter"]
