"""A TF Object Detection API graph's preprocessor loop, as the one batch resize it amounts to.

The API's fixed-shape preprocessor resizes each image of the batch in a ``tf.map_fn`` loop
(``Preprocessor/map``: cast to float, TensorFlow's ResizeBilinear to 300x300, stacked through a
TensorArray). OpenVINO runs that loop one small step at a time with dynamic shapes; on a 720p
frame it cost about a third of the cut SSD's CPU in bf16. The same resize on the whole batch is
one Interpolate: the graph is converted again from the loop's stacked output on, and that
Interpolate (the loop body's own, with its attributes and sizes: TensorFlow's bilinear, kept) is
put in front of it. The result is checked against the loop once, in f32, on two odd image
sizes; anything that does not match (another graph, another resize) keeps the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["batch_resize"]

log = logging.getLogger("avdnn.dnn.openvino")

RESIZE = "Preprocessor/map/while/ResizeImage/ResizeBilinear"
STACKED = "Preprocessor/map/TensorArrayStack/TensorArrayGatherV3:0"


def _loop_resize(model: Any) -> Any | None:
    """The Interpolate node of the preprocessor loop's body, if the model has exactly that."""
    found = []
    for node in model.get_ordered_ops():
        if node.get_type_name() != "Loop":
            continue
        for inner in node.get_function().get_ordered_ops():
            if inner.get_type_name() == "Interpolate" and inner.get_friendly_name() == RESIZE:
                found.append(inner)
    if len(found) != 1:
        return None
    sizes = found[0].input_value(1).get_node()
    return found[0] if sizes.get_type_name() == "Constant" else None


def batch_resize(frontend: Any, path: str, cut: Sequence[str], model: Any) -> Any:
    """``model`` (``path`` cut at ``cut``, converted with the loop) with the loop as one batch Interpolate.

    ``model`` itself when the graph is not that preprocessor or the rewrite does not give its outputs.
    """
    import openvino as ov
    import openvino.opset13 as ops

    resize = _loop_resize(model)
    if resize is None or len(model.inputs) != 1:
        return model
    source = frontend.load(path)
    stacked = source.get_place_by_tensor_name(STACKED)
    outputs = [source.get_place_by_tensor_name(n) or source.get_place_by_tensor_name(n + ":0") for n in cut]
    if stacked is None or any(p is None for p in outputs):
        return model
    original = model.inputs[0]
    source.override_all_inputs([stacked])
    source.override_all_outputs(outputs)
    body = frontend.convert(source)
    image = ops.parameter(original.get_partial_shape(), original.get_element_type(), name=original.get_any_name())
    image.output(0).get_tensor().set_names(set(original.get_names()))
    attrs = resize.get_attributes()
    sizes = ops.constant(resize.input_value(1).get_node().get_data())
    axes = ops.constant(np.array([1, 2], np.int64))
    resized = ops.interpolate(
        ops.convert(image, "f32"),
        sizes,
        mode=attrs["mode"],
        shape_calculation_mode=attrs["shape_calculation_mode"],
        coordinate_transformation_mode=attrs["coordinate_transformation_mode"],
        nearest_mode=attrs["nearest_mode"],
        antialias=attrs["antialias"],
        axes=axes,
    )
    for param in body.get_parameters():
        # the stacked images become the resize; the graph's own input (shapes taken of it) the new input
        feed = image if param.output(0).get_names() & original.get_names() else resized
        for target in list(param.output(0).get_target_inputs()):
            target.replace_source_output(feed.output(0))
    rewritten = ov.Model(body.get_results(), [image], model.get_friendly_name())
    if not _same(model, rewritten):
        log.info("openvino: the preprocessor loop kept (its batch resize did not give the same outputs)")
        return model
    return rewritten


def _same(a: Any, b: Any) -> bool:
    """Whether two models give the same outputs (f32) on two odd-sized images."""
    import openvino as ov

    core = ov.Core()
    ca = core.compile_model(a, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    cb = core.compile_model(b, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    rng = np.random.default_rng(7)
    for shape in ((1, 97, 131, 3), (2, 240, 180, 3)):
        x = rng.integers(0, 256, shape, dtype=np.uint8)
        ra, rb = ca({0: x}), cb({0: x})
        for i in range(len(a.outputs)):
            if ra[i].shape != rb[i].shape or not np.allclose(ra[i], rb[i], rtol=1e-5, atol=1e-5):
                return False
    return True
