"""Detection and classification post-processing: model outputs -> :class:`~avdnn.media.detections.Detections`.

Pure numpy, no DNN runtime. dnn_detect builds a :class:`DetectContext` and calls
:func:`parse` with its ``model_type``; dnn_classify calls :func:`classify_top1`/
:func:`classify_batch`. Modules: ``labels`` (FFmpeg's labels files), ``letterbox`` (input
geometry and the one box mapping back to frame pixels), ``nms`` (greedy, weighted, FFmpeg's
rule), ``registry`` (model types), one module per family; ``keypoints``, ``segment``,
``rotated`` and ``ocr`` hold the heads that give more than boxes (avdnn.media.objects).
"""

from __future__ import annotations

from avdnn.dnn.detect.blazeface import ssd_anchors
from avdnn.dnn.detect.classify import ClassifyResult, classify_batch, classify_top1
from avdnn.dnn.detect.context import DetectContext, parse_anchors
from avdnn.dnn.detect.keypoints import COCO_KEYPOINTS, COCO_SKELETON
from avdnn.dnn.detect.labels import label_names, parse_labels, read_labels
from avdnn.dnn.detect.letterbox import Letterbox, boxes_to_frame, boxes_to_input, letterbox, stretch
from avdnn.dnn.detect.nms import ffmpeg_iou, ffmpeg_overlap_keep, iou_matrix, nms, weighted_nms
from avdnn.dnn.detect.ocr import characters, ctc_greedy, label_runs
from avdnn.dnn.detect.registry import (
    ModelType,
    Parser,
    get_model_type,
    list_model_types,
    parse,
    register_model_type,
)
from avdnn.dnn.detect.rotated import probiou, rotated_nms
from avdnn.dnn.detect.yolo_modern import yolox_grid

__all__ = [
    "COCO_KEYPOINTS",
    "COCO_SKELETON",
    "ClassifyResult",
    "DetectContext",
    "Letterbox",
    "ModelType",
    "Parser",
    "boxes_to_frame",
    "boxes_to_input",
    "characters",
    "classify_batch",
    "classify_top1",
    "ctc_greedy",
    "ffmpeg_iou",
    "ffmpeg_overlap_keep",
    "get_model_type",
    "iou_matrix",
    "label_names",
    "label_runs",
    "letterbox",
    "list_model_types",
    "nms",
    "parse",
    "parse_anchors",
    "parse_labels",
    "probiou",
    "read_labels",
    "register_model_type",
    "rotated_nms",
    "ssd_anchors",
    "stretch",
    "weighted_nms",
    "yolox_grid",
]
