"""What a detection parser needs to know besides the output tensors.

:class:`DetectContext` is built once per frame size by dnn_detect from its options (FFmpeg's
names: confidence, nb_classes, anchors, cell_w, cell_h, labels) and the model input size
(FFmpeg's scale_width/scale_height). Every parser in the registry takes the same context.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Literal

from avdnn.dnn.detect.letterbox import Letterbox
from avdnn.errors import AVERROR, InvalidArgumentError

NmsMode = Literal["auto", "none", "greedy", "ffmpeg", "weighted"]
Layout = Literal["auto", "NCHW", "NHWC"]
ScoreActivation = Literal["auto", "softmax", "sigmoid", "none"]


def parse_anchors(text: str) -> tuple[float, ...]:
    """dnn_detect's ``anchors`` option: numbers separated by ``&`` (e.g. ``10&13&16&30``).

    FFmpeg's strtof silently reads ``abc`` as 0 and fails on empty tokens; avdnn refuses both
    with the token named. Code AVERROR(EINVAL), as FFmpeg's "failed to parse anchors_str".
    """
    tokens = text.split("&")
    values: list[float] = []
    for i, tok in enumerate(tokens):
        try:
            values.append(float(tok.strip()))
        except ValueError:
            raise InvalidArgumentError(
                f"failed to parse anchors_str: token {i} {tok!r} is not a number in {text!r}",
                code=AVERROR(errno.EINVAL),
                option="anchors",
            ) from None
    return tuple(values)


@dataclass(frozen=True, kw_only=True)
class DetectContext:
    """Parser inputs: sizes, thresholds, FFmpeg's YOLO options, labels and family hints.

    Attributes:
        frame_width, frame_height: the frame the boxes are reported in (FFmpeg's frame->width/height).
        input_width, input_height: the model input (FFmpeg's scale_width/scale_height).
        confidence: score threshold (FFmpeg's ``confidence``; also its YOLO overlap IoU threshold).
        iou: IoU threshold of greedy/weighted NMS (avdnn; FFmpeg has none).
        nb_classes, anchors, cell_w, cell_h: FFmpeg's YOLO options.
        labels: the labels file's lines, or None.
        layout: NCHW/NHWC hint for the YOLO types ("auto" = FFmpeg's rule).
        letterbox: geometry of the input when it was letterboxed; None = FFmpeg's stretch.
        nms: "auto" is each family's default (ffmpeg for yolo/yolov3/yolov4, greedy for
            yolov5/yolov8/yolox, weighted for blazeface, none for ssd/tf/detr).
        class_agnostic: greedy NMS across classes instead of per class.
        max_det: at most this many boxes from the modern families (and DETR's top-k).
        score_activation: DETR scores: softmax with a trailing no-object class (DETR),
            sigmoid per class (RT-DETR, D-FINE, RF-DETR), none (already probabilities);
            auto = softmax when the class axis is nb_classes + 1, else sigmoid.
        strides: YOLOX / BlazeFace feature strides; None = the family default.
        keypoint_names: names of a pose model's keypoints (None: COCO's for 17 points).
        source: the header source (model file name); pts: the frame's pts.
    """

    frame_width: int
    frame_height: int
    input_width: int = 0
    input_height: int = 0
    confidence: float = 0.5
    iou: float = 0.45
    nb_classes: int = 0
    anchors: tuple[float, ...] = ()
    cell_w: int = 0
    cell_h: int = 0
    labels: tuple[str, ...] | None = None
    layout: Layout = "auto"
    letterbox: Letterbox | None = None
    nms: NmsMode = "auto"
    class_agnostic: bool = False
    max_det: int = 300
    score_activation: ScoreActivation = "auto"
    strides: tuple[int, ...] | None = None
    keypoint_names: tuple[str, ...] | None = None
    source: str = ""
    pts: int | None = field(default=None)

    def __post_init__(self) -> None:
        if self.frame_width <= 0 or self.frame_height <= 0:
            raise InvalidArgumentError(
                f"DetectContext: expected a positive frame size, got {self.frame_width}x{self.frame_height}"
            )
        if self.input_width <= 0 or self.input_height <= 0:
            # FFmpeg: a dynamic (-1) model dimension takes the link's size.
            object.__setattr__(self, "input_width", self.input_width if self.input_width > 0 else self.frame_width)
            object.__setattr__(self, "input_height", self.input_height if self.input_height > 0 else self.frame_height)
        for name in ("confidence", "iou"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise InvalidArgumentError(f"DetectContext.{name}: expected 0..1, got {v}", option=name)
        for name in ("nb_classes", "cell_w", "cell_h"):
            if getattr(self, name) < 0:
                raise InvalidArgumentError(
                    f"DetectContext.{name}: expected >= 0, got {getattr(self, name)}", option=name
                )
        if self.max_det <= 0:
            raise InvalidArgumentError(f"DetectContext.max_det: expected > 0, got {self.max_det}")
        if self.layout not in ("auto", "NCHW", "NHWC"):
            raise InvalidArgumentError(f"DetectContext.layout: expected auto, NCHW or NHWC, got {self.layout!r}")
        if self.nms not in ("auto", "none", "greedy", "ffmpeg", "weighted"):
            raise InvalidArgumentError(
                f"DetectContext.nms: expected auto, none, greedy, ffmpeg or weighted, got {self.nms!r}"
            )
        if self.score_activation not in ("auto", "softmax", "sigmoid", "none"):
            raise InvalidArgumentError(
                f"DetectContext.score_activation: expected auto, softmax, sigmoid or none, "
                f"got {self.score_activation!r}"
            )
        if self.letterbox is not None and (
            (
                self.letterbox.frame_width,
                self.letterbox.frame_height,
                self.letterbox.input_width,
                self.letterbox.input_height,
            )
            != (self.frame_width, self.frame_height, self.input_width, self.input_height)
        ):
            raise InvalidArgumentError("DetectContext.letterbox: its frame and input sizes differ from the context's")
        object.__setattr__(self, "anchors", tuple(float(a) for a in self.anchors))
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(self.labels))
        if self.keypoint_names is not None:
            object.__setattr__(self, "keypoint_names", tuple(self.keypoint_names))


__all__ = ["DetectContext", "Layout", "NmsMode", "ScoreActivation", "parse_anchors"]
