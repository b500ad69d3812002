"""What every native layer shares: FFmpeg's codes, the size checks, activations, the record base.

Kept apart from the layer types so that the spatial layers (layers.py) and the element-wise
ones (mathops.py) build on one definition of each check and code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from avdnn.errors import InvalidArgumentError

Dims = tuple[int, int, int, int]
F32 = np.float32
INT32_MAX = 2**31 - 1

# Conv2D padding methods and activations (FFmpeg's DNNPaddingParam / DNNActivationFunc).
VALID, SAME, SAME_CLAMP_TO_EDGE = 0, 1, 2
RELU, TANH, SIGMOID, NONE, LEAKY_RELU = 0, 1, 2, 3, 4
# MirrorPad modes.
CONSTANT, REFLECT, SYMMETRIC = 0, 1, 2
# MathBinary ops.
SUB, ADD, MUL, REALDIV, MINIMUM, FLOORMOD = range(6)
BINARY_NAMES = ("sub", "add", "mul", "realdiv", "minimum", "floormod")
#: MathUnary ops, by code 0..16.
UNARY_NAMES = (
    "abs",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "ceil",
    "floor",
    "round",
    "exp",
)


def _fail(layer: Layer, msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"native layer {type(layer).__name__}: {msg}")


def _known(*vals: int) -> bool:
    return all(v >= 0 for v in vals)


def _check_size(layer: Layer, dims: Dims) -> Dims:
    """FFmpeg's 'The output data length overflow' check, on the dims that are known."""
    bad = any(d == 0 or d < -1 for d in dims)
    if bad or (_known(*dims) and 4 * dims[0] * dims[1] * dims[2] * dims[3] > INT32_MAX):
        raise _fail(layer, f"The output data length overflow (output dims {list(dims)})")
    return dims


def _size(layer: Layer, size: int, fn: Callable[[int], int]) -> int:
    """fn(size) for a known size (it must stay > 0); -1 stays -1."""
    if size < 0:
        return -1
    out = fn(size)
    if out <= 0:
        raise _fail(layer, f"The output data length overflow (a dimension of {size} becomes {out})")
    return out


def activate(acc: np.ndarray, code: int) -> np.ndarray:
    """Conv2D/Dense activation with the arithmetic of FFmpeg's built binary.

    tanh is FFmpeg's own 2/(1+exp(-2v))-1 in double (not libm tanh); leaky ReLU's slope is the
    fixed 0.2 (TensorFlow's alpha is not stored); unknown codes mean no activation.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if code == RELU:
            return np.where(acc > 0, acc, F32(0.0))
        if code == TANH:
            t = (F32(-2.0) * acc).astype(np.float64)
            return (2.0 / (1.0 + np.exp(t)) - 1.0).astype(F32)
        if code == SIGMOID:
            return (1.0 / (1.0 + np.exp(-acc.astype(np.float64)))).astype(F32)
        if code == LEAKY_RELU:
            v = acc.astype(np.float64)
            pos = v > 0
            return (np.where(pos, v, 0.0) + 0.2 * np.where(pos, 0.0, v)).astype(F32)
    return acc


@dataclass
class Layer:
    """One layer record: parameters plus the operand indexes it reads and writes."""

    type_id: ClassVar[int] = -1

    def inputs(self) -> tuple[int, ...]:
        """Operand indexes read, in FFmpeg's input-slot order."""
        return (self.input,)  # type: ignore[attr-defined]

    def output_dims(self, *dims: Dims) -> Dims:
        """The output operand's dims from the input dims (``-1`` = not known yet)."""
        raise NotImplementedError

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        raise NotImplementedError
