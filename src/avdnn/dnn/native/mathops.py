"""The element-wise native layers: Maximum, MathBinary and MathUnary, bit-exact with FFmpeg 5.1.

FFmpeg evaluates each op in C on float32 (MathUnary through libm in double): these keep its
rounding, its NaN signs and its divisor checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from avdnn.dnn.native.layerbase import (
    ADD,
    BINARY_NAMES,
    F32,
    FLOORMOD,
    MINIMUM,
    MUL,
    REALDIV,
    SUB,
    UNARY_NAMES,
    Dims,
    Layer,
    _check_size,
    _fail,
    _known,
)


@dataclass
class Maximum(Layer):
    """Type 4: out = in > y ? in : y (a NaN input gives y)."""

    type_id: ClassVar[int] = 4
    y: float
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        return _check_size(self, dims[0])

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        y = F32(self.y)
        if y == 0 or np.isnan(y):  # which zero, or the NaN: only C's comparison says
            return np.where(xs[0] > y, xs[0], y)
        out: np.ndarray = np.fmax(xs[0], y)  # the same float (fmax drops a NaN input for y): one pass, not two
        return out


def _binary(op: int, a: np.ndarray | np.float32, b: np.ndarray | np.float32, layer: Layer) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == SUB:
            return np.subtract(a, b, dtype=F32)
        if op == ADD:
            return np.add(a, b, dtype=F32)
        if op == MUL:
            return np.multiply(a, b, dtype=F32)
        if op == REALDIV:
            return np.divide(a, b, dtype=F32)
        if op == MINIMUM:
            return np.where(a > b, b, a).astype(F32)
        if op == FLOORMOD:
            # C: (float)((int)a % (int)b): truncation, remainder with the dividend's sign.
            ia, ib = np.asarray(a).astype(np.int32), np.asarray(b).astype(np.int32)
            if np.any(ib == 0):
                raise _fail(layer, "FloorMod by an integer divisor of 0 (FFmpeg dies with SIGFPE)")
            if np.any((ia == np.iinfo(np.int32).min) & (ib == -1)):
                raise _fail(layer, "FloorMod INT_MIN % -1 overflows (FFmpeg dies with SIGFPE)")
            return np.fmod(ia, ib).astype(F32)
    raise _fail(layer, f"Unmatch math binary operator {op}")


@dataclass
class MathBinary(Layer):
    """Type 5: sub/add/mul/realdiv/minimum/floormod on tensors or a tensor and a scalar.

    ``lhs``/``rhs`` are an operand index, or a float when ``lhs_scalar``/``rhs_scalar``.
    """

    type_id: ClassVar[int] = 5
    op: int
    lhs_scalar: bool
    lhs: int | float
    rhs_scalar: bool
    rhs: int | float
    output: int

    def inputs(self) -> tuple[int, ...]:
        return tuple(int(v) for v, s in ((self.lhs, self.lhs_scalar), (self.rhs, self.rhs_scalar)) if not s)

    def output_dims(self, *dims: Dims) -> Dims:
        if not 0 <= self.op < len(BINARY_NAMES):
            raise _fail(self, f"Unmatch math binary operator {self.op}")
        if len(dims) == 2:
            a, b = dims
            if _known(*a, *b) and int(np.prod(b)) < int(np.prod(a)):
                raise _fail(self, f"second tensor {list(b)} has fewer elements than the first {list(a)}")
        return _check_size(self, dims[0])

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        self.output_dims(*(x.shape for x in xs))
        t = xs[0]
        if self.lhs_scalar:  # f(s, T) for every op
            return _binary(self.op, F32(self.lhs), t, self)
        if self.rhs_scalar:  # f(T, s) for the non-commutative ops, f(s, T) for the others
            s = F32(self.rhs)
            if self.op in (SUB, REALDIV, FLOORMOD):
                return _binary(self.op, t, s, self)
            return _binary(self.op, s, t, self)
        a, b = t, xs[1]
        if b.shape != a.shape:  # element by element over the flat buffer of each image
            b = b.reshape(b.shape[0], -1)[:, : a[0].size].reshape(a.shape)
        return _binary(self.op, a, b, self)


def _round_half_away(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.copysign(np.floor(np.abs(v) + 0.5), v)
    return out


_UNARY = (
    None,
    np.sin,
    np.cos,
    np.tan,
    np.arcsin,
    np.arccos,
    np.arctan,
    np.sinh,
    np.cosh,
    np.tanh,
    np.arcsinh,
    np.arccosh,
    np.arctanh,
    lambda v: np.ceil(v) + 0.0,  # FFmpeg's build (-fno-signed-zeros) never gives -0.0 here
    lambda v: np.floor(v) + 0.0,
    _round_half_away,  # C round(): halves away from zero, not numpy's half-to-even
    np.exp,
)


@dataclass
class MathUnary(Layer):
    """Type 6: one of 17 libm functions, evaluated in float64 and rounded to float32."""

    type_id: ClassVar[int] = 6
    op: int
    input: int
    output: int

    def output_dims(self, *dims: Dims) -> Dims:
        if not 0 <= self.op < len(UNARY_NAMES):
            raise _fail(self, f"Unmatch math unary operator {self.op}")
        return _check_size(self, dims[0])

    def forward(self, *xs: np.ndarray) -> np.ndarray:
        self.output_dims(xs[0].shape)
        if self.op == 0:
            absolute: np.ndarray = np.abs(xs[0])  # fabs: clears the sign bit, NaN included
            return absolute
        with np.errstate(all="ignore"):
            fn = _UNARY[self.op]
            assert fn is not None  # op 0 (fabs) returned above
            out = fn(xs[0].astype(np.float64)).astype(F32)
        if self.op in (4, 5):  # glibc's asin/acos give +NaN out of domain, numpy's give -NaN
            out[np.isnan(out) & ~np.isnan(xs[0])] = F32(np.nan)
        return out
