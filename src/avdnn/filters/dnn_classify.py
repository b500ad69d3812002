"""dnn_classify: classify each detected box of a frame (FFmpeg's vf_dnn_classify).

FFmpeg's options: ``dnn_backend``, ``confidence`` (0..1, 0.5), ``labels``, ``target`` (only
boxes whose detect label equals it, case-insensitive), plus every ``dnn_base`` option. One
inference (lltask) per selected box goes through the engine, so ``batch_size`` batches the crops
and ``async``/``nireq`` work as for every filter; the results are appended to their boxes (at
most 4 per box) and ", <model>" to the record's source; the frame leaves when all of its boxes
are done, in order.

Deliberate differences (docs/analytics.md): every avdnn backend can classify (FFmpeg: OpenVINO
only, and not with ``async=0``); a box that touches or crosses the frame edge is clipped to the
frame instead of making the whole frame skip classification (FFmpeg's s.7 #16), a box with no
area left or with 4 classifications already is skipped alone; the source gets the model name
when any box was classified (FFmpeg: only when box 0 is selected).

``model_type=ctc`` (avdnn) reads text instead: the model is a CTC recognizer (PP-OCR's) whose
character set is the model file's ``character`` metadata (or the ``labels`` file, one character
a line); each box's crop keeps its aspect ratio (:func:`avdnn.dnn.io_analytics.text_spec`), the
greedy decode (:func:`avdnn.dnn.detect.ctc_greedy`) gives a string and its score, and a string
scoring at least ``confidence`` becomes the box's ``text`` (the classify slots stay free). After
``track``, a track's text is decided by vote (``text_votes`` equal reads, :mod:`avdnn.tracking.textvote`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from avdnn._util.lru import LruDict
from avdnn.dnn import Item, io_analytics
from avdnn.dnn.detect import ClassifyResult, characters, classify_top1, ctc_greedy
from avdnn.dnn.interface import DYNAMIC, DNNBackendType, DNNFunctionType
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.filters.dnn_common import DnnFilter, dnn_backend_option, dnn_options
from avdnn.filters.dnn_detect import ANALYTICS_BACKENDS, labels_value
from avdnn.filters.options import INT_MAX, Option
from avdnn.media.detections import NUM_CLASSIFY, Detections
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import DNN_PIX_FMTS
from avdnn.tracking.summary import MAX_TRACKS
from avdnn.tracking.textvote import TextVotes

#: what the model gives: FFmpeg's top-1 class, or a CTC recognizer's text (avdnn)
CLASSIFY_TYPES: dict[str, int] = {"top1": 0, "ctc": 1}

CLASSIFY_OPTIONS: tuple[Option, ...] = (
    Option("confidence", "float", 0.5, 0, 1, help="threshold of confidence"),
    Option(
        "model_type", "int", 0, 0, 1, help="top1: FFmpeg's class; ctc: a text recognizer (avdnn)", consts=CLASSIFY_TYPES
    ),
    Option("labels", "string", None, help="path to labels file", reads=True),
    Option("target", "string", None, help="which one to be classified"),
    Option(
        "reclassify_interval",
        "int",
        1,
        0,
        INT_MAX,
        help="classify a tracked object every Nth frame it is seen and reuse its labels between; 0: once (avdnn)",
    ),
    Option(
        "text_votes",
        "int",
        2,
        1,
        INT_MAX,
        help="model_type=ctc after track: equal reads a track needs before its boxes carry that text (avdnn)",
    ),
)


@dataclass(frozen=True)
class _Job:
    """A classify task's payload: the frame and the indices of its boxes sent to inference."""

    frame: Frame
    indices: list[int]
    #: track id per inferred index (-1: untracked), and (box index, track id) reusing a track's labels
    tracks: tuple[int, ...] = ()
    reused: tuple[tuple[int, int], ...] = ()

    @property
    def pts(self) -> int | None:  # the engine puts it in error context
        return self.frame.pts


class DnnClassifyFilter(DnnFilter):
    """Classify the boxes an upstream dnn_detect found; frames without boxes pass unchanged."""

    name: ClassVar[str] = "dnn_classify"
    description: ClassVar[str] = "Apply DNN classify filter to the input."
    backend_mask: ClassVar[DNNBackendType] = ANALYTICS_BACKENDS
    func_type: ClassVar[DNNFunctionType] = DNNFunctionType.ANALYTICS_CLASSIFY
    pix_fmts: ClassVar[tuple[str, ...] | None] = DNN_PIX_FMTS
    options: ClassVar[tuple[Option, ...]] = (
        dnn_backend_option(ANALYTICS_BACKENDS),
        *CLASSIFY_OPTIONS,
        *dnn_options(ANALYTICS_BACKENDS),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        values = self.resolve_zoo(values, label)
        self.labels = labels_value(values.get("labels"))
        super().__init__(values, label=label)
        self.confidence = float(values.get("confidence", 0.5))
        self.ctc = int(values.get("model_type", 0)) == CLASSIFY_TYPES["ctc"]
        self.characters: tuple[str, ...] = ()
        if self.ctc:
            assert self.model is not None
            meta = self.model.metadata.get("character")
            if meta is None and not self.labels:
                self.close()
                raise InvalidArgumentError(
                    "model_type=ctc needs the character set: the model has no 'character' metadata and no labels "
                    "were given",
                    filter=self.label,
                    option="labels",
                )
            self.characters = characters(meta) if meta is not None else tuple(self.labels or ())
        elif "text_votes" in getattr(values, "given", ()):
            self.close()
            raise InvalidArgumentError(
                "text_votes applies to model_type=ctc only", filter=self.label, option="text_votes"
            )
        self.votes = TextVotes(int(values.get("text_votes", 2)))
        target = values.get("target")
        self.target = target.lower() if target else None
        self._specs: dict[tuple[int, int], io_analytics.InputSpec] = {}
        self._reclassify = int(values.get("reclassify_interval", 1))
        # per track id, bounded (a 24/7 input's tracker hands out ids for ever): the least recently seen
        # go first, and a track seen again after that is just classified again
        self._ages: LruDict[int, int] = LruDict(MAX_TRACKS)  # frames seen since its last inference (submit side)
        self._labels: LruDict[int, Any] = LruDict(MAX_TRACKS)  # its last result (finish side, in frame order)

    def _reuse(self, track_id: int) -> bool:
        """DL Streamer's reclassify-interval: whether this tracked box reuses its track's labels now."""
        if self._reclassify == 1 or track_id < 0:
            return False
        age = self._ages.get(track_id)
        if age is not None and (self._reclassify == 0 or age < self._reclassify):
            self._ages[track_id] = age + 1
            return True
        self._ages[track_id] = 1
        return False

    def selected(self, det: Detections, width: int, height: int) -> list[tuple[int, tuple[int, int, int, int]]]:
        """(box index, clipped x, y, w, h) of every box this filter classifies, in box order."""
        out = []
        for i, box in enumerate(det):
            if self.target is not None and box.detect_label.lower() != self.target:
                continue
            if box.classify_count >= NUM_CLASSIFY and not self.ctc:
                continue
            clipped = io_analytics.clip_box(box.x, box.y, box.w, box.h, width, height)
            if clipped[2] > 0 and clipped[3] > 0:
                out.append((i, clipped))
        return out

    def spec(self, width: int, height: int) -> io_analytics.InputSpec:
        key = (width, height)
        if key not in self._specs:
            assert self.model is not None
            try:
                self._specs[key] = io_analytics.input_spec(self.model.get_input(), width, height)
            except AvdnnError as exc:
                raise exc.with_context(filter=self.label, file=self.config.model) from None
        return self._specs[key]

    def filter(self, frame: Frame) -> list[Frame]:
        self.raise_pending()
        det = frame.side_data.detections
        if det is None or len(det) == 0:
            return self.submit(_Job(frame, []), [])
        chosen = self.selected(det, frame.width, frame.height)
        tids = det.track_ids.tolist()
        reused = tuple((i, tids[i]) for i, _ in chosen if self._reuse(tids[i]))
        chosen = [(i, box) for i, box in chosen if (i, tids[i]) not in reused]
        if not chosen:
            return self.submit(_Job(frame, [], (), reused), [])
        spec = self.spec(frame.width, frame.height)
        if self.ctc:
            items = [self._text_item(frame, spec, box) for _, box in chosen]
        else:
            confidence, labels = self.confidence, self.labels

            def post(outputs: list[Any]) -> Any:
                return classify_top1(outputs[0], confidence=confidence, labels=labels)

            items = [
                Item(spec.shape, spec.dtype, io_analytics.classify_fill(frame, box, spec), post) for _, box in chosen
            ]
        return self.submit(_Job(frame, [i for i, _ in chosen], tuple(tids[i] for i, _ in chosen), reused), items)

    def _text_item(self, frame: Frame, spec: io_analytics.InputSpec, box: tuple[int, int, int, int]) -> Item:
        """One crop for a CTC recognizer: its aspect kept, decoded to (text, score) or None."""
        assert self.model is not None
        dynamic = self.model.get_input().width == DYNAMIC
        line, scaled = io_analytics.text_spec(spec, dynamic, box[2], box[3])
        chars, confidence = self.characters, self.confidence

        def post(outputs: list[Any]) -> Any:
            text, score = ctc_greedy(outputs[0], chars)[0]
            return (text, score) if text and score >= confidence else None

        return Item(line.shape, line.dtype, io_analytics.text_fill(frame, box, line, scaled), post)

    def finish(self, payload: Any, results: tuple[Any, ...]) -> Frame:
        job: _Job = payload
        frame, indices = job.frame, job.indices
        for tid, result in zip(job.tracks, results, strict=True):
            if tid >= 0:
                self._labels[tid] = result
        pairs = [*zip(indices, results, strict=True), *((i, self._labels.get(t)) for i, t in job.reused)]
        det: Detections = frame.side_data.detections
        if not pairs:
            if self.ctc and det is not None and det.tracked:  # the tracks' decided texts on every frame
                frame.side_data = frame.side_data.copy()
                frame.side_data.detections = self.votes.apply(det)
            return frame
        for index, result in sorted(pairs, key=lambda p: p[0]):
            if isinstance(result, ClassifyResult):
                det = det.with_classification(index, result.label, result.confidence)
            elif result is not None:
                det = det.with_text(index, *result)
        det = det.with_source_appended(self.model_source)
        if self.ctc:
            det = self.votes.apply(det)
        frame.side_data = frame.side_data.copy()
        frame.side_data.detections = det
        return frame
