"""The eight layer types of FFmpeg's native DNN backend, in numpy, bit-exact with FFmpeg 5.1.

Tensors are float32 NHWC. Every layer here is vectorised over pixels (and over the batch axis):
the only Python loops run over kernel taps and channels, because FFmpeg accumulates a
convolution one rounded float32 product at a time in the order channel, kernel row, kernel
column, and only that order reproduces its bits (a BLAS/einsum reduction would not).

Where FFmpeg's C code reads memory it does not own or crashes (a channel count that does not
match, depth-to-space with a bad block size, an integer FloorMod by zero, padding wider than
the tensor), these layers raise :class:`~avdnn.errors.InvalidArgumentError` instead, as FFmpeg's
layers do (EINVAL) where they check at all. Shapes use ``-1`` for a dimension not known yet;
:meth:`Layer.output_dims` works on such symbolic dims so that a model can be described (and
checked) without running any maths, unlike FFmpeg's dry run on an uninitialised buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from avdnn.dnn.native.layerbase import (
    BINARY_NAMES,
    CONSTANT,
    F32,
    REFLECT,
    SAME,
    SAME_CLAMP_TO_EDGE,
    SYMMETRIC,
    UNARY_NAMES,
    VALID,
    Dims,
    Layer,
    _check_size,
    _fail,
    _size,
    activate,
)
from avdnn.dnn.native.mathops import MathBinary, MathUnary, Maximum


def _conv_geometry(k: int, d: int, padding: int) -> tuple[int, int, int]:
    """(shrink p per side, zero/edge pad before, pad after) for FFmpeg's Conv2D window."""
    r = k // 2
    p = ((k - 1) // 2) * d if padding == VALID else 0
    return p, max(0, r * d - p), max(0, (k - 1 - r) * d - p)


@dataclass
class Conv2D(Layer):
    """Type 1: stride-1 square convolution; kernel [Cout][k][k][Cin] as in the file."""

    type_id: ClassVar[int] = 1
    dilation: int
    padding: int
    activation: int
    kernel: np.ndarray
    bias: np.ndarray | None
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        n, h, w, c = dims[0]
        cout, k, _, cin = self.kernel.shape
        if c >= 0 and c != cin:
            raise _fail(self, f"input has {c} channels, the kernel expects {cin}")
        p = _conv_geometry(k, self.dilation, self.padding)[0]
        return _check_size(self, (n, _size(self, h, lambda v: v - 2 * p), _size(self, w, lambda v: v - 2 * p), cout))

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        x = xs[0]
        n, ho, wo, cout = self.output_dims(x.shape)
        _, k, _, cin = self.kernel.shape
        d, r = self.dilation, k // 2
        p, before, after = _conv_geometry(k, d, self.padding)
        pad = ((0, 0), (before, after), (before, after), (0, 0))
        xp = np.pad(x, pad, mode="edge" if self.padding == SAME_CLAMP_TO_EDGE else "constant")
        # Channel-first accumulator: the inner loops then run along whole rows.
        acc = np.empty((cout, n, ho, wo), F32)
        acc[...] = F32(0.0) if self.bias is None else self.bias[:, None, None, None]
        tmp = np.empty_like(acc)
        offs = [p + (t - r) * d + before for t in range(k)]
        wt = self.kernel.transpose(3, 1, 2, 0)[..., None, None, None]  # [cin][ky][kx][cout][1][1][1]
        # FFmpeg's order: for c, for ky, for kx: acc = f32(acc + f32(x * w)).
        for c in range(cin):
            plane = np.ascontiguousarray(xp[..., c])
            for ky in range(k):
                rows = plane[:, offs[ky] : offs[ky] + ho]
                for kx in range(k):
                    np.multiply(rows[:, :, offs[kx] : offs[kx] + wo], wt[c, ky, kx], out=tmp)
                    acc += tmp
        acc = np.ascontiguousarray(acc.transpose(1, 2, 3, 0))
        return activate(acc, self.activation)


@dataclass
class DepthToSpace(Layer):
    """Type 2: TensorFlow's DCR depth-to-space."""

    type_id: ClassVar[int] = 2
    block_size: int
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        n, h, w, c = dims[0]
        b = self.block_size
        if b <= 0:
            raise _fail(self, f"block size {b} must be > 0")
        if c >= 0 and c % (b * b):
            raise _fail(self, f"{c} channels are not divisible by block_size^2 = {b * b}")
        return _check_size(self, (n, h * b if h >= 0 else -1, w * b if w >= 0 else -1, c // (b * b) if c >= 0 else -1))

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        x = xs[0]
        n, h, w, c = x.shape
        b = self.block_size
        dims = self.output_dims(x.shape)
        y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
        return np.ascontiguousarray(y.reshape(dims))


@dataclass
class MirrorPad(Layer):
    """Type 3: pad N, H, W, C in that order; CONSTANT fills 0.0 (FFmpeg stores no value)."""

    type_id: ClassVar[int] = 3
    mode: int
    paddings: tuple[tuple[int, int], ...]
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        if self.mode not in (CONSTANT, REFLECT, SYMMETRIC):
            raise _fail(self, f"unknown mode {self.mode} (expected 0, 1 or 2)")
        limit_slack = 1 if self.mode == REFLECT else 0
        out = []
        for axis, (size, (a, b)) in enumerate(zip(dims[0], self.paddings, strict=False)):
            if a < 0 or b < 0:
                raise _fail(self, f"negative padding {a, b} on axis {'NHWC'[axis]}")
            if self.mode != CONSTANT and size >= 0 and max(a, b) > size - limit_slack:
                raise _fail(
                    self,
                    f"padding {a, b} on axis {'NHWC'[axis]} of size {size} is larger "
                    f"than {'reflect' if limit_slack else 'symmetric'} mode allows",
                )
            out.append(size + a + b if size >= 0 else -1)
        return _check_size(self, tuple(out))  # type: ignore[arg-type]

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        x = xs[0]
        self.output_dims(x.shape)
        if self.mode == CONSTANT:
            return np.pad(x, self.paddings, mode="constant", constant_values=F32(0.0))
        return np.pad(x, self.paddings, mode="reflect" if self.mode == REFLECT else "symmetric")


def _pool_geometry(size: int, k: int, s: int, padding: int) -> tuple[int, int]:
    """(output size, padding before) along one axis of AvgPool."""
    if padding == VALID:
        return -(-(size - k + 1) // s), 0
    return -(-size // s), max(k - ((size - 1) % s + 1), 0) // 2


@dataclass
class AvgPool(Layer):
    """Type 7: per-channel mean over the in-bounds part of each k x k window."""

    type_id: ClassVar[int] = 7
    strides: int
    padding: int
    kernel_size: int
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        n, h, w, c = dims[0]
        if self.padding not in (VALID, SAME):
            raise _fail(self, f"padding method {self.padding} (expected 0 VALID or 1 SAME)")
        if self.strides <= 0 or self.kernel_size <= 0:
            raise _fail(self, f"strides {self.strides} and kernel size {self.kernel_size} must be > 0")
        k, s, pad = self.kernel_size, self.strides, self.padding
        oh = _size(self, h, lambda v: _pool_geometry(v, k, s, pad)[0])
        ow = _size(self, w, lambda v: _pool_geometry(v, k, s, pad)[0])
        return _check_size(self, (n, oh, ow, c))

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        x = xs[0]
        n, oh, ow, c = self.output_dims(x.shape)
        k, s = self.kernel_size, self.strides
        (_, top), (_, left) = (_pool_geometry(x.shape[i], k, s, self.padding) for i in (1, 2))
        bottom = max(0, (oh - 1) * s + k - top - x.shape[1])
        right = max(0, (ow - 1) * s + k - left - x.shape[2])
        # Out-of-frame taps add +0.0 in FFmpeg too, so zero padding keeps every bit.
        xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
        acc = np.zeros((n, oh, ow, c), F32)
        for ky in range(k):
            for kx in range(k):
                acc += xp[:, ky : ky + (oh - 1) * s + 1 : s, kx : kx + (ow - 1) * s + 1 : s]

        def count(size: int, out: int, before: int) -> np.ndarray:
            start = np.arange(out) * s - before
            return np.minimum(start + k, size) - np.maximum(start, 0)

        area = count(x.shape[1], oh, top)[:, None] * count(x.shape[2], ow, left)[None, :]
        mean: np.ndarray = acc / area.astype(F32)[None, :, :, None]
        return mean


@dataclass
class Dense(Layer):
    """Type 8: per-pixel matrix product over channels; kernel [Cout][Cin] as in the file."""

    type_id: ClassVar[int] = 8
    activation: int
    kernel: np.ndarray
    bias: np.ndarray | None
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        n, h, w, c = dims[0]
        cout, cin = self.kernel.shape
        if c >= 0 and c != cin:
            raise _fail(self, f"input has {c} channels, the kernel expects {cin}")
        return _check_size(self, (n, h, w, cout))

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        x = xs[0]
        dims = self.output_dims(x.shape)
        acc = np.empty(dims, F32)
        acc[...] = F32(0.0) if self.bias is None else self.bias
        for c in range(self.kernel.shape[1]):
            acc += x[..., c, None] * self.kernel[:, c]
        return activate(acc, self.activation)


#: Layer classes by FFmpeg's type id.
LAYER_TYPES: dict[int, type[Layer]] = {
    cls.type_id: cls for cls in (Conv2D, DepthToSpace, MirrorPad, Maximum, MathBinary, MathUnary, AvgPool, Dense)
}

__all__ = [
    "BINARY_NAMES",
    "LAYER_TYPES",
    "UNARY_NAMES",
    "AvgPool",
    "Conv2D",
    "Dense",
    "DepthToSpace",
    "Layer",
    "MathBinary",
    "MathUnary",
    "Maximum",
    "MirrorPad",
    "activate",
]
