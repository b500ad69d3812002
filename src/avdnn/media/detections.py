"""The detections record a frame carries: FFmpeg's AVDetectionBBoxHeader and AVDetectionBBox.

FFmpeg stores a header (``source``, the producing model(s), 256 bytes) and per box ``int x, y,
w, h``, ``detect_label`` (64 bytes), ``detect_confidence`` (an AVRational n/10000) and up to
four ``classify_labels``/``classify_confidences`` (libavutil/detection_bbox.h). avdnn keeps the
same content as numpy columns so that Python users get vectorised boxes:

* ``xyxy`` (N, 4) float32: corners in frame pixels, as the parser computed them;
* ``confidence`` (N,) float32, ``class_id`` (N,) int32 (-1 when unknown);
* ``labels``: one detect label per box, ``classify``: the per-box classification results;
* ``source``, ``frame_size`` (w, h) and ``pts``;
* ``track_id`` (N,) int32, the object's identity from the ``track`` filter (-1: not tracked, or a
  track not yet confirmed), and ``predicted`` (N,) bool, True for a box the tracker predicted on
  a frame the detector skipped (``dnn_detect`` ``interval``) rather than one the detector found;
* avdnn's own optional columns, which FFmpeg's record has no room for: ``keypoints`` with
  ``keypoint_names``, ``masks``, ``text`` with ``text_score``, ``xywhr`` (rotated boxes) and
  ``data`` (:mod:`avdnn.media.objects` says what each holds). Indexing, :meth:`merge` and the
  ``with_*`` methods keep them aligned with the boxes.

FFmpeg's integer fields are what showinfo prints and drawbox draws. They come from
:meth:`Detections.ffmpeg_boxes`: a parser that knows FFmpeg's exact integer box (the YOLO types
truncate ``w`` before computing ``x``) passes it as ``ffmpeg_xywh``; otherwise the SSD rule
``x = (int)x0, w = (int)x1 - x`` is applied to ``xyxy``.

The record is immutable: its arrays are read-only copies, and ``with_*`` methods return new
records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from avdnn.errors import InvalidArgumentError, InvalidDataError
from avdnn.media import objects
from avdnn.media.bbox import (
    CONFIDENCE_DEN,
    LABEL_MAX_SIZE,
    NUM_CLASSIFY,
    SKIPPED_KEY,
    SOURCE_MAX_SIZE,
    Box,
    Classification,
    _check_label,
    confidence_num,
    five,
    index_rows,
    record_fields,
    to_c_int,
    truncate_utf8,
)
from avdnn.media.objects import Mask


@dataclass(frozen=True, eq=False)
class Detections:
    """The boxes of one frame, as columns. See the module docstring for the field meanings.

    Example:
        >>> det = Detections(xyxy=[[16, 16, 48, 48]], confidence=[0.9], class_id=[0],
        ...                  labels=("cat",), frame_size=(64, 64), source="det.onnx")
        >>> box = det[0]
        >>> (box.x, box.y, box.w, box.h, box.detect_confidence)
        (16, 16, 32, 32, (9000, 10000))
    """

    xyxy: np.ndarray
    confidence: np.ndarray
    class_id: np.ndarray
    labels: tuple[str, ...] = ()
    classify: tuple[tuple[Classification, ...], ...] = ()
    source: str = ""
    frame_size: tuple[int, int] = (0, 0)
    pts: int | None = None
    ffmpeg_xywh: np.ndarray | None = field(default=None, repr=False)
    track_id: np.ndarray | Sequence[int] | None = None  # an ndarray once built (see track_ids)
    predicted: np.ndarray | Sequence[bool] | None = None  # an ndarray once built (see predicted_mask)
    keypoints: np.ndarray | None = field(default=None, repr=False)
    keypoint_names: tuple[str, ...] = field(default=(), repr=False)
    masks: tuple[objects.Mask | None, ...] | None = field(default=None, repr=False)
    text: tuple[str, ...] | None = None
    text_score: np.ndarray | None = field(default=None, repr=False)
    xywhr: np.ndarray | None = field(default=None, repr=False)
    data: Mapping[str, np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        xyxy = np.array(self.xyxy, dtype=np.float32, copy=True)
        if xyxy.size == 0:
            xyxy = xyxy.reshape(0, 4)
        if xyxy.ndim != 2 or xyxy.shape[1] != 4:
            raise InvalidArgumentError(f"Detections.xyxy: expected shape (N, 4), got {xyxy.shape}")
        n = xyxy.shape[0]
        if not np.isfinite(xyxy).all():
            bad = int((~np.isfinite(xyxy)).sum())
            raise InvalidDataError(f"Detections.xyxy: expected finite coordinates, got {bad} NaN/inf values")
        if (xyxy[:, 2] < xyxy[:, 0]).any() or (xyxy[:, 3] < xyxy[:, 1]).any():
            raise InvalidDataError("Detections.xyxy: expected x1 >= x0 and y1 >= y0 for every box")
        conf = self._column("confidence", self.confidence, np.float32, n)
        cls = self._column("class_id", self.class_id, np.int32, n)
        tid = self._column("track_id", np.full(n, -1) if self.track_id is None else self.track_id, np.int32, n)
        pred = self._column("predicted", np.zeros(n, bool) if self.predicted is None else self.predicted, np.bool_, n)
        labels = tuple(self.labels) if self.labels else tuple(str(int(c)) for c in cls)
        if len(labels) != n:
            raise InvalidArgumentError(f"Detections.labels: expected {n} labels (one per box), got {len(labels)}")
        for i, label in enumerate(labels):
            _check_label(label, f"Detections.labels[{i}]")
        classify = (
            tuple(tuple((str(lb), float(c)) for lb, c in row) for row in self.classify) if self.classify else ((),) * n
        )
        if len(classify) != n:
            raise InvalidArgumentError(f"Detections.classify: expected {n} rows (one per box), got {len(classify)}")
        for i, row in enumerate(classify):
            if len(row) > NUM_CLASSIFY:
                raise InvalidArgumentError(
                    f"Detections.classify[{i}]: expected at most {NUM_CLASSIFY} classifications, got {len(row)}"
                )
            for lb, _ in row:
                _check_label(lb, f"Detections.classify[{i}] label")
        if not isinstance(self.source, str):
            raise InvalidArgumentError(f"Detections.source: expected a str, got {type(self.source).__name__}")
        if len(self.source.encode("utf-8")) >= SOURCE_MAX_SIZE:
            raise InvalidArgumentError(
                f"Detections.source: expected at most {SOURCE_MAX_SIZE - 1} bytes, got "
                f"{len(self.source.encode('utf-8'))}"
            )
        fs = tuple(self.frame_size)
        if len(fs) != 2 or any(int(v) != v or v < 0 for v in fs):
            raise InvalidArgumentError(f"Detections.frame_size: expected (width, height) >= 0, got {self.frame_size!r}")
        set_(self, "frame_size", (int(fs[0]), int(fs[1])))
        if self.ffmpeg_xywh is not None:
            ints = np.array(self.ffmpeg_xywh, dtype=np.int32, copy=True)
            if ints.size == 0:
                ints = ints.reshape(0, 4)
            if ints.shape != (n, 4):
                raise InvalidArgumentError(f"Detections.ffmpeg_xywh: expected shape ({n}, 4), got {ints.shape}")
            ints.flags.writeable = False
            set_(self, "ffmpeg_xywh", ints)
        ex = objects.check(
            n,
            keypoints=self.keypoints,
            keypoint_names=self.keypoint_names,
            masks=self.masks,
            text=self.text,
            text_score=self.text_score,
            xywhr=self.xywhr,
            data=self.data,
        )
        for name in ("keypoints", "keypoint_names", "masks", "text", "text_score", "xywhr", "data"):
            set_(self, name, getattr(ex, name))
        xyxy.flags.writeable = False
        set_(self, "xyxy", xyxy)
        set_(self, "confidence", conf)
        set_(self, "class_id", cls)
        set_(self, "track_id", tid)
        set_(self, "predicted", pred)
        set_(self, "labels", labels)
        set_(self, "classify", classify)

    @staticmethod
    def _column(name: str, values: Any, dtype: type, n: int) -> np.ndarray:
        arr: np.ndarray = np.array(values, dtype=dtype, copy=True)
        if arr.shape != (n,):
            raise InvalidArgumentError(f"Detections.{name}: expected shape ({n},) to match xyxy, got {arr.shape}")
        arr.flags.writeable = False
        return arr

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def empty(cls, frame_size: tuple[int, int] = (0, 0), source: str = "", pts: int | None = None) -> Detections:
        """A record with no boxes (a frame where nothing was detected)."""
        return cls(
            xyxy=np.zeros((0, 4), np.float32),
            confidence=np.zeros(0, np.float32),
            class_id=np.zeros(0, np.int32),
            frame_size=frame_size,
            source=source,
            pts=pts,
        )

    @classmethod
    def merge(cls, items: Sequence[Detections]) -> Detections:
        """Concatenate the boxes of several records of the same frame (e.g. two detectors).

        Sources are joined with ", " as dnn_classify joins model names, each once.
        """
        if not items:
            raise InvalidArgumentError("Detections.merge: expected at least one record, got none")
        sizes = {d.frame_size for d in items if len(d)}
        if len(sizes) > 1:
            raise InvalidArgumentError(f"Detections.merge: expected records of one frame size, got {sorted(sizes)}")
        frame_size = sizes.pop() if sizes else items[0].frame_size
        sources: list[str] = []
        for d in items:
            if d.source and d.source not in sources:
                sources.append(d.source)
        explicit = any(d.ffmpeg_xywh is not None for d in items)
        return cls(
            xyxy=np.concatenate([d.xyxy for d in items]),
            confidence=np.concatenate([d.confidence for d in items]),
            class_id=np.concatenate([d.class_id for d in items]),
            labels=tuple(lb for d in items for lb in d.labels),
            classify=tuple(row for d in items for row in d.classify),
            source=truncate_utf8(", ".join(sources), SOURCE_MAX_SIZE - 1),
            frame_size=frame_size,
            pts=next((d.pts for d in items if d.pts is not None), None),
            ffmpeg_xywh=np.concatenate([d.ffmpeg_boxes() for d in items]) if explicit else None,
            track_id=np.concatenate([d.track_ids for d in items]),
            predicted=np.concatenate([d.predicted_mask for d in items]),
            **vars(objects.concat([(len(d), d.extras) for d in items])),
        )

    # -- access ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.xyxy.shape[0])

    def __bool__(self) -> bool:
        return True  # a record with no boxes is still a record (FFmpeg: side data present)

    @overload
    def __getitem__(self, index: int | np.integer) -> Box: ...

    @overload
    def __getitem__(self, index: slice | np.ndarray | Sequence[int] | Sequence[bool]) -> Detections: ...

    def __getitem__(
        self, index: int | np.integer | slice | np.ndarray | Sequence[int] | Sequence[bool]
    ) -> Box | Detections:
        """``det[i]`` is a :class:`Box`; a slice, boolean mask or index array gives a new record."""
        if isinstance(index, (int, np.integer)):
            n = len(self)
            i = int(index)
            if not -n <= i < n:
                raise IndexError(f"box index {i} out of range for {n} boxes")
            return self._box(i % n, self.ffmpeg_boxes()[i % n])
        idx = index_rows(index, len(self))
        return dataclasses.replace(
            self,
            xyxy=self.xyxy[idx],
            confidence=self.confidence[idx],
            class_id=self.class_id[idx],
            labels=tuple(self.labels[i] for i in idx.tolist()),
            classify=tuple(self.classify[i] for i in idx.tolist()),
            ffmpeg_xywh=None if self.ffmpeg_xywh is None else self.ffmpeg_xywh[idx],
            track_id=self.track_ids[idx],
            predicted=self.predicted_mask[idx],
            **vars(objects.take(self.extras, idx)),
        )

    def __iter__(self) -> Iterator[Box]:
        ints = self.ffmpeg_boxes()
        for i in range(len(self)):
            yield self._box(i, ints[i])

    def _box(self, i: int, xywh: np.ndarray) -> Box:
        x, y, w, h = (int(v) for v in xywh)
        x0, y0, x1, y1 = (float(v) for v in self.xyxy[i])
        return Box(
            x=x,
            y=y,
            w=w,
            h=h,
            detect_label=self.labels[i],
            detect_confidence=(int(confidence_num(self.confidence[i])), CONFIDENCE_DEN),
            classify=self.classify[i],
            confidence=float(self.confidence[i]),
            class_id=int(self.class_id[i]),
            xyxy=(x0, y0, x1, y1),
            track_id=int(self.track_ids[i]),
            predicted=bool(self.predicted_mask[i]),
            keypoints=None if self.keypoints is None else self.keypoints[i],
            mask=None if self.masks is None else self.masks[i],
            text="" if self.text is None else self.text[i],
            text_score=None if self.text_score is None else float(self.text_score[i]),
            xywhr=None if self.xywhr is None else five(self.xywhr[i]),
        )

    @property
    def extras(self) -> objects.Extras:
        """The optional columns (keypoints, masks, text, rotated boxes, data) together."""
        return objects.Extras(
            self.keypoints, self.keypoint_names, self.masks, self.text, self.text_score, self.xywhr, self.data
        )

    @property
    def track_ids(self) -> np.ndarray:
        """``track_id`` typed for readers: (N,) int32, -1 where a box has no confirmed track."""
        assert isinstance(self.track_id, np.ndarray)  # filled in __post_init__
        return self.track_id

    @property
    def predicted_mask(self) -> np.ndarray:
        """``predicted`` typed for readers: (N,) bool."""
        assert isinstance(self.predicted, np.ndarray)  # filled in __post_init__
        return self.predicted

    @property
    def tracked(self) -> bool:
        """Whether any box carries a track id or is a prediction (the record went through a tracker)."""
        return bool((self.track_ids >= 0).any() or self.predicted_mask.any())

    def with_tracks(
        self, track_id: np.ndarray | Sequence[int], predicted: np.ndarray | Sequence[bool] | None = None
    ) -> Detections:
        """A new record with these track ids (and predicted flags; default: all detected)."""
        return dataclasses.replace(
            self,
            track_id=np.asarray(track_id),
            predicted=np.zeros(len(self), bool) if predicted is None else np.asarray(predicted),
        )

    def ffmpeg_boxes(self) -> np.ndarray:
        """FFmpeg's int ``x, y, w, h`` per box, (N, 4) int32.

        Explicit ``ffmpeg_xywh`` when the parser gave it, else ``x = (int)x0, w = (int)x1 - x``
        (and likewise for y/h), the truncation FFmpeg's SSD and TF parsers use.
        """
        if self.ffmpeg_xywh is not None:
            return self.ffmpeg_xywh
        ints = to_c_int(self.xyxy)
        out = np.stack([ints[:, 0], ints[:, 1], ints[:, 2] - ints[:, 0], ints[:, 3] - ints[:, 1]], axis=1)
        return out.astype(np.int32).reshape(-1, 4)

    def confidence_q(self) -> np.ndarray:
        """Numerators of FFmpeg's ``detect_confidence`` (over :data:`CONFIDENCE_DEN`), (N,) int32."""
        return confidence_num(self.confidence)

    # -- derived records -------------------------------------------------------------------

    def with_classification(self, index: int, label: str, confidence: float) -> Detections:
        """A new record with ``(label, confidence)`` appended to box ``index``'s classifications.

        FFmpeg's dnn_classify writes past its 4-slot array on a fifth result; avdnn refuses.
        """
        n = len(self)
        if not 0 <= index < n:
            raise InvalidArgumentError(f"with_classification: box index {index} out of range for {n} boxes")
        row = self.classify[index]
        if len(row) >= NUM_CLASSIFY:
            raise InvalidArgumentError(
                f"with_classification: box {index} already has {len(row)} classifications (at most {NUM_CLASSIFY})"
            )
        _check_label(label, "with_classification label")
        rows = list(self.classify)
        rows[index] = (*row, (label, float(np.float32(confidence))))
        return dataclasses.replace(self, classify=tuple(rows))

    def with_text(self, index: int, text: str, score: float) -> Detections:
        """A new record where box ``index`` reads ``text`` with ``score`` (a recognizer's result)."""
        n = len(self)
        if not 0 <= index < n:
            raise InvalidArgumentError(f"with_text: box index {index} out of range for {n} boxes")
        texts = list(self.text if self.text is not None else ("",) * n)
        scores = np.array(self.text_score if self.text_score is not None else np.full(n, np.nan), np.float32)
        texts[index], scores[index] = str(text), score
        return dataclasses.replace(self, text=tuple(texts), text_score=scores)

    def with_source_appended(self, model: str) -> Detections:
        """dnn_classify's ``av_strlcat(source, ", <model>")``, truncated at 255 bytes as FFmpeg does."""
        return dataclasses.replace(self, source=truncate_utf8(f"{self.source}, {model}", SOURCE_MAX_SIZE - 1))

    # -- comparison and JSON ----------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Detections):
            return NotImplemented
        return (
            self.frame_size == other.frame_size
            and self.source == other.source
            and self.pts == other.pts
            and self.labels == other.labels
            and self.classify == other.classify
            and np.array_equal(self.xyxy, other.xyxy)
            and np.array_equal(self.confidence, other.confidence)
            and np.array_equal(self.class_id, other.class_id)
            and np.array_equal(self.track_ids, other.track_ids)
            and np.array_equal(self.predicted_mask, other.predicted_mask)
            and np.array_equal(self.ffmpeg_boxes(), other.ffmpeg_boxes())
            and objects.equal(self.extras, other.extras)
        )

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; floats are the float32 values, so :meth:`from_dict` restores them exactly."""
        ints = self.ffmpeg_boxes().tolist()
        nums = self.confidence_q().tolist()
        xyxy = self.xyxy.tolist()
        conf = self.confidence.tolist()
        cls = self.class_id.tolist()
        tid = self.track_ids.tolist()
        pred = self.predicted_mask.tolist()
        boxes = [
            {
                "x": b[0],
                "y": b[1],
                "w": b[2],
                "h": b[3],
                "xyxy": xyxy[i],
                "label": self.labels[i],
                "class_id": cls[i],
                "confidence": conf[i],
                "detect_confidence": [nums[i], CONFIDENCE_DEN],
                "classify": [
                    {"label": lb, "confidence": c, "confidence_q": [int(confidence_num(c)), CONFIDENCE_DEN]}
                    for lb, c in self.classify[i]
                ],
                "track_id": tid[i],
                "predicted": pred[i],
                **objects.box_fields(self.extras, i, self.frame_size),
            }
            for i, b in enumerate(ints)
        ]
        return {"source": self.source, "frame_size": list(self.frame_size), "pts": self.pts, "boxes": boxes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Detections:
        """The inverse of :meth:`to_dict`; a malformed dict raises InvalidDataError."""
        try:
            return cls(**record_fields(data))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InvalidArgumentError | InvalidDataError):
                raise InvalidDataError(exc.message) from exc
            raise InvalidDataError(f"Detections.from_dict: malformed record ({type(exc).__name__}: {exc})") from exc


__all__ = [
    "CONFIDENCE_DEN",
    "LABEL_MAX_SIZE",
    "NUM_CLASSIFY",
    "SKIPPED_KEY",
    "SOURCE_MAX_SIZE",
    "Box",
    "Classification",
    "Detections",
    "Mask",
    "confidence_num",
    "to_c_int",
    "truncate_utf8",
]
