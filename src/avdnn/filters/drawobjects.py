"""drawobjects: what the detections carry besides boxes, on the video (avdnn).

``dnn_detect=model=zoo:movenet_lightning,drawobjects`` draws, per object: its mask as a
translucent tint (``mask_opacity``), its keypoints and skeleton (COCO's when the keypoints are
COCO's 17, points alone otherwise; points under ``keypoint_threshold`` left out), its rotated box
outline, and the text a recognizer read above its box (``text``). Plain boxes and labels stay
``drawbox``/``drawtext``'s (``box_source=side_data_detection_bboxes``), in the style of which this
filter is made: the three go together.

Colours follow the object: its track id (after ``track``) or else its class id, in supervision's
palette (drawbox's ``track_color``), unless ``color`` names one. Per colour, the frame's
coverage is one array: masks are pasted from their crops, lines and points rasterised by
Pillow, and the blend is numpy over the covered pixels only (drawzones' layer); no per-pixel
Python. Needs Pillow (``pip install 'avdnn[text]'``), as drawzones.
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
        Option("fontfile", "string", None, help="font file for the text (default: Pillow's)"),
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
        style = {
            "fontcolor": values.get("fontcolor") or "black",
            "boxcolor": values.get("boxcolor") or "white",
            "box": True,
            "boxborderw": "3",
            "fontfile": values.get("fontfile"),
        }
        self.renderer = (
            _textdraw.TextRenderer(style, int(values.get("fontsize") or 16), label=self.label)
            if values.get("text", True)
            else None
        )

    def _colour(self, det: Detections, i: int) -> tuple[int, int, int, int]:
        if self.fixed is not None:
            return self.fixed
        tid = int(det.track_ids[i])
        key = tid if tid >= 0 else max(int(det.class_id[i]), 0)
        return self.palette[key % len(self.palette)]

    def coverage(self, det: Detections, width: int, height: int) -> dict[tuple[int, int, int, int], np.ndarray]:
        """Per colour, the (height, width) coverage 0..1 of every mask, skeleton, point and rotated box."""
        layers: dict[tuple[int, int, int, int], tuple[np.ndarray, Any]] = {}

        def layer(rgba: tuple[int, int, int, int]) -> tuple[np.ndarray, Any]:
            if rgba not in layers:
                layers[rgba] = (np.zeros((height, width), np.float32), self.Image.new("L", (width, height), 0))
            return layers[rgba]

        skeleton = COCO_SKELETON if det.keypoint_names == COCO_KEYPOINTS else ()
        for i in range(len(det)):
            rgba = self._colour(det, i)
            mask = det.masks[i] if det.masks is not None else None
            if mask is not None and self.opacity > 0:
                tint, _ = layer(rgba)
                m = mask.clipped(width, height)
                h, w = m.shape
                window = tint[m.y : m.y + h, m.x : m.x + w]
                np.maximum(window, m.bits * np.float32(self.opacity), out=window)
            if det.xywhr is not None and not np.isnan(det.xywhr[i]).any():
                corners = [(float(x), float(y)) for x, y in rotated_corners(det.xywhr[i])[0]]
                draw = self.ImageDraw.Draw(layer(rgba)[1])
                draw.line([*corners, corners[0]], fill=255, width=self.thickness, joint="curve")
            if det.keypoints is not None and not np.isnan(det.keypoints[i]).all():
                pts = det.keypoints[i]
                ok = np.isfinite(pts).all(axis=1) & (pts[:, 2] >= np.float32(self.threshold))
                draw = self.ImageDraw.Draw(layer(rgba)[1])
                for a, b in skeleton:
                    if ok[a] and ok[b]:
                        draw.line(
                            [tuple(pts[a, :2].tolist()), tuple(pts[b, :2].tolist())], fill=255, width=self.thickness
                        )
                r = self.radius
                for x, y in pts[ok, :2].tolist():
                    if r:
                        draw.ellipse((x - r, y - r, x + r, y + r), fill=255)
        out = {}
        for rgba, (tint, lines) in layers.items():
            ink = np.asarray(lines, dtype=np.float32) / 255
            out[rgba] = np.maximum(tint, ink)
        return out

    def filter(self, frame: Frame) -> list[Frame]:
        det = frame.side_data.detections
        if det is None or len(det) == 0:
            return [frame]
        layers = self.coverage(det, frame.width, frame.height)
        out = frame
        if layers:
            planes = [np.array(p, copy=True) for p in frame.planes]
            for rgba, cover in layers.items():
                _textdraw.Layer(cover, rgba, frame.format).blend(planes)
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
