"""drawbox / drawtext over the frame's detections (FFmpeg's ``box_source`` / ``text_source``).

FFmpeg's drawbox and drawtext can take their boxes from AV_FRAME_DATA_DETECTION_BBOXES
(``box_source=side_data_detection_bboxes`` / ``text_source=side_data_detection_bboxes``).
avdnn's detections ride on the frame, not in libavfilter's side data, so avdnn runs these two
uses itself; :meth:`accepts` tells the chain builder to leave every other drawbox/drawtext to
libavfilter.

* drawbox: for each box with w, h > 0, libavfilter's own drawbox is run with the box's
  ``x:y:w:h`` and the user's ``color``/``thickness``/``replace``, so the pixels are FFmpeg's
  exactly; as FFmpeg, no detections -> a warning ("No detection bboxes.") and the frame passes.
  ``track_color=1`` (avdnn) colours each tracked box by its track id from a fixed palette.
* drawtext: the text of a box is its detect label followed by ", <classify label>" for each
  classification, drawn at ``x = box.x, y = box.y - fontsize`` (FFmpeg's rule); a box with a
  track id gets ``#ID `` in front, and `` [bay]`` after it names the zones the object is in
  (after ``zone`` filters; avdnn).

The libavfilter graph is built once per parameter set (frame size, format, timing, style) with
as many drawbox/drawtext nodes as the most boxes seen so far, and reused: each frame's boxes go
to the nodes as ``process_command`` calls (the options are runtime parameters in libavfilter),
spare nodes are moved off the frame. With a
  libavfilter that has drawtext (built with freetype) that filter draws it; PyAV's wheels have
  none, so avdnn then rasterises the text with Pillow (``fontfile`` or Pillow's default font)
  and blends it in numpy: same place, colour and size, not the same glyph pixels. Without
  Pillow the filter refuses to start (AVERROR(ENOSYS)) and names ``pip install pillow``.
"""

from __future__ import annotations

import errno
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, ClassVar

from avdnn.errors import AVERROR, AvdnnError, InvalidArgumentError
from avdnn.events.record import analytics_of
from avdnn.filters.base import Filter
from avdnn.filters.options import INT_MAX, Option
from avdnn.media.filtergraph import FilterGraph
from avdnn.media.frame import Frame

log = logging.getLogger("avdnn.filters")

SIDE_DATA_BBOXES = "side_data_detection_bboxes"

#: ``track_color`` palette (supervision's default colours): track id modulo its length.
TRACK_PALETTE: tuple[str, ...] = (
    "0xA351FB",
    "0xFF4040",
    "0xFFA1A0",
    "0xFF7633",
    "0xFFB633",
    "0xD1D435",
    "0x4CFB12",
    "0x94CF1A",
    "0x40DE8A",
    "0x1BE7FF",
    "0x00B7EB",
    "0x3D85C6",
    "0x006FFF",
    "0x5E5EFF",
    "0x8A2BE2",
    "0xDC5DF0",
    "0xFF5BD5",
    "0xFF0080",
    "0xAB2D5D",
    "0x8F8F8F",
)


def has_lavfi(name: str) -> bool:
    import av

    return name in av.filter.filters_available


def run_lavfi(frame: Frame, nodes: Sequence[tuple[str, dict[str, str]]]) -> Frame:
    """``frame`` through libavfilter filters (name, options) in one throwaway graph (the tests' reference)."""
    if not nodes:
        return frame
    graph = FilterGraph(pts=frame.pts)
    chain = [graph.video_source(frame.buffer_args())]
    chain += [graph.add(name, options=opts) for name, opts in nodes]
    chain.append(graph.sink("video"))
    graph.chain(*chain)
    graph.configure()
    graph.push(frame.to_av(), pts=frame.pts)
    graph.push(None, pts=frame.pts)
    return _carry(frame, Frame.from_av(graph.pull_one(pts=frame.pts)))


def _carry(frame: Frame, out: Frame) -> Frame:
    out.sample_aspect_ratio = frame.sample_aspect_ratio
    out.side_data = frame.side_data.copy()
    return out


class _NodeGraph:
    """buffer -> N copies of one filter -> buffersink, reused for every frame of one parameter set."""

    def __init__(self, args: str, name: str, style: dict[str, str], spare: dict[str, str], count: int) -> None:
        self.graph = FilterGraph()
        src = self.graph.video_source(args)
        self.nodes = [self.graph.add(name, options={**style, **spare}) for _ in range(count)]
        self.state = [dict(spare) for _ in range(count)]
        self.spare = spare
        self.graph.chain(src, *self.nodes, self.graph.sink("video"))
        self.graph.configure()

    def run(self, frame: Frame, per_node: Sequence[dict[str, str]]) -> Frame:
        for i, node in enumerate(self.nodes):
            want = per_node[i] if i < len(per_node) else self.spare
            for key, value in want.items():
                if self.state[i].get(key) != value:  # only what changed: a command re-evaluates the filter
                    self.graph.command(node, key, value)
                    self.state[i][key] = value
        self.graph.push(frame.to_av(), pts=frame.pts)
        return _carry(frame, Frame.from_av(self.graph.pull_one(pts=frame.pts)))


class LavfiOverlay:
    """One filter (drawbox or drawtext) per box, through reused graphs (at most a few parameter sets)."""

    MAX_GRAPHS = 4

    def __init__(self, name: str, style: dict[str, str], spare: dict[str, str]) -> None:
        self.name, self.style, self.spare = name, style, spare
        self._graphs: OrderedDict[str, _NodeGraph] = OrderedDict()

    def run(self, frame: Frame, per_node: Sequence[dict[str, str]]) -> Frame:
        if not per_node:
            return frame
        key = frame.buffer_args()
        graph = self._graphs.get(key)
        try:
            if graph is None or len(graph.nodes) < len(per_node):
                count = max(len(per_node), len(graph.nodes) * 2 if graph else 1)
                graph = _NodeGraph(key, self.name, self.style, self.spare, count)
                self._graphs[key] = graph
                while len(self._graphs) > self.MAX_GRAPHS:
                    self._graphs.popitem(last=False)
            self._graphs.move_to_end(key)
            return graph.run(frame, per_node)
        except AvdnnError as exc:  # the graph failed (libavfilter's error): not kept for the next frame
            self._graphs.pop(key, None)
            exc.with_context(pts=frame.pts)
            raise


def _source_given(items: Sequence[tuple[str | None, str]], key: str) -> bool:
    return any(k == key for k, _ in items)


def _check_source(value: str | None, option: str, label: str) -> None:
    if value != SIDE_DATA_BBOXES:
        raise InvalidArgumentError(
            f"{value} is not supported (only {SIDE_DATA_BBOXES})",
            code=AVERROR(errno.EINVAL),
            filter=label,
            option=option,
        )


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
        Option("track_color", "bool", False, 0, 1, help="colour tracked boxes by track id (avdnn)"),
    )

    @classmethod
    def accepts(cls, items: Sequence[tuple[str | None, str]]) -> bool:
        """Only the box_source form is avdnn's; drawbox with coordinates stays libavfilter's."""
        return _source_given(items, "box_source")

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        _check_source(values.get("box_source"), "box_source", self.label)
        self.color = str(values.get("color", "black"))
        self.track_color = bool(values.get("track_color"))
        style = {"t": str(values.get("thickness", "3")), "replace": "1" if values.get("replace") else "0"}
        spare = {"x": "-16", "y": "-16", "w": "1", "h": "1", "color": self.color}  # off the frame: draws nothing
        self.overlay = LavfiOverlay("drawbox", style, spare)
        self._warned = False

    def box_color(self, box: Any) -> str:
        """The user's colour, or the track id's palette colour with ``track_color=1`` (alpha kept)."""
        if not self.track_color or box.track_id < 0:
            return self.color
        alpha = self.color.partition("@")[2]
        base = TRACK_PALETTE[box.track_id % len(TRACK_PALETTE)]
        return f"{base}@{alpha}" if alpha else base

    def filter(self, frame: Frame) -> list[Frame]:
        det = frame.side_data.detections
        if det is None:
            if not self._warned:
                log.warning("%s: No detection bboxes.", self.label)
                self._warned = True
            return [frame]
        boxes = [
            {"x": str(b.x), "y": str(b.y), "w": str(b.w), "h": str(b.h), "color": self.box_color(b)}
            for b in det
            if b.w > 0 and b.h > 0
        ]  # FFmpeg draws nothing for an empty box
        try:
            return [self.overlay.run(frame, boxes)]
        except InvalidArgumentError as exc:
            exc.with_context(filter=self.label)
            raise


def box_text(box: Any, zones: Sequence[str] = ()) -> str:
    """FFmpeg's drawtext text for a box: detect label, then ", <label>" per classification; "#ID " if tracked;
    " [bay, dock]" for the zones the object is in (after zone filters, avdnn)."""
    text = "".join([box.detect_label, *(f", {label}" for label, _ in box.classify)])
    if zones:
        text += f" [{', '.join(zones)}]"
    return f"#{box.track_id} {text}" if getattr(box, "track_id", -1) >= 0 else text


class DrawTextFilter(Filter):
    """``drawtext=text_source=side_data_detection_bboxes``: each box's labels above it."""

    name: ClassVar[str] = "drawtext"
    description: ClassVar[str] = "Draw text on top of video frames (labels from avdnn's detections)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("fontfile", "string", None, help="set font file", reads=True),
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
    _PASSED = (
        "fontfile",
        "fontcolor",
        "boxcolor",
        "bordercolor",
        "shadowcolor",
        "boxborderw",
        "line_spacing",
        "shadowx",
        "shadowy",
        "borderw",
        "font",
        "alpha",
    )

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
            raise InvalidArgumentError(
                f"fontsize '{size}': avdnn's drawtext takes a number with text_source",
                filter=self.label,
                option="fontsize",
            ) from None
        self.lavfi = has_lavfi("drawtext")
        self._warned = False
        if self.lavfi:
            style = {
                k: str(int(v)) if isinstance(v, bool) else str(v)
                for k in self._PASSED
                if (v := values.get(k)) is not None
            }
            style.update(fontsize=str(self.fontsize), box="1" if values.get("box") else "0", expansion="normal")
            if values.get("fix_bounds"):
                style["fix_bounds"] = "1"
            self.overlay = LavfiOverlay("drawtext", style, {"text": " ", "x": "-10000", "y": "-10000"})
        else:
            from avdnn.filters import _textdraw

            self.renderer = _textdraw.TextRenderer(values, self.fontsize, label=self.label)

    def filter(self, frame: Frame) -> list[Frame]:
        det = frame.side_data.detections
        if det is None:
            if not self._warned:
                log.warning("%s: No detection bboxes.", self.label)
                self._warned = True
            return [frame]
        analytics = analytics_of(frame)
        zones = analytics.membership if analytics is not None else {}
        texts = [(box_text(b, zones.get(b.track_id, ())), b.x, b.y - self.fontsize) for b in det]
        if not self.lavfi:
            return [self.renderer.draw(frame, texts)]
        return [self.overlay.run(frame, [{"text": t, "x": str(x), "y": str(y)} for t, x, y in texts])]


__all__ = ["SIDE_DATA_BBOXES", "TRACK_PALETTE", "DrawBoxFilter", "DrawTextFilter", "box_text", "run_lavfi"]
