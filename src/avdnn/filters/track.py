"""track: give every detected box an object identity (a ``track_id``) across frames.

Put it after ``dnn_detect`` (``dnn_detect=...,track,metadata_jsonl=...``). The algorithms are
roboflow's ``trackers`` behind :mod:`avdnn.tracking` (``pip install 'avdnn[track]'``):
``tracker=bytetrack`` (default), ``sort``, ``ocsort``, ``botsort``, ``cbiou``. Options are the
library's own parameter names; ``-1`` (the default) means the chosen tracker's own default, and
an option the chosen tracker does not have is an error. ``frame_rate`` (0: the stream's) scales
``lost_track_buffer``, which counts frames at 30 fps as in ``trackers``.

Every box that comes in goes out, in its order, with ``track_id`` (-1 while its track is not
confirmed: ``minimum_consecutive_frames``) and ``predicted`` False. On a frame ``dnn_detect``
skipped (its ``interval``), the record is the tracker's prediction for the objects the last
inferred frame had, flagged ``predicted``. At end of stream an INFO line counts the tracks and a
verbose line per track summarises it (id, label by vote, frames, first/last pts, mean
confidence); :attr:`TrackFilter.summary`
keeps the same for Python users, and ``metadata_jsonl`` writes it as JSON.

A box's keypoints, mask and text stay with it. Text a recognizer read before the tracker is
settled per track by vote (``text_votes`` equal reads, :mod:`avdnn.tracking.textvote`).
"""

from __future__ import annotations

import dataclasses
import logging
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.events.record import analytics_for
from avdnn.filters.base import Filter
from avdnn.filters.options import INT_MAX, Option
from avdnn.media.detections import SKIPPED_KEY, Detections
from avdnn.media.frame import Frame
from avdnn.tracking import PARAMETERS, Tracker, TrackRecord, TrackSummary, create_tracker, list_trackers
from avdnn.tracking.base import ReportsAlive, tracker_spec
from avdnn.tracking.textvote import TextVotes

log = logging.getLogger("avdnn.filters")

VERBOSE = logging.INFO - 1  # the CLI's -loglevel verbose

#: trackers' fixed-rate default, used when neither the stream nor ``frame_rate`` gives a rate.
DEFAULT_FRAME_RATE = 30.0

TRACK_OPTIONS: tuple[Option, ...] = (
    Option("tracker", "string", "bytetrack", help=f"tracking algorithm ({'|'.join(list_trackers())})"),
    Option(
        "track_activation_threshold",
        "float",
        -1,
        -1,
        1,
        help="minimum detection confidence to start a track (-1: the tracker's default)",
    ),
    Option(
        "lost_track_buffer",
        "int",
        -1,
        -1,
        INT_MAX,
        help="frames (at 30 fps) a lost track is kept for re-association (-1: the tracker's default)",
    ),
    Option(
        "minimum_iou_threshold",
        "float",
        -1,
        -1,
        1,
        help="IoU needed to match a detection to a track (-1: the tracker's default)",
    ),
    Option(
        "minimum_consecutive_frames",
        "int",
        -1,
        -1,
        INT_MAX,
        help="matched frames before a track gets an id (-1: the tracker's default)",
    ),
    Option(
        "high_conf_det_threshold",
        "float",
        -1,
        -1,
        1,
        help="confidence splitting the two matching stages (-1: the tracker's default)",
    ),
    Option("frame_rate", "string", "0", help="frame rate for lost_track_buffer: 25, 30000/1001 (0: the stream's)"),
    Option(
        "text_votes",
        "int",
        2,
        1,
        INT_MAX,
        help="equal reads a track needs before its boxes carry that text (avdnn.tracking.textvote)",
    ),
)


class TrackFilter(Filter):
    """Assign track ids to detections; predict boxes on frames the detector skipped."""

    name: ClassVar[str] = "track"
    description: ClassVar[str] = "Track detected objects across frames (avdnn, roboflow trackers)."
    options: ClassVar[tuple[Option, ...]] = TRACK_OPTIONS

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        name = str(values.get("tracker") or "bytetrack")
        try:
            self.spec = tracker_spec(name)
        except InvalidArgumentError as exc:
            exc.with_context(filter=self.label)
            raise
        self.params: dict[str, float] = {p: values[p] for p in PARAMETERS if values.get(p, -1) != -1}
        unknown = [p for p in self.params if p not in self.spec.params]
        if unknown:
            raise InvalidArgumentError(
                f"tracker '{name}' has no option {unknown[0]} (its options: {', '.join(self.spec.params)})",
                filter=self.label,
                option=unknown[0],
            )
        try:
            self._given_rate = Fraction(str(values.get("frame_rate") or "0"))
        except (ValueError, ZeroDivisionError):
            raise InvalidArgumentError(
                f"Invalid frame rate '{values.get('frame_rate')}' (a number or N/D)",
                filter=self.label,
                option="frame_rate",
            ) from None
        if self._given_rate < 0:
            raise InvalidArgumentError("frame_rate must not be negative", filter=self.label, option="frame_rate")
        self._rate: Fraction | None = None
        self.tracker: Tracker | None = None
        self.votes = TextVotes(int(values.get("text_votes", 2)))
        #: per-track totals; a track closed by its bound (tracking.summary) is logged when it closes
        self.summary = TrackSummary(on_closed=self._log_track)
        self._count = 0
        self._warned = False
        self._summarised = False
        self._reformatter: Any = None

    @classmethod
    def help_extra(cls) -> str:
        """``-h filter=track``: each tracker, whether its library is installed, and what -1 means for it."""
        from avdnn.tracking import KNOWN_TRACKERS

        rows = []
        for spec in KNOWN_TRACKERS.values():
            state = "installed" if spec.installed() else f"not installed: pip install 'avdnn[{spec.extra}]'"
            defaults = ", ".join(f"{k}={v:g}" for k, v in spec.defaults.items())
            rows.append(f"    {spec.name:<10} {spec.description} ({state})\n      defaults: {defaults}")
        return "  Trackers:\n" + "\n".join(rows)

    def output_rate(self, in_rate: Fraction | None) -> Fraction | None:
        self._rate = in_rate
        return in_rate

    @property
    def frame_rate(self) -> float:
        """``frame_rate`` when given, else the stream's, else trackers' 30."""
        rate = self._given_rate or self._rate
        return float(rate) if rate else DEFAULT_FRAME_RATE

    def configure(self, frame: Frame) -> None:
        super().configure(frame)
        try:
            self.tracker = create_tracker(self.spec.name, self.frame_rate, **self.params)
        except AvdnnError as exc:
            exc.with_context(filter=self.label)
            raise

    def _time(self, frame: Frame) -> float:
        """The frame's time in seconds; frames without pts count at the frame rate."""
        t = frame.time
        return float(t) if t is not None else self._count / self.frame_rate

    def _image(self, frame: Frame) -> np.ndarray | None:
        """The picture as BGR for trackers that look at it (one reused libswscale context)."""
        if not self.spec.wants_image:
            return None
        from av.video.reformatter import VideoReformatter

        self._reformatter = self._reformatter or VideoReformatter()
        image: np.ndarray = self._reformatter.reformat(frame.to_av(), format="bgr24").to_ndarray()
        return image

    def filter(self, frame: Frame) -> list[Frame]:
        assert self.tracker is not None
        det = frame.side_data.detections
        time = self._time(frame)
        self._count += 1
        if frame.side_data.metadata.get(SKIPPED_KEY):
            out = self.tracker.predict(time)
        else:
            if det is None and not self._warned:
                log.warning(
                    "%s: a frame without detections (put dnn_detect before track): tracked as empty", self.label
                )
                self._warned = True
            seen = det if det is not None else Detections.empty((frame.width, frame.height))
            out = self.tracker.update(seen, time, self._image(frame))
            if det is None:
                self.summary.add(out, frame.pts, frame.time)
                self._tell_alive(frame)
                return [frame]
        out = self.votes.apply(out)
        if out.pts != frame.pts:
            out = dataclasses.replace(out, pts=frame.pts)
        frame.side_data = frame.side_data.copy()
        frame.side_data.detections = out
        self.summary.add(out, frame.pts, frame.time)
        self._tell_alive(frame)
        return [frame]

    def _tell_alive(self, frame: Frame) -> None:
        """The ids the tracker still holds, for zones, lines and events (their ``end`` is the tracker's drop)."""
        if isinstance(self.tracker, ReportsAlive):
            analytics_for(frame).alive = self.tracker.alive()

    def flush(self) -> list[Frame]:
        self._log_summary()
        return []

    def close(self) -> None:
        if self.configured:  # a run stopped early (-frames:v) still gets its summary
            self._log_summary()

    def _log_summary(self) -> None:
        if self._summarised:
            return
        self._summarised = True
        totals = self.summary.totals
        log.info(
            "%s: %d tracks%s",
            self.label,
            totals.tracks,
            f" (ids {totals.first_id}..{totals.last_id})" if totals.tracks else "",
        )
        for rec in self.summary.records():
            self._log_track(rec)

    def _log_track(self, rec: TrackRecord) -> None:
        conf = rec.mean_confidence
        log.log(
            VERBOSE,
            "%s: track %d: %s, frames %d (detected %d), pts %s..%s, mean confidence %s",
            self.label,
            rec.track_id,
            rec.label or "-",
            rec.frames,
            rec.detected,
            rec.first_pts,
            rec.last_pts,
            "-" if conf is None else f"{conf:.3f}",
        )
