"""drawobjects: what the detections carry besides boxes, on the video (avdnn).

``dnn_detect=model=zoo:movenet_lightning,drawobjects`` draws, per object: its mask as a
translucent tint (``mask_opacity``), its keypoints and skeleton (COCO's when the keypoints are
COCO's 17, points alone otherwise; points under ``keypoint_threshold`` left out), its rotated box
outline, and the text a recognizer read above its box (``text``). Plain boxes and labels stay
``drawbox``/``drawtext``'s (``box_source=side_data_detection_bboxes``), in the style of which this
filter is made: the three go together.

Colours follow the object: its track id (after ``track``) or else its class id, in supervision's
palette (drawbox's ``track_color``), unless ``color`` names one. Per colour, the coverage is one
array over the window its objects draw in (on whole chroma blocks): masks pasted from their
crops, lines and points rasterised by Pillow, blended by numpy over that window only (drawtext's
fallback rule); no per-pixel Python. Needs Pillow (``pip install 'avdnn[text]'``), as drawzones.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.detect import COCO_KEYPOINTS, COCO_SKELETON
from avdnn.filters import _textdraw
from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.filters.overlay_bboxes import TRACK_PALETTE
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame
from avdnn.media.objects import rotated_corners
from avdnn.media.pixfmt import lookup


class DrawObjectsFilter(Filter):
    """Draw masks, keypoints with their skeleton, rotated boxes and the read text."""

    name: ClassVar[str] = "drawobjects"
    description: ClassVar[str] = "Draw masks, keypoints, rotated boxes and read text of the detections (avdnn)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("color", "string", None, help="one colour for every object (default: by track, else class)"),
        Option("thickness", "int", 2, 1, 64, help="width of skeleton and rotated-box lines in pixels"),
        Option("mask_opacity", "float", 0.4, 0, 1, help="opacity of a mask's tint (0: masks not drawn)"),
        Option("radius", "int", 3, 0, 64, help="radius of a keypoint's dot (0: none)"),
        Option("keypoint_threshold", "float", 0.3, 0, 1, help="keypoints scoring below are not drawn"),
        Option("text", "bool", True, 0, 1, help="draw the text a recognizer read above its box"),
        Option("fontsize", "int", 16, 4, 512, help="size of the text"),
        Option("fontcolor", "string", "black", help="colour of the text"),
        Option("boxcolor", "string", "white", help="colour of the box behind the text"),
        Option("fontfile", "string", None, help="font file for the text (default: Pillow's)", reads=True),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.Image, self.ImageDraw, _ = _textdraw.require_pillow(self.label)
        color = values.get("color")
        self.fixed = _textdraw.parse_color(str(color), self.label, "color") if color else None
        self.palette = [_textdraw.parse_color(c, self.label, "color") for c in TRACK_PALETTE]
        self.thickness = int(values.get("thickness") or 2)
        self.opacity = float(values.get("mask_opacity", 0.4))
        self.radius = int(values.get("radius", 3))
        self.threshold = float(values.get("keypoint_threshold", 0.3))
        self._samples: dict[tuple[str, tuple[int, int, int, int]], list[np.ndarray]] = {}
        self.renderer = _textdraw.label_renderer(values, "white", label=self.label)

    def _colour(self, det: Detections, i: int) -> tuple[int, int, int, int]:
        if self.fixed is not None:
            return self.fixed
        tid = int(det.track_ids[i])
        key = tid if tid >= 0 else max(int(det.class_id[i]), 0)
        return self.palette[key % len(self.palette)]

    def _color_samples(self, rgba: tuple[int, int, int, int], fmt: str) -> list[np.ndarray]:
        key = (fmt, rgba)
        if key not in self._samples:
            self._samples[key] = _textdraw.color_in_format(rgba, fmt)
        return self._samples[key]

    def _extent(self, det: Detections, i: int) -> tuple[float, float, float, float] | None:
        """Where object ``i``'s drawings can put colour (x0, y0, x1, y1), None when nowhere."""
        boxes = []
        mask = det.masks[i] if det.masks is not None else None
        if mask is not None and self.opacity > 0 and mask.area:
            boxes.append((mask.x, mask.y, mask.x + mask.shape[1], mask.y + mask.shape[0]))
        pad = self.thickness + self.radius + 2
        if det.xywhr is not None and not np.isnan(det.xywhr[i]).any():
            c = rotated_corners(det.xywhr[i])[0]
            boxes.append((c[:, 0].min() - pad, c[:, 1].min() - pad, c[:, 0].max() + pad, c[:, 1].max() + pad))
        pts = self._points(det, i)
        if pts is not None:
            pts = pts[np.isfinite(pts).all(axis=1)]  # the points drawn (those under the threshold are NaN)
            boxes.append((pts[:, 0].min() - pad, pts[:, 1].min() - pad, pts[:, 0].max() + pad, pts[:, 1].max() + pad))
        if not boxes:
            return None
        b = np.asarray(boxes, dtype=np.float64)
        return float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max())

    def _points(self, det: Detections, i: int) -> np.ndarray | None:
        if det.keypoints is None:
            return None
        pts = det.keypoints[i]
        ok = np.isfinite(pts).all(axis=1) & (pts[:, 2] >= np.float32(self.threshold))
        return np.where(ok[:, None], pts, np.nan)[:, :2] if ok.any() else None

    def coverage(
        self, det: Detections, width: int, height: int, block: tuple[int, int] = (1, 1)
    ) -> dict[tuple[int, int, int, int], tuple[tuple[int, int, int, int], np.ndarray]]:
        """Per colour, the window (x0, y0, x1, y1, on whole chroma blocks) its objects draw in and
        the coverage 0..1 there of every mask, skeleton, point and rotated box."""
        groups: dict[tuple[int, int, int, int], list[tuple[int, tuple[float, float, float, float]]]] = {}
        for i in range(len(det)):
            extent = self._extent(det, i)
            if extent is not None:
                groups.setdefault(self._colour(det, i), []).append((i, extent))
        skeleton = COCO_SKELETON if det.keypoint_names == COCO_KEYPOINTS else ()
        bw, bh = block
        out = {}
        for rgba, items in groups.items():
            e = np.asarray([ext for _, ext in items])
            x0 = max(0, int(np.floor(e[:, 0].min())) // bw * bw)
            y0 = max(0, int(np.floor(e[:, 1].min())) // bh * bh)
            x1 = min(width, -(-int(np.ceil(e[:, 2].max())) // bw) * bw)
            y1 = min(height, -(-int(np.ceil(e[:, 3].max())) // bh) * bh)
            if x1 <= x0 or y1 <= y0:
                continue
            tint = np.zeros((y1 - y0, x1 - x0), np.float32)
            lines = self.Image.new("L", (x1 - x0, y1 - y0), 0)
            draw = self.ImageDraw.Draw(lines)
            for i, _ in items:
                mask = det.masks[i] if det.masks is not None else None
                if mask is not None and self.opacity > 0:
                    m = mask.clipped(width, height)
                    mx0, my0 = max(m.x, x0), max(m.y, y0)
                    mx1, my1 = min(m.x + m.shape[1], x1), min(m.y + m.shape[0], y1)
                    if mx1 > mx0 and my1 > my0:
                        bits = m.bits[my0 - m.y : my1 - m.y, mx0 - m.x : mx1 - m.x]
                        window = tint[my0 - y0 : my1 - y0, mx0 - x0 : mx1 - x0]
                        np.maximum(window, bits * np.float32(self.opacity), out=window)
                if det.xywhr is not None and not np.isnan(det.xywhr[i]).any():
                    corners = [(float(x) - x0, float(y) - y0) for x, y in rotated_corners(det.xywhr[i])[0]]
                    draw.line([*corners, corners[0]], fill=255, width=self.thickness, joint="curve")
                pts = self._points(det, i)
                if pts is None:
                    continue
                for a, b in skeleton:
                    if np.isfinite(pts[a]).all() and np.isfinite(pts[b]).all():
                        draw.line(
                            [(pts[a, 0] - x0, pts[a, 1] - y0), (pts[b, 0] - x0, pts[b, 1] - y0)],
                            fill=255,
                            width=self.thickness,
                        )
                r = self.radius
                for x, y in pts[np.isfinite(pts).all(axis=1)].tolist():
                    if r:
                        draw.ellipse((x - x0 - r, y - y0 - r, x - x0 + r, y - y0 + r), fill=255)
            ink = np.asarray(lines, dtype=np.float32) / 255
            out[rgba] = ((x0, y0, x1, y1), np.maximum(tint, ink))
        return out

    def filter(self, frame: Frame) -> list[Frame]:
        det = frame.side_data.detections
        if det is None or len(det) == 0:
            return [frame]
        spec = lookup(frame.format)
        block = (1 << max(p.log2_w for p in spec.planes), 1 << max(p.log2_h for p in spec.planes))
        layers = self.coverage(det, frame.width, frame.height, block)
        out = frame
        if layers:
            planes = [np.array(p, copy=True) for p in frame.planes]
            for rgba, ((x0, y0, x1, y1), cover) in layers.items():
                alpha = cover * np.float32(rgba[3] / 255.0)
                for plane, pspec, value in zip(
                    planes, spec.planes, self._color_samples(rgba, frame.format), strict=True
                ):
                    lw, lh = pspec.log2_w, pspec.log2_h
                    region = plane[y0 >> lh : -(-y1 >> lh), x0 >> lw : -(-x1 >> lw)]
                    a = _textdraw._subsample(alpha, lw, lh, region.shape[:2])
                    if region.ndim == 3:
                        a = a[..., None]
                    mixed = region.astype(np.float32) * (1 - a) + np.asarray(value, dtype=np.float32) * a
                    region[...] = np.clip(np.rint(mixed), 0, np.iinfo(region.dtype).max).astype(region.dtype)
            out = frame.with_planes(planes)
        if self.renderer is not None and det.text is not None:
            fontsize = self.renderer.font.size if hasattr(self.renderer.font, "size") else 16
            texts = [
                (t, int(det.xyxy[i, 0]), max(0, int(det.xyxy[i, 1]) - int(fontsize) - 6))
                for i, t in enumerate(det.text)
                if t
            ]
            out = self.renderer.draw(out, texts)
        return [out]


__all__ = ["DrawObjectsFilter"]
