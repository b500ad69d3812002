"""Tiny ONNX models generated with onnx.helper into a temp dir (nothing binary is committed).

Each builder returns the model path. Dims left as strings are dynamic (symbolic) in ONNX.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F32 = TensorProto.FLOAT
U8 = TensorProto.UINT8


def _save(path: Path, nodes: list, inputs: list, outputs: list, inits: list | None = None) -> str:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def _vi(name: str, elem: int, dims: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, dims)


def nchw(c: int | str = "C", h: int | str = "H", w: int | str = "W", n: int | str = "N") -> list:
    return [n, c, h, w]


def identity(
    tmp: Path,
    channels: int | str = 3,
    *,
    nhwc: bool = False,
    elem: int = F32,
    name: str = "identity",
    dims: list | None = None,
) -> str:
    """y = x (float or uint8), NCHW by default."""
    shape = dims or (["N", "H", "W", channels] if nhwc else nchw(channels))
    return _save(
        tmp / f"{name}.onnx",
        [helper.make_node("Identity", ["x"], ["y"])],
        [_vi("x", elem, shape)],
        [_vi("y", elem, shape)],
    )


def invert(tmp: Path, channels: int = 3) -> str:
    """y = 1 - x."""
    one = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")
    shape = nchw(channels)
    return _save(
        tmp / f"invert{channels}.onnx",
        [helper.make_node("Sub", ["one", "x"], ["y"])],
        [_vi("x", F32, shape)],
        [_vi("y", F32, shape)],
        [one],
    )


def invert_u8(tmp: Path, channels: int = 1) -> str:
    """uint8 in, uint8 out: y = 255 - x (through float, exact)."""
    c255 = numpy_helper.from_array(np.array(255.0, dtype=np.float32), "c255")
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=F32),
        helper.make_node("Sub", ["c255", "xf"], ["yf"]),
        helper.make_node("Cast", ["yf"], ["y"], to=U8),
    ]
    shape = nchw(channels)
    return _save(tmp / f"invert_u8_{channels}.onnx", nodes, [_vi("x", U8, shape)], [_vi("y", U8, shape)], [c255])


SHARPEN = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=np.float32)


def conv3x3(tmp: Path, channels: int = 3) -> str:
    """Exact integer 3x3 conv: y = conv(round(255 x), W) / 255, W mixes channel (c+1)%C.

    The pixels are made integers inside the graph so the float sums are exact in any order
    and the filter's output can be compared with numpy bit for bit.
    """
    weights = np.zeros((channels, channels, 3, 3), dtype=np.float32)
    for c in range(channels):
        weights[c, (c + 1) % channels] = SHARPEN
    inits = [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.array(255.0, np.float32), "k")]
    nodes = [
        helper.make_node("Mul", ["x", "k"], ["x255"]),
        helper.make_node("Round", ["x255"], ["xi"]),
        helper.make_node("Conv", ["xi", "w"], ["yi"], pads=[1, 1, 1, 1]),
        helper.make_node("Div", ["yi", "k"], ["y"]),
    ]
    shape = nchw(channels)
    return _save(tmp / f"conv{channels}.onnx", nodes, [_vi("x", F32, shape)], [_vi("y", F32, shape)], inits)


def conv3x3_reference(rgb: np.ndarray) -> np.ndarray:
    """numpy reference of :func:`conv3x3` on an (H, W, C) uint8 picture."""
    x = rgb.astype(np.int64)
    if x.ndim == 2:
        x = x[..., None]
    channels = x.shape[2]
    pad = np.pad(x, ((1, 1), (1, 1), (0, 0)))
    h, w = x.shape[:2]
    out = np.zeros_like(x)
    k = SHARPEN.astype(np.int64)
    for c in range(channels):
        src = pad[..., (c + 1) % channels]
        for dy in range(3):
            for dx in range(3):
                out[..., c] += k[dy, dx] * src[dy : dy + h, dx : dx + w]
    out = np.clip(out, 0, 255).astype(np.uint8)
    return out if rgb.ndim == 3 else out[..., 0]


def depth_to_space_x2(tmp: Path) -> str:
    """1-channel 2x nearest upscaler: conv to 4 copies, DepthToSpace(2) (an ESPCN shape)."""
    w = np.zeros((4, 1, 1, 1), dtype=np.float32)
    w[:, 0, 0, 0] = 1.0
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["x4"]),
        helper.make_node("DepthToSpace", ["x4"], ["y"], blocksize=2, mode="DCR"),
    ]
    return _save(
        tmp / "d2s.onnx",
        nodes,
        [_vi("x", F32, nchw(1))],
        [_vi("y", F32, nchw(1, "H2", "W2"))],
        [numpy_helper.from_array(w, "w")],
    )


def pool2(tmp: Path, channels: int = 3) -> str:
    """Dynamic 2x2 max pool: the output is half the input size (found by a trial run)."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    return _save(
        tmp / f"pool{channels}.onnx",
        [node],
        [_vi("x", F32, nchw(channels))],
        [_vi("y", F32, nchw(channels, "h2", "w2"))],
    )


def fixed_pool2(tmp: Path, width: int, height: int, channels: int = 3) -> str:
    """Like :func:`pool2` with static shapes [1,C,H,W] -> [1,C,H/2,W/2]."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    return _save(
        tmp / f"fixed_pool_{width}x{height}.onnx",
        [node],
        [_vi("x", F32, [1, channels, height, width])],
        [_vi("y", F32, [1, channels, height // 2, width // 2])],
    )


def two_outputs(tmp: Path, channels: int = 3) -> str:
    """y = x and z = 1 - x."""
    one = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")
    shape = nchw(channels)
    nodes = [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Sub", ["one", "x"], ["z"])]
    return _save(
        tmp / "two_outputs.onnx", nodes, [_vi("x", F32, shape)], [_vi("y", F32, shape), _vi("z", F32, shape)], [one]
    )


def int64_input(tmp: Path) -> str:
    shape = nchw(1)
    return _save(
        tmp / "int64.onnx",
        [helper.make_node("Identity", ["x"], ["y"])],
        [_vi("x", TensorProto.INT64, shape)],
        [_vi("y", TensorProto.INT64, shape)],
    )


def scaled(tmp: Path, channels: int = 3) -> str:
    """Two inputs: the image ``x`` and a gain ``s`` [1] (like multistyle26's style weights): y = x * s."""
    nodes = [helper.make_node("Mul", ["x", "s"], ["y"])]
    shape = nchw(channels)
    return _save(tmp / "scaled.onnx", nodes, [_vi("s", F32, [1]), _vi("x", F32, shape)], [_vi("y", F32, shape)])
