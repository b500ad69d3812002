"""The table of detection model types: ``model_type`` name -> parser.

Every parser has one signature, ``parse(outputs, ctx) -> Detections``: ``outputs`` are the
model's output tensors in output order (one image each), ``ctx`` a :class:`DetectContext`.
The first four names are FFmpeg's dnn_detect ``model_type`` values; the rest are avdnn's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from avdnn.dnn.detect.blazeface import parse_blazeface
from avdnn.dnn.detect.context import DetectContext
from avdnn.dnn.detect.detr import parse_detr
from avdnn.dnn.detect.ffmpeg_ssd import parse_ssd, parse_tf
from avdnn.dnn.detect.ffmpeg_yolo import parse_yolo, parse_yolov3, parse_yolov4
from avdnn.dnn.detect.keypoints import parse_movenet, parse_yolov8_pose
from avdnn.dnn.detect.ocr import parse_dbnet
from avdnn.dnn.detect.rotated import parse_yolo26, parse_yolov8_obb
from avdnn.dnn.detect.segment import parse_semantic, parse_yolov8_seg
from avdnn.dnn.detect.tf_ssd import parse_tf_ssd
from avdnn.dnn.detect.yolo_modern import parse_yolov5, parse_yolov8, parse_yolox
from avdnn.errors import InvalidArgumentError
from avdnn.media.detections import Detections

Parser = Callable[[Sequence[np.ndarray], DetectContext], Detections]


@dataclass(frozen=True)
class ModelType:
    """One registry row: the parser, whether FFmpeg has it, and whether it needs anchors."""

    name: str
    parse: Parser
    description: str
    ffmpeg: bool = False
    needs_anchors: bool = False


_MODEL_TYPES: dict[str, ModelType] = {}


def register_model_type(
    name: str, *, description: str, ffmpeg: bool = False, needs_anchors: bool = False
) -> Callable[[Parser], Parser]:
    """Decorator adding a parser to the table; a name can be registered once."""

    def add(fn: Parser) -> Parser:
        if name in _MODEL_TYPES:
            raise InvalidArgumentError(f"detection model type {name!r} is already registered")
        _MODEL_TYPES[name] = ModelType(name, fn, description, ffmpeg, needs_anchors)
        return fn

    return add


def list_model_types() -> list[str]:
    """The registered names, FFmpeg's first."""
    return sorted(_MODEL_TYPES, key=lambda n: (not _MODEL_TYPES[n].ffmpeg, list(_MODEL_TYPES).index(n)))


def get_model_type(name: str) -> ModelType:
    """The registry row for ``name``; an unknown name lists the known ones."""
    try:
        return _MODEL_TYPES[name]
    except KeyError:
        raise InvalidArgumentError(
            f"unknown detection model_type {name!r}; known: {', '.join(list_model_types())}", option="model_type"
        ) from None


def parse(model_type: str, outputs: Sequence[np.ndarray], ctx: DetectContext) -> Detections:
    """Run the parser of ``model_type`` over one image's output tensors."""
    return get_model_type(model_type).parse(list(outputs), ctx)


for _row in (
    ("ssd", parse_ssd, "output [1,1,N,7], or [1,1,N,5] + labels [1,1,N] (FFmpeg); 4 outputs = tf", True, False),
    ("yolo", parse_yolo, "YOLO v1/v2: output 0 [1, N*D, Cx, Cy], grid from cell_w/cell_h (FFmpeg)", True, True),
    ("yolov3", parse_yolov3, "outputs [1, N*D, Cx, Cy] (NCHW or NHWC), linear (FFmpeg)", True, True),
    ("yolov4", parse_yolov4, "outputs [1, N*D, Cx, Cy] (NCHW or NHWC), sigmoid (FFmpeg)", True, True),
    ("tf", parse_tf, "TF Object Detection API: num_detections, scores, classes, boxes (FFmpeg's TF path)", True, False),
    ("yolov5", parse_yolov5, "[1, N, 5+nc] cx,cy,w,h,obj,classes in input pixels; greedy NMS", False, False),
    ("yolov8", parse_yolov8, "[1, 4+nc, N] (or [1, N, 4+nc]) anchor free; greedy NMS", False, False),
    ("yolox", parse_yolox, "raw [1, N, 5+nc] with grids and strides 8/16/32; greedy NMS", False, False),
    ("detr", parse_detr, "boxes [1,Q,4] cxcywh + logits [1,Q,C] (DETR, RT-DETR, D-FINE, RF-DETR)", False, False),
    ("blazeface", parse_blazeface, "MediaPipe BlazeFace: regressors [1,N,16] + scores [1,N,1]", False, False),
    ("tf_ssd", parse_tf_ssd, "TF OD API SSD cut before its postprocessor: encodings, logits, anchors", False, False),
    ("movenet", parse_movenet, "single pose [1,1,K,3] y,x,score normalised (MoveNet): keypoints", False, False),
    ("yolov8_pose", parse_yolov8_pose, "[1, 4+nc+3K, N] boxes and K keypoints (YOLOv8/11 -pose); NMS", False, False),
    ("yolov8_seg", parse_yolov8_seg, "[1, 4+nc+nm, N] + prototypes [1,nm,h,w] (YOLOv8/11 -seg): masks", False, False),
    (
        "semantic",
        parse_semantic,
        "a class map [1,C,H,W] / [1,H,W,C] / [1,H,W]: one object per class, masks",
        False,
        False,
    ),
    (
        "yolov8_obb",
        parse_yolov8_obb,
        "[1, 4+nc+1, N] rotated boxes, angle last (YOLOv8/11 -obb); rotated NMS",
        False,
        False,
    ),
    ("yolo26", parse_yolo26, "end to end [1, N, 6] x0,y0,x1,y1,score,class (YOLO26, YOLOv10): no NMS", False, False),
    ("dbnet", parse_dbnet, "DBNet text probability map [1,1,H,W] (PP-OCR): text boxes for a recognizer", False, False),
):
    register_model_type(_row[0], description=_row[2], ffmpeg=_row[3], needs_anchors=_row[4])(_row[1])
