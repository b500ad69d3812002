"""Which backend formats can run here, and why not (a plain module: conftest names collide across dirs)."""

from __future__ import annotations

import importlib.util

import nets

from avdnn.dnn import backends as registry

#: format -> the modules needed to write it (besides the backend's own runtime)
WRITERS = {
    "onnx": ("onnx",),
    "openvino": ("onnx", "openvino"),
    "torch": ("torch",),
    "torch_export": ("torch",),
    "tensorflow": ("tensorflow",),
    "tf_saved": ("tensorflow",),
    "tflite": ("tensorflow",),
    "native": (),
    "openvino_pb": ("tensorflow",),
    "openvino_tflite": ("tensorflow",),
}


def skip_reason(fmt: str) -> str | None:
    backend = nets.FORMATS[fmt][0]
    spec = registry.spec_for(backend)
    if not registry.is_installed(backend):
        return f"the {backend} backend is not installed: pip install 'avdnn[{spec.extra}]'"
    for mod in WRITERS[fmt]:
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is needed to write the {fmt} test models"
    if fmt == "native" and nets.native_builders() is None:
        return "tests/native/builders.py (the native model builders) is not there"
    return None


def identity_onnx(folder: object, input_name: str = "x", output_name: str = "y") -> str:
    """A dynamic-shape [N,3,H,W] float identity ONNX model written to ``folder``."""
    from pathlib import Path

    from onnx import TensorProto, helper, save

    x = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, ["N", 3, "H", "W"])
    y = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["N", 3, "H", "W"])
    graph = helper.make_graph([helper.make_node("Identity", [input_name], [output_name])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = Path(str(folder)) / f"identity_{input_name}.onnx"
    save(model, str(path))
    return str(path)
