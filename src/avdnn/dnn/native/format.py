"""Reader and writer of FFmpeg's native DNN model file (``.model``), as FFmpeg 5.1 reads it.

Layout (all little-endian int32/float32, no padding)::

    0        "FFMPEGDNNNATIVE" (15 bytes)
    15       major version (must be 1)      19  minor version (ignored; the converter writes 23)
    23       layer records, back to back:   int32 type, then the type's body, operand indexes last
    ...      operand records:               index, name_len, name, io type, data type, dims[4]
    size-8   layers_num                     size-4  operands_num

The reader accepts exactly what FFmpeg's loader accepts, minus the files on which FFmpeg
crashes, reads uninitialised memory or fails later at its dry run; every rejection is an
:class:`~avdnn.errors.InvalidDataError` that names the byte offset and what was expected there.
Checks that depend on tensor sizes (channel counts, pad widths) happen when the model runs.
The writer emits the same bytes FFmpeg's ``convert_from_tensorflow.py`` would.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

from avdnn.dnn.native.layerbase import Dims
from avdnn.dnn.native.layers import (
    BINARY_NAMES,
    UNARY_NAMES,
    AvgPool,
    Conv2D,
    Dense,
    DepthToSpace,
    Layer,
    MathBinary,
    MathUnary,
    Maximum,
    MirrorPad,
)
from avdnn.errors import InvalidDataError, NotFoundError

MAGIC = b"FFMPEGDNNNATIVE"
MAJOR_VERSION = 1
MINOR_VERSION = 23
HEADER_SIZE = len(MAGIC) + 8
FOOTER_SIZE = 8
#: FFmpeg keeps at most this many bytes of an operand name.
NAME_MAX = 127

IO_INPUT, IO_OUTPUT, IO_INTERMEDIATE = 1, 2, 3
DT_FLOAT, DT_UINT8 = 1, 4


@dataclass
class Operand:
    """One operand record. ``dims`` is N, H, W, C with -1 for unknown."""

    index: int
    name: str
    io_type: int = IO_INTERMEDIATE
    dtype: int = DT_FLOAT
    dims: Dims = (-1, -1, -1, -1)


@dataclass
class NativeFile:
    """A parsed model file: layers in execution order, operands by slot index."""

    layers: list[Layer]
    operands: list[Operand]
    major: int = MAJOR_VERSION
    minor: int = MINOR_VERSION
    #: Byte offset of each layer record (filled by the reader; used in error messages).
    layer_offsets: list[int] = field(default_factory=list)


class _Cursor:
    """Sequential little-endian reads that never cross ``end`` (the footer)."""

    def __init__(self, data: bytes, source: str, end: int) -> None:
        self.data, self.source, self.end, self.pos = data, source, end, HEADER_SIZE

    def error(self, offset: int, msg: str) -> InvalidDataError:
        return InvalidDataError(f"native model: byte {offset}: {msg}", file=self.source)

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise self.error(
                self.pos,
                f"truncated: expected {what} ({n} bytes), but only "
                f"{max(self.end - self.pos, 0)} bytes remain before the footer at "
                f"byte {self.end}",
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i32(self, what: str) -> int:
        value: int = struct.unpack("<i", self.take(4, what))[0]
        return value

    def f32(self, what: str) -> float:
        return float(np.frombuffer(self.take(4, what), "<f4")[0])

    def floats(self, count: int, what: str) -> np.ndarray:
        return np.frombuffer(self.take(4 * count, what), "<f4").astype(np.float32)

    def index(self, n_operands: int, what: str) -> int:
        at = self.pos
        v = self.i32(what)
        if not 0 <= v < n_operands:
            raise self.error(at, f"{what} {v} is out of range: expected 0..{n_operands - 1}")
        return v

    def positive(self, what: str) -> int:
        at = self.pos
        v = self.i32(what)
        if v <= 0:
            raise self.error(at, f"expected {what} > 0, got {v}")
        return v

    def choice(self, what: str, names: tuple[str, ...]) -> int:
        at = self.pos
        v = self.i32(what)
        if not 0 <= v < len(names):
            raise self.error(at, f"{what} {v} is unknown: expected 0..{len(names) - 1} ({', '.join(names)})")
        return v


def _read_conv2d(cur: _Cursor, nops: int) -> Conv2D:
    at = cur.pos
    dilation = cur.i32("Conv2D dilation")
    if dilation < 0:
        raise cur.error(at, f"expected Conv2D dilation >= 0, got {dilation}")
    padding = cur.i32("Conv2D padding method")  # unknown codes behave like SAME in FFmpeg
    activation = cur.i32("Conv2D activation")  # unknown codes mean no activation in FFmpeg
    cin = cur.positive("Conv2D input_num")
    cout = cur.positive("Conv2D output_num")
    k = cur.positive("Conv2D kernel_size")
    has_bias = cur.i32("Conv2D has_bias")
    kernel = cur.floats(cout * k * k * cin, f"Conv2D kernel [{cout}][{k}][{k}][{cin}]").reshape(cout, k, k, cin)
    bias = cur.floats(cout, f"Conv2D bias [{cout}]") if has_bias else None
    return Conv2D(
        dilation,
        padding,
        activation,
        kernel,
        bias,
        cur.index(nops, "Conv2D input operand index"),
        cur.index(nops, "Conv2D output operand index"),
    )


def _read_dense(cur: _Cursor, nops: int) -> Dense:
    activation = cur.i32("Dense activation")
    cin = cur.positive("Dense input_num")
    cout = cur.positive("Dense output_num")
    has_bias = cur.i32("Dense has_bias")
    kernel = cur.floats(cout * cin, f"Dense kernel [{cout}][{cin}]").reshape(cout, cin)
    bias = cur.floats(cout, f"Dense bias [{cout}]") if has_bias else None
    return Dense(
        activation,
        kernel,
        bias,
        cur.index(nops, "Dense input operand index"),
        cur.index(nops, "Dense output operand index"),
    )


def _read_depth2space(cur: _Cursor, nops: int) -> DepthToSpace:
    return DepthToSpace(
        cur.positive("DepthToSpace block_size"),
        cur.index(nops, "DepthToSpace input operand index"),
        cur.index(nops, "DepthToSpace output operand index"),
    )


def _read_mirrorpad(cur: _Cursor, nops: int) -> MirrorPad:
    mode = cur.choice("MirrorPad mode", ("CONSTANT", "REFLECT", "SYMMETRIC"))
    pads = []
    for axis in "NHWC":
        pair = []
        for side in ("before", "after"):
            at = cur.pos
            v = cur.i32(f"MirrorPad {axis} padding {side}")
            if v < 0:
                raise cur.error(at, f"expected MirrorPad {axis} padding {side} >= 0, got {v}")
            pair.append(v)
        pads.append((pair[0], pair[1]))
    return MirrorPad(
        mode,
        tuple(pads),
        cur.index(nops, "MirrorPad input operand index"),
        cur.index(nops, "MirrorPad output operand index"),
    )


def _read_maximum(cur: _Cursor, nops: int) -> Maximum:
    return Maximum(
        cur.f32("Maximum y"),
        cur.index(nops, "Maximum input operand index"),
        cur.index(nops, "Maximum output operand index"),
    )


def _read_mathbinary(cur: _Cursor, nops: int) -> MathBinary:
    op = cur.choice("MathBinary op", BINARY_NAMES)
    sides: list[tuple[bool, int | float]] = []
    for i in (0, 1):
        scalar = cur.i32(f"MathBinary in{i}_is_scalar") != 0
        at = cur.pos
        value = cur.f32(f"MathBinary in{i} scalar") if scalar else cur.index(nops, f"MathBinary in{i} operand index")
        if i == 1 and scalar and sides[0][0]:
            raise cur.error(
                at,
                "expected at most one scalar MathBinary operand, got two "
                "(FFmpeg keeps only the second and reads operand 0)",
            )
        sides.append((scalar, value))
    return MathBinary(
        op, sides[0][0], sides[0][1], sides[1][0], sides[1][1], cur.index(nops, "MathBinary output operand index")
    )


def _read_mathunary(cur: _Cursor, nops: int) -> MathUnary:
    return MathUnary(
        cur.choice("MathUnary op", UNARY_NAMES),
        cur.index(nops, "MathUnary input operand index"),
        cur.index(nops, "MathUnary output operand index"),
    )


def _read_avgpool(cur: _Cursor, nops: int) -> AvgPool:
    strides = cur.positive("AvgPool strides")
    padding = cur.choice("AvgPool padding method", ("VALID", "SAME"))
    k = cur.positive("AvgPool kernel_size")
    return AvgPool(
        strides,
        padding,
        k,
        cur.index(nops, "AvgPool input operand index"),
        cur.index(nops, "AvgPool output operand index"),
    )


_READERS = {
    1: _read_conv2d,
    2: _read_depth2space,
    3: _read_mirrorpad,
    4: _read_maximum,
    5: _read_mathbinary,
    6: _read_mathunary,
    7: _read_avgpool,
    8: _read_dense,
}


def _read_operand(cur: _Cursor, nops: int) -> Operand:
    index = cur.index(nops, "operand index")
    at = cur.pos
    name_len = cur.i32("operand name_len")
    if name_len < 0:
        raise cur.error(at, f"expected operand name_len >= 0, got {name_len}")
    raw = cur.take(name_len, f"operand name ({name_len} bytes)")
    if b"\0" in raw:
        raise cur.error(at + 4 + raw.index(b"\0"), "operand name contains a NUL byte (FFmpeg's parser loses sync)")
    name = raw[:NAME_MAX].decode("utf-8", "surrogateescape")  # FFmpeg keeps 127 bytes
    io_type = cur.i32("operand io type")
    dtype = cur.i32("operand data type")
    at = cur.pos
    dims = tuple(cur.i32(f"operand dims[{i}]") for i in range(4))
    if io_type == IO_INPUT and dims[0] != 1:
        raise cur.error(at, f"input operand '{name}' must have dims[0] == 1, got {dims[0]}")
    return Operand(index, name, io_type, dtype, dims)  # type: ignore[arg-type]


def parse(data: bytes, source: str = "<bytes>") -> NativeFile:
    """Parse a whole model file held in memory; ``source`` names it in errors."""
    size = len(data)

    def error(offset: int, msg: str) -> InvalidDataError:
        return InvalidDataError(f"native model: byte {offset}: {msg}", file=source)

    if size < HEADER_SIZE + FOOTER_SIZE:
        raise error(
            size,
            f"truncated: expected at least {HEADER_SIZE + FOOTER_SIZE} bytes (header and footer), the file has {size}",
        )
    if data[: len(MAGIC)] != MAGIC:
        raise error(0, f"expected the magic {MAGIC.decode()!r}, got {data[: len(MAGIC)]!r}")
    major, minor = struct.unpack_from("<ii", data, len(MAGIC))
    if major != MAJOR_VERSION:
        raise error(len(MAGIC), f"expected major version {MAJOR_VERSION}, got {major}")
    n_layers, n_ops = struct.unpack_from("<ii", data, size - FOOTER_SIZE)
    if n_layers <= 0:
        raise error(size - 8, f"expected layers_num > 0, got {n_layers}")
    if n_ops <= 0:
        raise error(size - 4, f"expected operands_num > 0, got {n_ops}")
    cur = _Cursor(data, source, size - FOOTER_SIZE)
    layers: list[Layer] = []
    offsets: list[int] = []
    for i in range(n_layers):
        offsets.append(cur.pos)
        ltype = cur.i32(f"layer {i} type")
        if ltype not in _READERS:
            hint = " (0 is DLT_INPUT, which has no loader; FFmpeg crashes on it)" if ltype == 0 else ""
            raise cur.error(offsets[-1], f"layer {i} has unknown type {ltype}: expected 1..8{hint}")
        layers.append(_READERS[ltype](cur, n_ops))
    slots: list[Operand | None] = [None] * n_ops
    for _ in range(n_ops):
        at = cur.pos
        op = _read_operand(cur, n_ops)
        if slots[op.index] is not None:
            raise cur.error(at, f"operand index {op.index} is described twice (expected each of 0..{n_ops - 1} once)")
        slots[op.index] = op
    if cur.pos != cur.end:
        raise cur.error(
            cur.pos,
            f"expected the footer (layers_num, operands_num) here, but {cur.end - cur.pos} "
            f"more bytes precede it: the counts do not match the records",
        )
    operands = [op for op in slots if op is not None]  # all slots are filled: n_ops records, no repeats
    nf = NativeFile(layers, operands, major, minor, offsets)
    _check_dataflow(nf, cur)
    return nf


def _check_dataflow(nf: NativeFile, cur: _Cursor) -> None:
    """Every layer must read an input operand or one an earlier layer wrote (FFmpeg reads NULL)."""
    written = {op.index for op in nf.operands if op.io_type == IO_INPUT}
    for i, layer in enumerate(nf.layers):
        for idx in layer.inputs():
            if idx not in written:
                raise cur.error(
                    nf.layer_offsets[i],
                    f"layer {i} ({type(layer).__name__}) reads operand {idx} "
                    f"'{nf.operands[idx].name}', which is not a model input "
                    f"(io type 1) and no earlier layer writes",
                )
        written.add(layer.output)  # type: ignore[attr-defined]


def load(path: str | os.PathLike[str]) -> NativeFile:
    """Read and parse a ``.model`` file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError as exc:
        raise NotFoundError(f"native model not found: {exc.strerror}", file=os.fspath(path)) from exc
    return parse(data, os.fspath(path))


def _i32(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def _floats(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, "<f4").tobytes()


def _layer_bytes(layer: Layer) -> bytes:
    if isinstance(layer, Conv2D):
        cout, k, _, cin = layer.kernel.shape
        body = _i32(layer.dilation, layer.padding, layer.activation, cin, cout, k, layer.bias is not None)
        body += _floats(layer.kernel) + (b"" if layer.bias is None else _floats(layer.bias))
        body += _i32(layer.input, layer.output)
    elif isinstance(layer, Dense):
        cout, cin = layer.kernel.shape
        body = _i32(layer.activation, cin, cout, layer.bias is not None) + _floats(layer.kernel)
        body += (b"" if layer.bias is None else _floats(layer.bias)) + _i32(layer.input, layer.output)
    elif isinstance(layer, DepthToSpace):
        body = _i32(layer.block_size, layer.input, layer.output)
    elif isinstance(layer, MirrorPad):
        body = _i32(layer.mode, *(v for pair in layer.paddings for v in pair), layer.input, layer.output)
    elif isinstance(layer, Maximum):
        body = struct.pack("<f", layer.y) + _i32(layer.input, layer.output)
    elif isinstance(layer, MathBinary):
        body = _i32(layer.op)
        for scalar, v in ((layer.lhs_scalar, layer.lhs), (layer.rhs_scalar, layer.rhs)):
            body += _i32(int(scalar)) + (struct.pack("<f", v) if scalar else _i32(int(v)))
        body += _i32(layer.output)
    elif isinstance(layer, MathUnary):
        body = _i32(layer.op, layer.input, layer.output)
    elif isinstance(layer, AvgPool):
        body = _i32(layer.strides, layer.padding, layer.kernel_size, layer.input, layer.output)
    else:
        raise TypeError(f"not a native layer: {layer!r}")
    return _i32(layer.type_id) + body


def _operand_bytes(op: Operand) -> bytes:
    name = op.name.encode("utf-8", "surrogateescape")
    return _i32(op.index, len(name)) + name + _i32(op.io_type, op.dtype, *op.dims)


def serialize(nf: NativeFile) -> bytes:
    """The file bytes for ``nf``. Values are written as given, so tests can build bad files too."""
    parts = [MAGIC, _i32(nf.major, nf.minor)]
    parts += [_layer_bytes(layer) for layer in nf.layers]
    parts += [_operand_bytes(op) for op in nf.operands]
    parts.append(_i32(len(nf.layers), len(nf.operands)))
    return b"".join(parts)


def save(nf: NativeFile, path: str | os.PathLike[str]) -> None:
    """Write ``nf`` to ``path``."""
    with open(path, "wb") as f:
        f.write(serialize(nf))


__all__ = [
    "DT_FLOAT",
    "DT_UINT8",
    "IO_INPUT",
    "IO_INTERMEDIATE",
    "IO_OUTPUT",
    "MAGIC",
    "NativeFile",
    "Operand",
    "load",
    "parse",
    "save",
    "serialize",
]
