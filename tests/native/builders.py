"""Small native-format models for the tests, generated in code (nothing binary is committed).

:class:`Chain` appends layers one after another, starting from an input operand ``x`` with a
given channel count; :meth:`Chain.build` names the last operand ``y`` (an output). Weights come
from a seeded generator so every run writes the same bytes. :data:`MODELS` lists the models the
FFmpeg oracle runs, by name.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from avdnn.dnn.native import (
    AvgPool,
    Conv2D,
    Dense,
    DepthToSpace,
    MathBinary,
    MathUnary,
    Maximum,
    MirrorPad,
    NativeFile,
    Operand,
    save,
)
from avdnn.dnn.native.format import IO_INPUT, IO_INTERMEDIATE, IO_OUTPUT
from avdnn.dnn.native.layerbase import (
    ADD,
    FLOORMOD,
    LEAKY_RELU,
    MINIMUM,
    MUL,
    NONE,
    REALDIV,
    REFLECT,
    RELU,
    SAME,
    SAME_CLAMP_TO_EDGE,
    SIGMOID,
    SUB,
    SYMMETRIC,
    TANH,
    UNARY_NAMES,
    VALID,
)

ACTS = {"relu": RELU, "tanh": TANH, "sigmoid": SIGMOID, "none": NONE, "leaky_relu": LEAKY_RELU}
PADS = {"valid": VALID, "same": SAME, "clamp": SAME_CLAMP_TO_EDGE}


@dataclass
class Built:
    """A model plus what the oracle needs to know about it."""

    name: str
    nf: NativeFile
    cin: int
    cout: int

    def save(self, folder: str | os.PathLike[str]) -> Path:
        path = Path(folder) / f"{self.name}.model"
        save(self.nf, path)
        return path


class Chain:
    """Build a model layer by layer; each method feeds the previous layer's output forward."""

    def __init__(self, channels: int, seed: int = 0) -> None:
        self.operands = [Operand(0, "x", IO_INPUT, 1, (1, -1, -1, channels))]
        self.layers: list = []
        self.cur = 0
        self.channels = channels
        self.rng = np.random.default_rng(seed)

    def _out(self) -> int:
        idx = len(self.operands)
        self.operands.append(Operand(idx, f"t{idx}", IO_INTERMEDIATE))
        return idx

    def _push(self, make: Callable[[int, int], object], channels: int | None = None) -> Chain:
        out = self._out()
        self.layers.append(make(self.cur, out))
        self.cur = out
        if channels is not None:
            self.channels = channels
        return self

    def weights(self, *shape: int, scale: float = 0.5) -> np.ndarray:
        return (self.rng.uniform(-scale, scale, shape)).astype(np.float32)

    def conv(
        self,
        cout: int,
        k: int = 3,
        *,
        act: int = NONE,
        padding: int = SAME,
        dilation: int = 1,
        bias: bool = True,
        kernel: np.ndarray | None = None,
        scale: float = 0.5,
    ) -> Chain:
        w = self.weights(cout, k, k, self.channels, scale=scale) if kernel is None else kernel
        b = self.weights(cout, scale=0.2) if bias else None
        return self._push(lambda i, o: Conv2D(dilation, padding, act, w, b, i, o), cout)

    def dense(self, cout: int, *, act: int = NONE, bias: bool = True, scale: float = 0.5) -> Chain:
        w = self.weights(cout, self.channels, scale=scale)
        b = self.weights(cout, scale=0.2) if bias else None
        return self._push(lambda i, o: Dense(act, w, b, i, o), cout)

    def depth_to_space(self, block: int) -> Chain:
        return self._push(lambda i, o: DepthToSpace(block, i, o), self.channels // (block * block))

    def pad(self, mode: int, paddings: tuple[tuple[int, int], ...]) -> Chain:
        return self._push(lambda i, o: MirrorPad(mode, paddings, i, o), self.channels + sum(paddings[3]))

    def maximum(self, y: float) -> Chain:
        return self._push(lambda i, o: Maximum(y, i, o))

    def avgpool(self, k: int, strides: int, padding: int) -> Chain:
        return self._push(lambda i, o: AvgPool(strides, padding, k, i, o))

    def unary(self, op: int | str) -> Chain:
        code = UNARY_NAMES.index(op) if isinstance(op, str) else op
        return self._push(lambda i, o: MathUnary(code, i, o))

    def scalar_first(self, op: int, s: float) -> Chain:
        return self._push(lambda i, o: MathBinary(op, True, s, False, i, o))

    def scalar_second(self, op: int, s: float) -> Chain:
        return self._push(lambda i, o: MathBinary(op, False, i, True, s, o))

    def tensors(self, op: int, other: int) -> Chain:
        """op(current, operand ``other``): ``other`` is an earlier operand index (0 = the input)."""
        return self._push(lambda i, o: MathBinary(op, False, i, False, other, o))

    def build(self, name: str) -> Built:
        ops = list(self.operands)
        last = ops[self.cur]
        ops[self.cur] = Operand(last.index, "y", IO_OUTPUT, 1, (1, -1, -1, self.channels))
        return Built(name, NativeFile(list(self.layers), ops), self.operands[0].dims[3], self.channels)


def identity(c: int) -> Built:
    return Chain(c).conv(c, 1, kernel=np.eye(c, dtype=np.float32).reshape(c, 1, 1, c), bias=False).build(f"identity{c}")


def conv_probe(c: int, act: str, pad: str, k: int = 3, dilation: int = 1, seed: int = 1) -> Built:
    """A k x k conv c -> 4 with the given activation and padding, then a 1x1 conv 4 -> c."""
    ch = Chain(c, seed).conv(
        4,
        k,
        act=ACTS[act] if act in ACTS else int(act),
        padding=PADS[pad] if pad in PADS else int(pad),
        dilation=dilation,
    )
    return ch.conv(c, 1, scale=0.6).build(f"conv{c}_{act}_{pad}_k{k}_d{dilation}")


def espcn(scale: int, c: int = 1) -> Built:
    """ESPCN's shape (5x5 tanh, 3x3 tanh, 3x3 sigmoid, depth-to-space), narrowed."""
    ch = Chain(c, 7).conv(8, 5, act=TANH).conv(4, 3, act=TANH, padding=SAME_CLAMP_TO_EDGE)
    return ch.conv(c * scale * scale, 3, act=SIGMOID).depth_to_space(scale).build(f"espcn{scale}_c{c}")


def all_layers(c: int) -> Built:
    """One same-size model that uses every layer type (a derain-like shape)."""
    x = 0
    ch = Chain(c, 3).pad(REFLECT, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ch.conv(8, 3, act=RELU, padding=VALID).pad(SYMMETRIC, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ch.conv(8, 3, act=LEAKY_RELU, padding=VALID, dilation=1).maximum(0.05).avgpool(3, 1, SAME)
    ch.dense(4 * c, act=TANH).depth_to_space(2).avgpool(2, 2, VALID)
    ch.scalar_second(MUL, 0.5).unary("abs").tensors(ADD, x).scalar_first(SUB, 1.0)
    ch.unary("cos").scalar_second(MINIMUM, 0.9)
    return ch.build(f"all_layers{c}")


def scaled(seed: int = 0, lo: float = -2.0, hi: float = 2.0) -> Chain:
    """grayf32 chain whose current tensor is x mapped from [0, 1] to [lo, hi]."""
    return Chain(1, seed).scalar_second(MUL, hi - lo).scalar_second(ADD, lo)


def unary(name: str, lo: float = -2.0, hi: float = 2.0) -> Built:
    wide = "" if (lo, hi) == (-2.0, 2.0) else "_wide"
    return scaled(lo=lo, hi=hi).unary(name).build(f"unary_{name}{wide}")


def rgb_extremes(op: str) -> Built:
    """rgb24 output far outside [0, 1], inf and NaN: exercises the float -> byte conversion."""
    ch = Chain(3).scalar_second(MUL, 60.0).scalar_second(SUB, 30.0).unary(op)
    return ch.build(f"rgb_extremes_{op}")


def binary(op: int, form: str, s: float = 0.75) -> Built:
    """``form`` is 'sf' (scalar first), 'ss' (scalar second) or 'tt' (two tensors)."""
    ch = scaled(lo=-10.0, hi=10.0) if op == FLOORMOD else scaled()
    if form == "sf":
        ch.scalar_first(op, 3.5 if op == FLOORMOD else s)
    elif form == "ss":
        ch.scalar_second(op, -3.5 if op == FLOORMOD else s)
    else:
        ch.tensors(op, 0)
    return ch.build(f"binary{op}_{form}")


def _models() -> dict[str, Callable[[], Built]]:
    m: dict[str, Callable[[], Built]] = {}

    def add(f: Callable[[], Built]) -> None:
        m[f().name] = f

    for c in (1, 3):
        add(lambda c=c: identity(c))
        add(lambda c=c: all_layers(c))
    for act in ACTS:
        for pad in PADS:
            add(lambda a=act, p=pad: conv_probe(1, a, p))
    add(lambda: conv_probe(3, "relu", "clamp"))
    add(lambda: conv_probe(3, "tanh", "valid"))
    for k, d, pad in (
        (3, 2, "same"),
        (3, 2, "valid"),
        (5, 2, "clamp"),
        (2, 1, "same"),
        (2, 1, "valid"),
        (4, 1, "valid"),
        (4, 2, "same"),
        (1, 1, "valid"),
    ):
        add(lambda k=k, d=d, p=pad: conv_probe(1, "sigmoid", p, k, d))
    add(lambda: conv_probe(1, "9", "7"))  # unknown activation = none, unknown padding = SAME
    add(lambda: Chain(1, 2).conv(3, 3, bias=False).conv(1, 3, act=TANH, bias=False).build("conv_nobias"))
    for s in (2, 3):
        add(lambda s=s: espcn(s))
    add(lambda: Chain(1, 4).conv(9, 1).depth_to_space(3).build("depth_to_space3"))
    for mode, name in ((0, "constant"), (REFLECT, "reflect"), (SYMMETRIC, "symmetric")):
        add(lambda mo=mode, n=name: Chain(1).pad(mo, ((0, 0), (2, 1), (1, 3), (0, 0))).build(f"pad_{n}"))
    add(lambda: Chain(1, 5).conv(3, 1).pad(SYMMETRIC, ((0, 0), (0, 0), (0, 0), (2, 2))).dense(1).build("pad_c"))
    add(lambda: scaled().maximum(0.3).build("maximum"))
    for k, s, pad in ((3, 1, SAME), (3, 2, SAME), (2, 1, VALID), (4, 3, SAME), (3, 2, VALID), (2, 2, SAME)):
        add(lambda k=k, s=s, p=pad: Chain(1).avgpool(k, s, p).build(f"avgpool_k{k}_s{s}_p{p}"))
    for act in ACTS:
        add(lambda a=act: Chain(1, 6).conv(3, 1).dense(5, act=ACTS[a], scale=2.0).dense(1).build(f"dense_{a}"))
    for name in UNARY_NAMES:
        add(lambda n=name: unary(n))
    for name in ("sin", "cos", "tan", "atan", "sinh", "cosh", "exp", "asinh", "acosh", "round"):
        add(lambda n=name: unary(n, -100.0, 100.0))
    for name in ("sinh", "acosh", "exp", "tan"):
        add(lambda n=name: rgb_extremes(n))
    for op in (SUB, ADD, MUL, REALDIV, MINIMUM, FLOORMOD):
        for form in ("sf", "ss", "tt"):
            if op == FLOORMOD and form != "ss":
                continue  # a tensor divisor crashes FFmpeg 5.1's dry run (SIGFPE)
            add(lambda o=op, f=form: binary(o, f))
    return m


#: Every oracle model by name.
MODELS = _models()
