"""metadata_jsonl: write each frame's detections as one JSON line (schema in docs/analytics.md).

Named after FFmpeg's ``metadata`` filter, whose ``mode=print:file=...`` writes frame metadata
to a file while the frames go on: this one does the same for avdnn's detections, in JSON Lines.
It passes every frame unchanged, so it sits anywhere in a chain next to a video output
(``-vf dnn_detect=...,metadata_jsonl=file=out.jsonl,drawbox=... out.mp4``) or in the Python
API. Options: ``file`` (path, ``-`` = standard output; FFmpeg's name; an existing file is replaced
only with ``-y``, as an output: :mod:`avdnn.media.output.sidefile`), ``direct`` (flush after
every line, as FFmpeg's metadata ``direct``). The file is flushed and closed at end of stream
and on close; a frame without detections still gets its line (``"boxes": []``).

One line per frame::

    {"version": 2, "type": "frame", "n": 0, "pts": 0, "time_base": "1/25", "time": 0.0, "width": 64, "height": 64,
     "source": "det.onnx", "boxes": [{"x": 16, "y": 16, "w": 32, "h": 32, "xyxy": [16.0, 16.0, 48.0, 48.0],
     "label": "face", "class_id": 0, "confidence": 0.9, "detect_confidence": [9000, 10000],
     "classify": [{"label": "happy", "confidence": 0.8, "confidence_q": [8000, 10000]}],
     "track_id": 3, "predicted": false}]}

A box may also carry avdnn's own columns (docs/analytics.md, "Beyond boxes"), each only when it
has one: ``"keypoints": [[x, y, score], ...]`` in frame pixels in the model's order with
``"keypoint_names"``, ``"mask": {"size": [h, w], "counts": [...]}`` (COCO's uncompressed RLE of
the frame, column-major, as pycocotools writes it), ``"text"`` and ``"text_score"``, ``"angle"``
(radians) and ``"xywhr"`` for a rotated box, ``"data"`` for the free per-object columns.

and, at end of stream (or at close, when the run stopped early) when the boxes carried track
ids (a ``track`` filter upstream) and ``summary=1`` (the default), one line per track
(:mod:`avdnn.tracking.summary`; on a long input a track closed by the summary's bound, the 4096
most recent held, gets its line when it closes, so every track still gets exactly one)::

    {"version": 2, "type": "track", "track_id": 3, "label": "face", "first_pts": 1, "last_pts": 119,
     "first_time": 0.033, "last_time": 3.97, "frames": 119, "detected_frames": 119,
     "mean_confidence": 0.91, "labels": {"face": 119}}

After an ``events`` filter (docs/events.md), each event it published on a frame follows that frame's
line, as ``{"version": 2, "type": "event", "event": {...}}`` where the inner record is exactly what
MQTT and webhooks get (``avdnn/events/data/event-v1.schema.json``); the ``end`` events of the
objects still tracked at end of stream come before the track lines. After ``zone``/``line``
filters the frame line also has ``"analytics": {"zones": {NAME: {"inside": [ids], "entered":
{label: n}, "exited": {...}}}, "lines": {NAME: {"in": {label: n}, "out": {...}}}}``.

Version 2 added ``type`` and the track lines; a version-1 reader that takes every line as a frame
must skip lines whose ``type`` is not ``"frame"``.
"""

from __future__ import annotations

import json
import math
import sys
from typing import IO, Any, ClassVar

from avdnn.errors import InvalidArgumentError
from avdnn.events.record import LateEvents, analytics_of
from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.media.frame import Frame
from avdnn.media.output.sidefile import current_overwrite, open_side_file
from avdnn.tracking.summary import TrackRecord, TrackSummary

#: Bumped when a field changes meaning or disappears (adding fields keeps it).
SCHEMA_VERSION = 2


def frame_record(frame: Frame, n: int) -> dict[str, Any]:
    """The JSON-ready record of one frame (``n``: its index in the stream)."""
    det = frame.side_data.detections
    tb = frame.time_base
    time = frame.time
    boxes = det.to_dict()["boxes"] if det is not None else []
    record = {
        "version": SCHEMA_VERSION,
        "type": "frame",
        "n": n,
        "pts": frame.pts,
        "time_base": f"{tb.numerator}/{tb.denominator}" if tb is not None else None,
        "time": time if time is None or math.isfinite(time) else None,
        "width": frame.width,
        "height": frame.height,
        "source": det.source if det is not None else None,
        "boxes": boxes,
    }
    analytics = analytics_of(frame)
    state = analytics.to_dict() if analytics is not None else None
    if state:
        record["analytics"] = state
    return record


class MetadataJsonlFilter(Filter):
    """Pass frames through; write one JSON line per frame to ``file``."""

    name: ClassVar[str] = "metadata_jsonl"
    description: ClassVar[str] = "Write each frame's detections as JSON Lines (avdnn)."
    options: ClassVar[tuple[Option, ...]] = (
        Option("file", "string", None, help="set file where to write the JSON lines (- = stdout)", writes=True),
        Option("direct", "bool", False, 0, 1, help="flush after every line"),
        Option("summary", "bool", True, 0, 1, help="write one line per track at end of stream (avdnn)"),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        path = values.get("file")
        if not path:
            raise InvalidArgumentError("no file given: metadata_jsonl=file=out.jsonl", filter=self.label, option="file")
        self.path = str(path)
        self.direct = bool(values.get("direct"))
        self.count = 0
        #: a track closed by the summary's bound (24/7 inputs: tracking.summary) gets its line when it closes
        self.summary: TrackSummary | None = (
            TrackSummary(on_closed=self._write_track) if values.get("summary", True) else None
        )
        #: the events stage's events after its last frame, and how many of them are written
        self._late: LateEvents | None = None
        self._late_written = 0
        # an existing file is replaced only with -y, as the output (media.output.sidefile)
        self._out: IO[str] | None = (
            sys.stdout if self.path == "-" else open_side_file(self.path, current_overwrite(), text=True)
        )

    def filter(self, frame: Frame) -> list[Frame]:
        if self._out is None:
            raise InvalidArgumentError("metadata_jsonl: write after close", filter=self.label)
        self._write(frame_record(frame, self.count))
        analytics = analytics_of(frame)
        if analytics is not None:
            for event in analytics.published:
                self._write({"version": SCHEMA_VERSION, "type": "event", "event": event})
            self._late = analytics.late or self._late
        self.count += 1
        if self.summary is not None:
            self.summary.add(frame.side_data.detections, frame.pts, frame.time)
        if self.direct:
            self._out.flush()
        return [frame]

    def _write(self, record: dict[str, Any]) -> None:
        assert self._out is not None
        self._out.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")

    def _write_summary(self) -> None:
        """The late events and the track lines still held, once: at end of stream, or at close when the
        run stopped early (-frames:v)."""
        late = self._late
        if late is not None:
            for event in late.events[self._late_written :]:
                self._write({"version": SCHEMA_VERSION, "type": "event", "event": event})
            self._late_written = len(late.events)
        summary, self.summary = self.summary, None
        for rec in summary.records() if summary is not None else ():
            self._write_track(rec)

    def _write_track(self, rec: TrackRecord) -> None:
        if self._out is not None:
            self._write({"version": SCHEMA_VERSION, "type": "track", **rec.to_dict()})

    def flush(self) -> list[Frame]:
        if self._out is not None:
            self._write_summary()
            self._out.flush()
        return []

    def close(self) -> None:
        if self._out is not None:
            self._write_summary()
        out, self._out = self._out, None
        if out is not None and out is not sys.stdout:
            out.close()
        elif out is not None:
            out.flush()
