"""dnn_detect: run a detector over every frame and attach its boxes (FFmpeg's vf_dnn_detect).

FFmpeg's options, defaults and ranges: ``dnn_backend``, ``confidence`` (0..1, 0.5),
``labels``, ``model_type`` (ssd=0, yolo=1, yolov3=2, yolov4=3), ``cell_w``, ``cell_h``,
``nb_classes`` (>= 0), ``anchors`` (``&``-separated floats, FLT_MIN..FLT_MAX), and every
``dnn_base`` option (model, input, output, async, nireq, batch_size, device...). avdnn adds the
model types of :mod:`avdnn.dnn.detect` (tf, yolov5, yolov8, yolox, detr, blazeface, numbered
from 4 on), ``iou``, ``nms``, ``letterbox``, ``max_det``, ``input_multiple`` (a dynamic input's
sides rounded to a multiple: DBNet's 32) and ``interval`` (the model on every Nth frame only, for
a ``track`` filter to predict the others; docs/tracking.md). Heads that give keypoints, masks,
rotated boxes or text boxes fill avdnn's own columns of the record (docs/analytics.md).

The output is the input frame itself with a :class:`~avdnn.media.detections.Detections`
record whose source is the ``model`` value as given (FFmpeg's header source). Deliberate
differences (docs/analytics.md): an unset backend follows the model file (FFmpeg: openvino); every avdnn
backend can detect; a frame with nothing detected carries an empty record (FFmpeg attaches no
side data; showinfo prints the same for both); a frame that already has boxes passes unchanged
with a warning once (FFmpeg logs an error per frame); a post-processing failure (bad output
shape, NaN scores, too few anchors) fails the frame with its code instead of being swallowed.
"""

from __future__ import annotations

import errno
import logging
from typing import Any, ClassVar

from avdnn.dnn import KNOWN_BACKENDS, Item, io_analytics
from avdnn.dnn.detect import DetectContext, get_model_type, list_model_types, parse, read_labels
from avdnn.dnn.interface import DNNBackendType, DNNFunctionType
from avdnn.errors import AVERROR, AvdnnError, InvalidArgumentError
from avdnn.filters.dnn_common import ALL_BACKENDS, DnnFilter, dnn_backend_option, dnn_options
from avdnn.filters.options import INT_MAX, Option
from avdnn.media.detections import SKIPPED_KEY, Detections
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import DNN_PIX_FMTS

log = logging.getLogger("avdnn.filters")

FLT_MIN = 1.1754943508222875e-38
FLT_MAX = 3.4028234663852886e38

#: Every backend avdnn has, FFmpeg's and its own (TFLite...): detection is backend-independent here.
ANALYTICS_BACKENDS = DNNBackendType(int(ALL_BACKENDS) | sum({int(s.flag) for s in KNOWN_BACKENDS.values()}))

#: FFmpeg's model_type constants first (ssd=0, yolo=1, yolov3=2, yolov4=3), then avdnn's.
_FFMPEG_TYPES = ("ssd", "yolo", "yolov3", "yolov4")
MODEL_TYPES: dict[str, int] = {
    name: i for i, name in enumerate([*_FFMPEG_TYPES, *(n for n in list_model_types() if n not in _FFMPEG_TYPES)])
}
NMS_MODES: dict[str, int] = {"auto": 0, "none": 1, "greedy": 2, "ffmpeg": 3, "weighted": 4}

DETECT_OPTIONS: tuple[Option, ...] = (
    Option("confidence", "float", 0.5, 0, 1, help="threshold of confidence"),
    Option("labels", "string", None, help="path to labels file", reads=True),
    Option("model_type", "int", 0, -(2**31), INT_MAX, help="DNN detection model type", consts=MODEL_TYPES),
    Option("cell_w", "int", 0, 0, INT_MAX, help="cell width"),
    Option("cell_h", "int", 0, 0, INT_MAX, help="cell height"),
    Option("nb_classes", "int", 0, 0, INT_MAX, help="The number of class"),
    Option("anchors", "float_list", None, FLT_MIN, FLT_MAX, help="anchors, split by '&'"),
    Option("iou", "float", 0.45, 0, 1, help="IoU threshold of greedy/weighted NMS (avdnn)"),
    Option("nms", "int", 0, 0, 4, help="overlap removal: auto = the model type's own (avdnn)", consts=NMS_MODES),
    Option("letterbox", "bool", False, 0, 1, help="keep the aspect ratio and pad instead of stretching (avdnn)"),
    Option("max_det", "int", 300, 1, INT_MAX, help="at most this many boxes per frame, modern types (avdnn)"),
    Option(
        "input_multiple",
        "int",
        1,
        1,
        4096,
        help="a dynamic model input takes the frame size rounded to a multiple of this (avdnn)",
    ),
    Option(
        "interval",
        "int",
        1,
        1,
        INT_MAX,
        help="run the model on every Nth frame; a track filter predicts the others (avdnn)",
    ),
)


def model_type_name(value: int | str) -> str:
    """The registry name of a ``model_type`` option value."""
    if isinstance(value, str):
        return value
    for name, number in MODEL_TYPES.items():
        if number == value:
            return name
    raise InvalidArgumentError(
        f"model_type {value} is not a known detection model type ({', '.join(MODEL_TYPES)})", option="model_type"
    )


class DnnDetectFilter(DnnFilter):
    """Detect objects; each frame leaves with its Detections record, in order."""

    name: ClassVar[str] = "dnn_detect"
    description: ClassVar[str] = "Apply DNN detect filter to the input."
    backend_mask: ClassVar[DNNBackendType] = ANALYTICS_BACKENDS
    func_type: ClassVar[DNNFunctionType] = DNNFunctionType.ANALYTICS_DETECT
    pix_fmts: ClassVar[tuple[str, ...] | None] = DNN_PIX_FMTS
    options: ClassVar[tuple[Option, ...]] = (
        dnn_backend_option(ANALYTICS_BACKENDS),
        *DETECT_OPTIONS,
        *dnn_options(ANALYTICS_BACKENDS),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        values = self.resolve_zoo(values, label)
        self.model_type = model_type_name(values.get("model_type", 0))
        row = get_model_type(self.model_type)
        if row.needs_anchors and not values.get("anchors"):
            raise InvalidArgumentError(
                "anchors is not set while being required for YOLO models",
                code=AVERROR(errno.EINVAL),
                filter=label or self.name,
                option="anchors",
            )
        self.labels = labels_value(values.get("labels"))
        super().__init__(values, label=label)
        if self.config.backend == "tensorflow":
            # FFmpeg's TF path always parses the TF Object Detection API's four outputs
            if len(self.config.outputs) != 4:
                self.close()
                raise InvalidArgumentError(
                    f"Only support tensorflow detect model with 4 outputs, but get {len(self.config.outputs)} instead",
                    filter=self.label,
                    option="output",
                )
            if self.model_type == "ssd":
                self.model_type = "tf"
        self._warned_existing = False
        self._interval, self._seen = int(values.get("interval", 1)), 0
        self._contexts: dict[tuple[int, int], tuple[DetectContext, io_analytics.InputSpec]] = {}

    def context(self, width: int, height: int) -> tuple[DetectContext, io_analytics.InputSpec]:
        """Parser context and input spec for frames of this size (FFmpeg's config_input), cached."""
        key = (width, height)
        if key not in self._contexts:
            assert self.model is not None
            try:
                spec = io_analytics.input_spec(
                    self.model.get_input(), width, height, int(self.opts.get("input_multiple", 1))
                )
            except AvdnnError as exc:
                raise exc.with_context(filter=self.label, file=self.config.model) from None
            geom = io_analytics.geometry(spec, width, height, bool(self.opts.get("letterbox")))
            nms = next(k for k, v in NMS_MODES.items() if v == self.opts.get("nms", 0))
            ctx = DetectContext(
                frame_width=width,
                frame_height=height,
                input_width=spec.width,
                input_height=spec.height,
                confidence=float(self.opts.get("confidence", 0.5)),
                iou=float(self.opts.get("iou", 0.45)),
                nb_classes=int(self.opts.get("nb_classes", 0)),
                anchors=tuple(self.opts.get("anchors") or ()),
                cell_w=int(self.opts.get("cell_w", 0)),
                cell_h=int(self.opts.get("cell_h", 0)),
                labels=self.labels,
                letterbox=None if geom.is_stretch else geom,
                nms=nms,  # type: ignore[arg-type]
                max_det=int(self.opts.get("max_det", 300)),
                source=self.model_source,
            )
            self._contexts[key] = (ctx, spec)
        return self._contexts[key]

    def filter(self, frame: Frame) -> list[Frame]:
        self.raise_pending()
        assert self.model is not None
        existing = frame.side_data.detections
        if existing is not None and len(existing):
            if not self._warned_existing:
                log.warning(
                    "%s: already have bounding boxes in side data; frames that have them pass unchanged", self.label
                )
                self._warned_existing = True
            return self.submit(frame, [])
        self._seen += 1
        if (self._seen - 1) % self._interval:
            # DL Streamer's inference-interval: no inference, no record; the frame says so for track
            frame.side_data = frame.side_data.copy()
            frame.side_data.metadata[SKIPPED_KEY] = "1"
            return self.submit(frame, [])
        ctx, spec = self.context(frame.width, frame.height)
        geom = ctx.letterbox or io_analytics.geometry(spec, frame.width, frame.height, False)
        model_type, pts = self.model_type, frame.pts
        frame_ctx = ctx if pts is None else DetectContext(**{**_fields(ctx), "pts": pts})

        def post(outputs: list[Any]) -> Detections:
            return parse(model_type, outputs, frame_ctx)

        item = Item(spec.shape, spec.dtype, io_analytics.detect_fill(frame, spec, geom), post)
        return self.submit(frame, [item])

    def finish(self, payload: Any, results: tuple[Any, ...]) -> Frame:
        frame: Frame = payload
        if results:
            frame.side_data = frame.side_data.copy()
            frame.side_data.detections = results[0]
        return frame


def labels_value(value: Any) -> tuple[str, ...] | None:
    """The ``labels`` option: a file read by FFmpeg's rules, or the list a zoo entry gives."""
    if not value:
        return None
    return tuple(value) if isinstance(value, (tuple, list)) else read_labels(value)


def _fields(ctx: DetectContext) -> dict[str, Any]:
    return {name: getattr(ctx, name) for name in ctx.__dataclass_fields__}
