"""drawbox / drawtext over the frame's detections (FFmpeg's ``box_source`` / ``text_source``).

FFmpeg's drawbox and drawtext can take their boxes from AV_FRAME_DATA_DETECTION_BBOXES
(``box_source=side_data_detection_bboxes`` / ``text_source=side_data_detection_bboxes``).
avdnn's detections ride on the frame, not in libavfilter's side data, so avdnn runs these two
uses itself; :meth:`accepts` tells the chain builder to leave every other drawbox/drawtext to
libavfilter.

* drawbox: for each box with w, h > 0, libavfilter's own drawbox is run with the box's
  ``x:y:w:h`` and the user's ``color``/``thickness``/``replace`` (one small PyAV graph per
  frame), so the pixels are FFmpeg's exactly; as FFmpeg, no detections -> a warning
  ("No detection bboxes.") and the frame passes.
* drawtext: the text of a box is its detect label followed by ", <classify label>" for each
  classification, drawn at ``x = box.x, y = box.y - fontsize`` (FFmpeg's rule). With a
  libavfilter that has drawtext (built with freetype) that filter draws it; PyAV's wheels have
  none, so avdnn then rasterises the text with Pillow (``fontfile`` or Pillow's default font)
  and blends it in numpy: same place, colour and size, not the same glyph pixels. Without
  Pillow the filter refuses to start (AVERROR(ENOSYS)) and names ``pip install pillow``.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Sequence
from typing import Any, ClassVar


from ..errors import AVERROR, InvalidArgumentError, NotSupportedError, from_av_error
from ..media.frame import Frame
from .base import Filter
from .options import INT_MAX, Option

log = logging.getLogger("avdnn.filters")

SIDE_DATA_BBOXES = "side_data_detection_bboxes"


def has_lavfi(name: str) -> bool:
    import av

    return name in av.filter.filters_available


def run_lavfi(frame: Frame, nodes: Sequence[tuple[str, dict[str, str]]]) -> Frame:
    """``frame`` through libavfilter filters (name, options) in one throwaway graph."""
    import av

    if not nodes:
        return frame
    args = frame.buffer_args()
    graph = av.filter.Graph()
    try:
        chain = [graph.add("buffer", args)]
        chain += [graph.add(name, **opts) for name, opts in nodes]
        chain.append(graph.add("buffersink"))
        graph.link_nodes(*chain)
        graph.configure()
        graph.push(frame.to_av())
        graph.push(None)
        out = Frame.from_av(graph.vpull())
    except av.FFmpegError as exc:
        raise from_av_error(exc, pts=frame.pts) from exc
    out.sample_aspect_ratio = frame.sample_aspect_ratio
    out.side_data = frame.side_data.copy()
    return out


def _source_given(items: Sequence[tuple[str | None, str]], key: str) -> bool:
    return any(k == key for k, _ in items)


def _check_source(value: str | None, option: str, label: str) -> None:
    if value != SIDE_DATA_BBOXES:
        raise InvalidArgumentError(f"{value} is not supported (only {SIDE_DATA_BBOXES})",
                                   code=AVERROR(errno.EINVAL), filter=label, option=option)


class DrawBoxFilter(Filter):
    """``drawbox=box_source=side_data_detection_bboxes``: a box around every detection."""

    name: ClassVar[str] = "drawbox"
    description: ClassVar[str] = "Draw a colored box on the input video (boxes from avdnn's detections)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("x", "string", "0", help="set horizontal position of the left box edge (unused with box_source)"),
        Option("y", "string", "0", help="set vertical position of the top box edge (unused with box_source)"),
        Option("width", "string", "0", help="set width of the box (unused with box_source)", aliases=("w",)),
        Option("height", "string", "0", help="set height of the box (unused with box_source)", aliases=("h",)),
        Option("color", "string", "black", help="set color of the box", aliases=("c",)),
        Option("thickness", "string", "3", help="set the box thickness", aliases=("t",)),
        Option("replace", "bool", False, 0, 1, help="replace color & alpha"),
        Option("box_source", "string", None, help="use datas from bounding box in side data"),
    )

    @classmethod
    def accepts(cls, items: Sequence[tuple[str | None, str]]) -> bool:
        """Only the box_source form is avdnn's; drawbox with coordinates stays libavfilter's."""
        return _source_given(items, "box_source")

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        _check_source(values.get("box_source"), "box_source", self.label)
        self._style = {"color": str(values.get("color", "black")), "t": str(values.get("thickness", "3")),
                       "replace": "1" if values.get("replace") else "0"}
        self._warned = False

    def filter(self, frame: Frame) -> list[Frame]:
        det = frame.side_data.detections
        if det is None:
            if not self._warned:
                log.warning("%s: No detection bboxes.", self.label)
                self._warned = True
            return [frame]
        nodes = [("drawbox", {"x": str(b.x), "y": str(b.y), "w": str(b.w), "h": str(b.h), **self._style})
                 for b in det if b.w > 0 and b.h > 0]  # FFmpeg draws nothing for an empty box
        try:
            return [run_lavfi(frame, nodes)]
        except InvalidArgumentError as exc:
            raise exc.with_context(filter=self.label)


def box_text(box: Any) -> str:
    """FFmpeg's drawtext text for a box: detect label, then ", <label>" per classification."""
    return "".join([box.detect_label, *(f", {label}" for label, _ in box.classify)])


class DrawTextFilter(Filter):
    """``drawtext=text_source=side_data_detection_bboxes``: each box's labels above it."""

    name: ClassVar[str] = "drawtext"
    description: ClassVar[str] = "Draw text on top of video frames (labels from avdnn's detections)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("fontfile", "string", None, help="set font file"),
        Option("text", "string", None, help="set text (unused with text_source)"),
        Option("fontcolor", "string", "black", help="set foreground color"),
        Option("boxcolor", "string", "white", help="set box color"),
        Option("bordercolor", "string", "black", help="set border color"),
        Option("shadowcolor", "string", "black", help="set shadow color"),
        Option("box", "bool", False, 0, 1, help="set box"),
        Option("boxborderw", "string", "0", help="set box borders width"),
        Option("line_spacing", "int", 0, -(2**31), INT_MAX, help="set line spacing in pixels"),
        Option("fontsize", "string", None, help="set font size (default 16)"),
        Option("x", "string", "0", help="set x expression (unused with text_source)"),
        Option("y", "string", "0", help="set y expression (unused with text_source)"),
        Option("shadowx", "int", 0, -(2**31), INT_MAX, help="set shadow x offset"),
        Option("shadowy", "int", 0, -(2**31), INT_MAX, help="set shadow y offset"),
        Option("borderw", "int", 0, -(2**31), INT_MAX, help="set border width"),
        Option("font", "string", "Sans", help="Font name"),
        Option("alpha", "string", "1", help="apply alpha while rendering"),
        Option("fix_bounds", "bool", False, 0, 1, help="check and fix text coords to avoid clipping"),
        Option("text_source", "string", None, help="the source of text"),
    )
    _PASSED = ("fontfile", "fontcolor", "boxcolor", "bordercolor", "shadowcolor", "boxborderw", "line_spacing",
               "shadowx", "shadowy", "borderw", "font", "alpha")

    @classmethod
    def accepts(cls, items: Sequence[tuple[str | None, str]]) -> bool:
        return _source_given(items, "text_source")

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        _check_source(values.get("text_source"), "text_source", self.label)
        size = values.get("fontsize") or "16"
        try:
            self.fontsize = int(float(size))
        except ValueError:
            raise InvalidArgumentError(f"fontsize '{size}': avdnn's drawtext takes a number with text_source",
                                       filter=self.label, option="fontsize") from None
        self.lavfi = has_lavfi("drawtext")
        self._warned = False
        if self.lavfi:
            self._style = {k: str(int(v)) if isinstance(v, bool) else str(v)
                           for k in self._PASSED if (v := values.get(k)) is not None}
            self._style.update(fontsize=str(self.fontsize), box="1" if values.get("box") else "0")
            if values.get("fix_bounds"):
                self._style["fix_bounds"] = "1"
        else:
            from . import _textdraw

            self.renderer = _textdraw.TextRenderer(values, self.fontsize, label=self.label)

    def filter(self, frame: Frame) -> list[Frame]:
        det = frame.side_data.detections
        if det is None:
            if not self._warned:
                log.warning("%s: No detection bboxes.", self.label)
                self._warned = True
            return [frame]
        texts = [(box_text(b), b.x, b.y - self.fontsize) for b in det]
        if not self.lavfi:
            return [self.renderer.draw(frame, texts)]
        nodes = [("drawtext", {"text": t, "x": str(x), "y": str(y), "expansion": "normal", **self._style})
                 for t, x, y in texts]
        return [run_lavfi(frame, nodes)]


def require_pillow(label: str) -> Any:
    """Pillow, or AVERROR(ENOSYS) naming the install command."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise NotSupportedError(
            "drawtext: this libavfilter has no drawtext (no freetype) and Pillow is not installed to draw the "
            "labels instead: pip install pillow", filter=label) from None
    return Image, ImageDraw, ImageFont


__all__ = ["SIDE_DATA_BBOXES", "DrawBoxFilter", "DrawTextFilter", "box_text", "run_lavfi"]
