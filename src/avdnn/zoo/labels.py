"""Label lists the zoo's packages do not ship in a form FFmpeg's labels reader takes.

``COCO_TF_LABELS`` follows FFmpeg's rule for TF Object Detection API models: the class id
indexes the list directly, ids are 1-based, so entry 0 is a placeholder. The 90-id space has
gaps (ids the 2017 COCO release dropped); they carry the COCO paper's names so that no line is
empty (FFmpeg skips empty lines, which would shift every later id).
"""

from __future__ import annotations

from importlib import resources

FER_LABELS: tuple[str, ...] = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")

COCO_TF_LABELS: tuple[str, ...] = (
    "background",
    "person",
    "bicycle",
    "car",
    "motorcycle",
    "airplane",
    "bus",
    "train",
    "truck",
    "boat",
    "traffic light",
    "fire hydrant",
    "street sign",
    "stop sign",
    "parking meter",
    "bench",
    "bird",
    "cat",
    "dog",
    "horse",
    "sheep",
    "cow",
    "elephant",
    "bear",
    "zebra",
    "giraffe",
    "hat",
    "backpack",
    "umbrella",
    "shoe",
    "eye glasses",
    "handbag",
    "tie",
    "suitcase",
    "frisbee",
    "skis",
    "snowboard",
    "sports ball",
    "kite",
    "baseball bat",
    "baseball glove",
    "skateboard",
    "surfboard",
    "tennis racket",
    "bottle",
    "plate",
    "wine glass",
    "cup",
    "fork",
    "knife",
    "spoon",
    "bowl",
    "banana",
    "apple",
    "sandwich",
    "orange",
    "broccoli",
    "carrot",
    "hot dog",
    "pizza",
    "donut",
    "cake",
    "chair",
    "couch",
    "potted plant",
    "bed",
    "mirror",
    "dining table",
    "window",
    "desk",
    "toilet",
    "door",
    "tv",
    "laptop",
    "mouse",
    "remote",
    "keyboard",
    "cell phone",
    "microwave",
    "oven",
    "toaster",
    "sink",
    "refrigerator",
    "blender",
    "book",
    "clock",
    "vase",
    "scissors",
    "teddy bear",
    "hair drier",
    "toothbrush",
)
assert len(COCO_TF_LABELS) == 91 and COCO_TF_LABELS[17] == "cat" and COCO_TF_LABELS[90] == "toothbrush"


def avdnn_data_file(relpath: str) -> str:
    """The path of a data file shipped inside the avdnn package (``zoo/data/...``)."""
    return str(resources.files("avdnn").joinpath(*relpath.split("/")))


__all__ = ["COCO_TF_LABELS", "FER_LABELS", "avdnn_data_file"]
