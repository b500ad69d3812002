"""Generated ONNX detectors and classifiers for the analytics filter tests (like FFmpeg's tf_det.pb).

Constant models output fixed tensors whatever the picture (one copy per batch item), so a
test knows the exact boxes the filter must attach. Nothing binary is committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
U8 = TensorProto.UINT8


def _save(path: Path, nodes: list, inputs: list, outputs: list, inits: list) -> str:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def input_shape(height: int | str = 300, width: int | str = 300, *, nhwc: bool = False, channels: int = 3) -> list[Any]:
    return ["N", height, width, channels] if nhwc else ["N", channels, height, width]


def constant(
    tmp: Path,
    name: str,
    outputs: list[np.ndarray],
    *,
    shape: list[Any] | None = None,
    elem: int = F32,
    names: list[str] | None = None,
) -> str:
    """A model whose outputs are ``outputs`` (each [1, ...]) repeated for every batch item."""
    shape = shape or input_shape()
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=F32)]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    outs = []
    names = names or [f"out{i}" for i in range(len(outputs))]
    for i, (arr, out) in enumerate(zip(outputs, names, strict=True)):
        arr = np.asarray(arr, dtype=np.float32)
        assert arr.shape[0] == 1, "constant outputs are one image: [1, ...]"
        rank = arr.ndim
        # per-item zero of the output's rank, so the constant broadcasts to [N, ...]
        nodes.append(helper.make_node("ReduceSum", ["xf", f"axes{i}"], [f"s{i}"], keepdims=1))
        nodes += [
            helper.make_node("Mul", [f"s{i}", "zero"], [f"z{i}"]),
            helper.make_node("Reshape", [f"z{i}", f"rs{i}"], [f"zr{i}"]),
            helper.make_node("Add", [f"c{i}", f"zr{i}"], [out]),
        ]
        inits += [
            numpy_helper.from_array(np.array([1, 2, 3], np.int64), f"axes{i}"),
            numpy_helper.from_array(np.array([-1] + [1] * (rank - 1), np.int64), f"rs{i}"),
            numpy_helper.from_array(arr, f"c{i}"),
        ]
        outs.append(helper.make_tensor_value_info(out, F32, ["N", *arr.shape[1:]]))
    return _save(tmp / f"{name}.onnx", nodes, [helper.make_tensor_value_info("x", elem, shape)], outs, inits)


def mean_classifier(tmp: Path, size: int = 8, classes: int = 256, name: str = "meancls") -> str:
    """Logits ``-|k - mean(crop)|`` for k in 0..classes-1: the top-1 id is the crop's mean value.

    Lets a test see which crop each result came from (order checks with batch_size > 1).
    """
    ks = numpy_helper.from_array(np.arange(classes, dtype=np.float32).reshape(1, classes), "ks")
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Reshape", ["m", "shape"], ["m2"]),
        helper.make_node("Sub", ["ks", "m2"], ["d"]),
        helper.make_node("Abs", ["d"], ["a"]),
        helper.make_node("Neg", ["a"], ["y"]),
    ]
    inits = [ks, numpy_helper.from_array(np.array([-1, 1], np.int64), "shape")]
    return _save(
        tmp / f"{name}.onnx",
        nodes,
        [helper.make_tensor_value_info("x", F32, ["N", 3, size, size])],
        [helper.make_tensor_value_info("y", F32, ["N", classes])],
        inits,
    )


def channel_means(tmp: Path, *, nhwc: bool = False, elem: int = F32, size: int = 16) -> str:
    """Output [N, 3]: the mean of each input channel (shows the colour order and layout fed)."""
    axes = [1, 2] if nhwc else [2, 3]
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=F32),
        helper.make_node("ReduceMean", ["xf"], ["y"], axes=axes, keepdims=0),
    ]
    inits: list = []
    return _save(
        tmp / f"chanmeans_{'nhwc' if nhwc else 'nchw'}_{elem}.onnx",
        nodes,
        [helper.make_tensor_value_info("x", elem, input_shape(size, size, nhwc=nhwc))],
        [helper.make_tensor_value_info("y", F32, ["N", 3])],
        inits,
    )


# -- outputs giving the tf_det box: (0.25, 0.25, 0.75, 0.75) at 0.9 -> (16, 16) -> (48, 48) on 64x64 --------


def ssd_output(extra: list[list[float]] | None = None) -> np.ndarray:
    rows = [[0, 1, 0.9, 0.25, 0.25, 0.75, 0.75], *(extra or [])]
    return np.array(rows, np.float32).reshape(1, 1, len(rows), 7)


def tf_outputs() -> list[np.ndarray]:
    return [
        np.array([[1.0]], np.float32),
        np.array([[0.9, 0.1]], np.float32),
        np.array([[1.0, 2.0]], np.float32),
        np.array([[[0.25, 0.25, 0.75, 0.75], [0, 0, 0.1, 0.1]]], np.float32),
    ]


def yolov5_output(rows: list[list[float]], nc: int = 2) -> np.ndarray:
    """[1, N, 5 + nc] rows cx, cy, w, h, obj, class scores (model-input pixels)."""
    return np.array(rows, np.float32).reshape(1, len(rows), 5 + nc)


def yolov3_outputs(nc: int = 1) -> tuple[list[np.ndarray], tuple[float, ...]]:
    """Two NCHW outputs (2x2 then 1x1 grid, 1 box per cell each) and 4 anchors (2 per output).

    Only output 1 (the 1x1 grid) fires: x = y = 0.5, w = h = 0, anchor (32, 32) in input
    pixels on a 64x64 input -> the (16, 16) -> (48, 48) box; its anchors come after output 0's.
    """
    d = 5 + nc
    out0 = np.zeros((1, d, 2, 2), np.float32)
    out0[0, 4] = -1.0  # objectness below any threshold
    out1 = np.zeros((1, d, 1, 1), np.float32)
    out1[0, :, 0, 0] = [0.5, 0.5, 0.0, 0.0, 0.9, *([1.0] * nc)]
    return [out0, out1], (8.0, 8.0, 32.0, 32.0)


# -- driving filters (the graph's way: options bound from strings) ------------------------------------------


def make_filter(name: str, label: str | None = None, **options: Any) -> Any:
    """A filter from the registry with options bound as the chain builder binds them."""
    from avdnn.filters.options import bind_options
    from avdnn.filters.registry import get_filter

    cls = get_filter(name)
    items = [(k, str(int(v)) if isinstance(v, bool) else str(v)) for k, v in options.items()]
    return cls(bind_options(cls.options, items, filter_name=label or name), label=label or name)


def run_filter(f: Any, frames: Any) -> list[Any]:
    """Push every frame, flush until empty, close; the frames that came out."""
    out: list[Any] = []
    try:
        for frame in frames:
            out += f.push(frame)
        while True:
            more = list(f.flush())
            if not more:
                break
            out += more
    finally:
        f.close()
    return out


def lavfi_frames(fmt: str, width: int = 64, height: int = 64, count: int = 1, src: str = "testsrc") -> list[Any]:
    """``count`` frames of an FFmpeg test source in ``fmt`` (pts 0, 1, ...)."""
    import av

    from avdnn.media.frame import Frame

    with av.open(f"{src}=s={width}x{height}:r=25:d={count / 25}", format="lavfi") as container:
        out = [Frame.from_av(f.reformat(format=fmt)) for f in container.decode(video=0)]
    assert len(out) == count
    return out
