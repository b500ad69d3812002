"""showinfo: FFmpeg's vf_showinfo text for every frame, including avdnn's detections.

avdnn registers ``showinfo`` so that a chain like ``dnn_detect=...,showinfo`` prints the boxes
avdnn attached (libavfilter's showinfo cannot see them). The text is FFmpeg 9's, byte for byte:
the ``config in``/``config out`` lines, then per frame::

    n:   0 pts:      0 pts_time:0       duration:      1 duration_time:0.04    fmt:yuv420p cl:unspecified \
sar:1/1 s:64x48 i:P iskey:1 type:I checksum:1795C90D plane_checksum:[EB5BC856 4F9C7E7D 04DD822B] \
mean:[123 127 129] stdev:[69.8 69.1 72.3]
      side data - Bounding boxes for object detection and classification: source: det.onnx
    index: 0,\tregion: (16, 16) -> (48, 48), label: face, confidence: 9000/10000.
    \t\tclassify:  label: happy, confidence: 8000/10000.
    \t\ttrack:  id: 3, detected.      (avdnn's: boxes with a track id, after a track filter)
    \t\ttext:  "AB12 CDE", confidence: 9712/10000.         (avdnn's, and those below: what the
    \t\tangle:  0.3500 rad, centre: (20.0, 20.0), size: 16.0x6.0.   box carries besides FFmpeg's
    \t\tmask:  area: 10862, bounds: (30, 14) -> (176, 144).          fields)
    \t\tkeypoints:  nose: (90.1, 66.5) 0.63, left_eye: (98.2, 54.9) 0.76, ...
    <an empty line, as FFmpeg logs "\\n" after each side data>
      side data - avdnn zones, lines and events:   (avdnn's, after zone/line/events filters)
    zone: bay, inside: 1 [3], entered: 2, exited: 1.
    line: gate, in: 1, out: 0.
    event: cross, track: 3, label: car, line: gate, direction: in.
    <an empty line>
    color_range:unknown color_space:unknown color_primaries:unknown color_trc:unknown
    alpha_mode:unspecified   (formats with alpha or a palette only)

Checksums are Adler-32 (started at 0, as av_adler32_update) over each plane's rows of
``av_image_get_linesize`` bytes; mean and stdev as FFmpeg computes them (16-bit samples for
formats deeper than 8 bits). Each line is one INFO record on the ``avdnn.<label>`` logger
(the CLI prints ``[avdnn.showinfo] `` where ffmpeg prints ``[Parsed_showinfo_0 @ 0x...] ``).
Known gaps (docs/analytics.md): PyAV does not expose ``chroma_location`` (always
``unspecified``; ffmpeg says ``left`` for most decoded H.264) nor ``top_field_first`` (an
interlaced frame prints ``T``), and only the detection side data is printed.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from avdnn.events.record import analytics_of
from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.media.detections import CONFIDENCE_DEN, Box, confidence_num
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import PIX_FMTS, canonical

BBOX_SIDE_DATA_NAME = "Bounding boxes for object detection and classification"
COLOR_RANGES = {1: "tv", 2: "pc"}
COLOR_SPACES = {
    0: "gbr",
    1: "bt709",
    3: "reserved",
    4: "fcc",
    5: "bt470bg",
    6: "smpte170m",
    7: "smpte240m",
    8: "ycgco",
    9: "bt2020nc",
    10: "bt2020c",
    11: "smpte2085",
    12: "chroma-derived-nc",
    13: "chroma-derived-c",
    14: "ictcp",
    15: "ipt-c2",
    16: "ycgco-re",
    17: "ycgco-ro",
}
COLOR_PRIMARIES = {
    0: "reserved",
    1: "bt709",
    3: "reserved",
    4: "bt470m",
    5: "bt470bg",
    6: "smpte170m",
    7: "smpte240m",
    8: "film",
    9: "bt2020",
    10: "smpte428",
    11: "smpte431",
    12: "smpte432",
    22: "ebu3213",
}
COLOR_TRCS = {
    0: "reserved",
    1: "bt709",
    3: "reserved",
    4: "bt470m",
    5: "bt470bg",
    6: "smpte170m",
    7: "smpte240m",
    8: "linear",
    9: "log100",
    10: "log316",
    11: "iec61966-2-4",
    12: "bt1361e",
    13: "iec61966-2-1",
    14: "bt2020-10",
    15: "bt2020-12",
    16: "smpte2084",
    17: "smpte428",
    18: "arib-std-b67",
}
PICTURE_TYPES = "?IPBSipb"


def ts2str(ts: int | None) -> str:
    """av_ts2str: the number, or NOPTS."""
    return "NOPTS" if ts is None else str(ts)


def ts2timestr(ts: int | None, tb: Fraction | None) -> str:
    """av_ts2timestr: ``%.6g`` of ts * time base (double math), or NOPTS."""
    if ts is None:
        return "NOPTS"
    q = tb.numerator / tb.denominator if tb is not None and tb.denominator else math.nan
    return "%.6g" % (q * ts)


def _plane_rows(frame: Frame) -> tuple[list[np.ndarray], int, bool]:
    """Each plane as (rows, linesize bytes) uint8, FFmpeg's component-0 depth, and big-endian-ness."""
    fmt = canonical(frame.format)
    if fmt in PIX_FMTS:
        planes = frame.planes
        spec = PIX_FMTS[fmt]
        depth = spec.dtype.itemsize * 8 if spec.dtype.kind in "ui" else 32
        rows = [np.ascontiguousarray(p).view(np.uint8).reshape(p.shape[0], -1) for p in planes]
        return rows, depth, spec.dtype.byteorder == ">"
    av_frame = frame.to_av()  # a format avdnn has no table for: sizes from libavutil's descriptor
    comps = av_frame.format.components
    depth = comps[0].bits
    rows = []
    for i, plane in enumerate(av_frame.planes):
        step = sum(-(-c.bits // 8) for c in comps if c.plane == i)
        raw = np.frombuffer(memoryview(plane), dtype=np.uint8).reshape(plane.height, plane.line_size)
        rows.append(raw[:, : plane.width * step])
    return rows, depth, av_frame.format.name.endswith("be")


def checksum_text(frame: Frame) -> str:
    """``checksum:... plane_checksum:[...] mean:[...] stdev:[...]`` as vf_showinfo computes them."""
    rows, depth, big = _plane_rows(frame)
    checksum = 0
    sums, stdevs, planes = [], [], []
    for plane in rows:
        data = plane.tobytes()
        planes.append(zlib.adler32(data, 0))
        checksum = zlib.adler32(data, checksum)
        samples = plane.view(">u2" if big else "<u2").astype(np.int64) if depth > 8 else plane.astype(np.int64)
        count = plane.shape[1] >> (depth > 8)
        count *= plane.shape[0]
        s, s2 = int(samples.sum()), int((samples * samples).sum())
        sums.append(str((s + count // 2) // count) if count else "0")
        var = (s2 - s * float(s) / count) / count if count else math.nan
        stdevs.append("%3.1f" % (math.sqrt(var) if var >= 0 else math.nan))
    return (
        f"checksum:{checksum:08X} plane_checksum:[{' '.join(f'{c:08X}' for c in planes)}] "
        f"mean:[{' '.join(sums)}] stdev:[{' '.join(stdevs)}]"
    )


def detection_lines(det: Any) -> list[str]:
    """The bbox side-data lines (and the empty line FFmpeg logs after each side data)."""
    if det is None or len(det) == 0:
        return []
    lines = [f"  side data - {BBOX_SIDE_DATA_NAME}: source: {det.source}"]
    for i, box in enumerate(det):
        (x0, y0), (x1, y1) = box.region
        num, den = box.detect_confidence
        lines.append(
            f"index: {i},\tregion: ({x0}, {y0}) -> ({x1}, {y1}), label: {box.detect_label}, confidence: {num}/{den}."
        )
        for (label, _), (cnum, cden) in zip(box.classify, box.classify_confidences, strict=True):
            lines.append(f"\t\tclassify:  label: {label}, confidence: {cnum}/{cden}.")
        if box.track_id >= 0 or box.predicted:  # avdnn's line: FFmpeg's bbox has no track id
            lines.append(f"\t\ttrack:  id: {box.track_id}, {'predicted' if box.predicted else 'detected'}.")
        lines += object_lines(box, det.keypoint_names)
    lines.append("")
    return lines


def object_lines(box: Box, names: Sequence[str]) -> list[str]:
    """avdnn's lines for what FFmpeg's bbox cannot hold: text, rotation, mask, keypoints."""
    out = []
    if box.text:
        score = int(confidence_num(box.text_score or 0.0))
        out.append(f'\t\ttext:  "{box.text}", confidence: {score}/{CONFIDENCE_DEN}.')
    if box.xywhr is not None and not math.isnan(box.xywhr[4]):
        cx, cy, w, h, r = box.xywhr
        out.append(f"\t\tangle:  {r:.4f} rad, centre: ({cx:.1f}, {cy:.1f}), size: {w:.1f}x{h:.1f}.")
    if box.mask is not None:
        b = box.mask.bounds()
        where = "" if b is None else f", bounds: ({b[0]}, {b[1]}) -> ({b[2]}, {b[3]})"
        out.append(f"\t\tmask:  area: {box.mask.area}{where}.")
    if box.keypoints is not None and not np.isnan(box.keypoints).all():
        points = ", ".join(
            f"{name}: ({x:.1f}, {y:.1f}) {s:.2f}" for name, (x, y, s) in zip(names, box.keypoints.tolist(), strict=True)
        )
        out.append(f"\t\tkeypoints:  {points}.")
    return out


def analytics_lines(frame: Frame) -> list[str]:
    """avdnn's zone/line side data and the frame's events (after zone, line, events filters), then an empty line."""
    analytics = analytics_of(frame)
    if analytics is None or not (analytics.zones or analytics.lines or analytics.published or analytics.events):
        return []
    lines = ["  side data - avdnn zones, lines and events:"]
    for name, zone in analytics.zones.items():
        inside = ", ".join(str(t) for t in sorted(zone.inside))
        lines.append(
            f"zone: {name}, inside: {len(zone.inside)} [{inside}], entered: {sum(zone.entered.values())}, "
            f"exited: {sum(zone.exited.values())}."
        )
    for name, ln in analytics.lines.items():
        lines.append(f"line: {name}, in: {sum(ln.crossed_in.values())}, out: {sum(ln.crossed_out.values())}.")
    for event in analytics.published or analytics.events:
        where = event.get("zone") or event.get("line")
        detail = f", {'zone' if 'zone' in event else 'line'}: {where}" if where else ""
        direction = f", direction: {event['direction']}" if "direction" in event else ""
        lines.append(f"event: {event['type']}, track: {event['track_id']}, label: {event['label']}{detail}{direction}.")
    lines.append("")
    return lines


def color_line(frame: Frame) -> str:
    """vf_showinfo's dump_color_property line."""
    props = frame._color_props() or (0, 2, 2, 2)
    rng, space, prim, trc = (int(v) for v in props)
    return (
        f"color_range:{COLOR_RANGES.get(rng, 'unknown')} color_space:{COLOR_SPACES.get(space, 'unknown')} "
        f"color_primaries:{COLOR_PRIMARIES.get(prim, 'unknown')} color_trc:{COLOR_TRCS.get(trc, 'unknown')}"
    )


def frame_lines(frame: Frame, n: int, *, checksum: bool = True) -> list[str]:
    """Every line vf_showinfo logs for one frame (without the ``[Parsed_showinfo_0 @ ...]`` prefix)."""
    av_frame = frame.to_av()
    tb = frame.time_base
    sar = frame.sample_aspect_ratio or Fraction(0, 1)
    duration = frame.duration or 0
    interlaced = "T" if av_frame.interlaced_frame else "P"
    pict = int(av_frame.pict_type)
    head = (
        f"n:{n:4d} pts:{ts2str(frame.pts):>7} pts_time:{ts2timestr(frame.pts, tb):<7} "
        f"duration:{duration:7d} duration_time:{ts2timestr(duration, tb):<7} "
        f"fmt:{av_frame.format.name} cl:unspecified sar:{sar.numerator}/{sar.denominator} "
        f"s:{frame.width}x{frame.height} i:{interlaced} iskey:{int(bool(av_frame.key_frame))} "
        f"type:{PICTURE_TYPES[pict] if 0 <= pict < len(PICTURE_TYPES) else '?'} "
    )
    if checksum:
        head += checksum_text(frame)
    lines = [head, *detection_lines(frame.side_data.detections), *analytics_lines(frame), color_line(frame)]
    fmt = av_frame.format
    if fmt.has_palette or any(c.is_alpha for c in fmt.components):
        lines.append("alpha_mode:unspecified")  # FFmpeg 8+; PyAV does not expose AVFrame.alpha_mode
    return lines


def config_lines(time_base: Fraction | None, frame_rate: Fraction | None) -> list[str]:
    """The two lines showinfo logs when its links are configured (the output's are not set yet)."""
    tb = time_base or Fraction(0, 1)
    fr = frame_rate or Fraction(0, 1)
    return [
        f"config in time_base: {tb.numerator}/{tb.denominator}, frame_rate: {fr.numerator}/{fr.denominator}",
        "config out time_base: 0/0, frame_rate: 0/0",
    ]


class ShowInfoFilter(Filter):
    """Log FFmpeg's showinfo lines for each frame and pass it on unchanged."""

    name: ClassVar[str] = "showinfo"
    description: ClassVar[str] = "Show textual information for each video frame."
    options: ClassVar[tuple[Option, ...]] = (
        Option("checksum", "bool", True, 0, 1, help="calculate checksums"),
        Option(
            "udu_sei_as_ascii",
            "bool",
            False,
            0,
            1,
            help="try to print user data unregistered SEI as ascii character when possible (no effect)",
        ),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.log = logging.getLogger("avdnn").getChild(self.label)
        self.count = 0
        self._rate: Fraction | None = None
        #: Every line logged so far, for Python users and tests (cleared with :meth:`take_lines`).
        self.lines: list[str] = []

    def output_rate(self, in_rate: Fraction | None) -> Fraction | None:
        self._rate = in_rate
        return in_rate

    def _emit(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.lines.append(line)
            self.log.info("%s", line)

    def take_lines(self) -> list[str]:
        out, self.lines = self.lines, []
        return out

    def configure(self, frame: Frame) -> None:
        super().configure(frame)
        self._emit(config_lines(frame.time_base, self._rate))

    def filter(self, frame: Frame) -> list[Frame]:
        self._emit(frame_lines(frame, self.count, checksum=bool(self.opts.get("checksum", True))))
        self.count += 1
        return [frame]
