"""The native model file format: writer/reader round trip and malformed files."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest
from builders import MODELS, Chain, all_layers, identity

from avdnn.dnn.native import MathBinary, NativeFile, NativeModel, Operand, load, parse, serialize
from avdnn.dnn.native.format import HEADER_SIZE, IO_INPUT, IO_OUTPUT
from avdnn.errors import AVERROR_INVALIDDATA, InvalidDataError, NotFoundError

# FFmpeg's worked example (native_format.md s.6): y = 1 - x, 125 bytes.
ONE_MINUS_X = bytes.fromhex(
    "46464d504547444e4e4e415449564501000000170000000500000000000000010000000000803f00000000000000000100"
    "0000000000000100000078010000000100000001000000ffffffffffffffff03000000010000000100000079020000000100"
    "000001000000ffffffffffffffff030000000100000002000000"
)


def _arrays_equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.tobytes() == b.tobytes()
    if isinstance(a, float) or isinstance(b, float):  # scalars are stored as float32
        return np.float32(a).tobytes() == np.float32(b).tobytes()
    return a == b


def _same_layers(x: NativeFile, y: NativeFile) -> bool:
    if [type(v) for v in x.layers] != [type(v) for v in y.layers]:
        return False
    return all(
        _arrays_equal(getattr(a, f.name), getattr(b, f.name))
        for a, b in zip(x.layers, y.layers, strict=True)
        for f in dataclasses.fields(a)
    )


def test_worked_example_bytes() -> None:
    nf = parse(ONE_MINUS_X)
    assert len(ONE_MINUS_X) == 125
    assert (nf.major, nf.minor) == (1, 23)
    assert nf.layers == [MathBinary(0, True, 1.0, False, 0, 1)]
    assert [(o.name, o.io_type, o.dtype, o.dims) for o in nf.operands] == [
        ("x", 1, 1, (1, -1, -1, 3)),
        ("y", 2, 1, (1, -1, -1, 3)),
    ]
    assert serialize(nf) == ONE_MINUS_X
    x = np.random.default_rng(0).random((1, 4, 5, 3), dtype=np.float32)
    assert np.array_equal(NativeModel(nf).run({"x": x})["y"], np.float32(1) - x)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_every_builder_model(name: str, tmp_path) -> None:
    built = MODELS[name]()
    data = serialize(built.nf)
    path = built.save(tmp_path)
    assert path.read_bytes() == data
    back = load(path)
    assert serialize(back) == data
    assert _same_layers(back, built.nf)
    assert back.operands == built.nf.operands
    assert back.layer_offsets[0] == HEADER_SIZE


def test_operands_in_any_order_and_minor_version_ignored() -> None:
    nf = identity(3).nf
    nf = dataclasses.replace(nf, operands=nf.operands[::-1], minor=999)
    back = parse(serialize(nf))
    assert [o.index for o in back.operands] == [0, 1] and back.minor == 999


def test_long_names_keep_127_bytes() -> None:
    nf = identity(1).nf
    nf.operands[1] = dataclasses.replace(nf.operands[1], name="y" * 200)
    assert parse(serialize(nf)).operands[1].name == "y" * 127


def _bad(data: bytes, *needles: str) -> InvalidDataError:
    with pytest.raises(InvalidDataError) as info:
        parse(data, "bad.model")
    err = info.value
    assert err.code == AVERROR_INVALIDDATA and err.file == "bad.model"
    text = str(err)
    assert "byte " in text
    for needle in needles:
        assert needle in text, text
    return err


def _i32(v: int) -> bytes:
    return struct.pack("<i", v)


def test_bad_magic_and_version() -> None:
    _bad(b"FFMPEGDNNNATIVF" + ONE_MINUS_X[15:], "byte 0", "magic")
    _bad(ONE_MINUS_X[:15] + _i32(2) + ONE_MINUS_X[19:], "byte 15", "major version 1, got 2")


@pytest.mark.parametrize("cut", [1, 4, 30, 60, 100, 124])
def test_truncated(cut: int) -> None:
    _bad(ONE_MINUS_X[:-cut])


def test_truncated_inside_a_conv_kernel_names_it() -> None:
    data = serialize(Chain(1).conv(4, 3).build("c").nf)
    footer = data[-8:]
    _bad(data[: HEADER_SIZE + 100] + footer, "truncated", "Conv2D kernel")


def test_trailing_byte() -> None:
    _bad(ONE_MINUS_X[:-8] + b"\0" + ONE_MINUS_X[-8:], "byte 117", "footer")


def test_counts() -> None:
    _bad(ONE_MINUS_X[:-8] + _i32(0) + _i32(2), "layers_num > 0")
    _bad(ONE_MINUS_X[:-8] + _i32(1) + _i32(-1), "operands_num > 0")
    # Two layers declared: operand 0's record is read as layer 1 (type = its index, 0).
    _bad(ONE_MINUS_X[:-8] + _i32(2) + _i32(2), "byte 51", "layer 1 has unknown type 0")


@pytest.mark.parametrize("ltype", [0, 9, -1, 1000])
def test_unknown_layer_type(ltype: int) -> None:
    data = ONE_MINUS_X[:23] + _i32(ltype) + ONE_MINUS_X[27:]
    err = _bad(data, "byte 23", f"unknown type {ltype}", "expected 1..8")
    assert ("DLT_INPUT" in str(err)) == (ltype == 0)


def _with_layer(layer: object, n_ops: int = 2) -> bytes:
    ops = [Operand(0, "x", IO_INPUT, 1, (1, -1, -1, 1))] + [Operand(i, f"t{i}", IO_OUTPUT) for i in range(1, n_ops)]
    return serialize(NativeFile([layer], ops))  # type: ignore[list-item]


def test_operand_index_out_of_range() -> None:
    _bad(_with_layer(MathBinary(0, True, 1.0, False, 0, 2)), "output operand index 2 is out of range", "0..1")
    _bad(_with_layer(MathBinary(0, True, 1.0, False, 5, 1)), "in1 operand index 5")
    _bad(_with_layer(MathBinary(0, True, 1.0, False, -1, 1)), "in1 operand index -1")
    nf = parse(ONE_MINUS_X)
    nf.operands[1] = dataclasses.replace(nf.operands[1], index=7)
    _bad(serialize(nf), "operand index 7 is out of range")


def test_duplicate_operand_index() -> None:
    nf = parse(ONE_MINUS_X)
    nf.operands[1] = dataclasses.replace(nf.operands[1], index=0)
    _bad(serialize(nf), "described twice")


def test_layer_field_checks() -> None:
    ch = Chain(1).conv(2, 3)
    conv = ch.layers[0]
    _bad(_with_layer(dataclasses.replace(conv, kernel=np.zeros((2, 0, 0, 1), np.float32))), "kernel_size > 0")
    _bad(_with_layer(dataclasses.replace(conv, dilation=-1)), "dilation >= 0")
    _bad(_with_layer(Chain(1).avgpool(2, 0, 1).layers[0]), "AvgPool strides > 0, got 0")
    _bad(_with_layer(Chain(1).avgpool(2, 1, 5).layers[0]), "AvgPool padding method 5 is unknown")
    _bad(_with_layer(Chain(1).unary(17).layers[0]), "MathUnary op 17 is unknown")
    _bad(_with_layer(MathBinary(6, True, 1.0, False, 0, 1)), "MathBinary op 6 is unknown")
    _bad(_with_layer(MathBinary(0, True, 5.0, True, 2.0, 1)), "at most one scalar")
    _bad(_with_layer(Chain(1).depth_to_space(1).layers[0].__class__(0, 0, 1)), "block_size > 0")
    _bad(_with_layer(Chain(1).pad(4, ((0, 0),) * 4).layers[0]), "MirrorPad mode 4 is unknown")
    _bad(_with_layer(Chain(1).pad(1, ((0, 0), (-1, 0), (0, 0), (0, 0))).layers[0]), "H padding before >= 0")


def test_operand_record_checks() -> None:
    nf = parse(ONE_MINUS_X)
    nf.operands[0] = dataclasses.replace(nf.operands[0], dims=(2, -1, -1, 3))
    _bad(serialize(nf), "dims[0] == 1, got 2")
    nf = parse(ONE_MINUS_X)
    nf.operands[1] = dataclasses.replace(nf.operands[1], name="y\0z")
    _bad(serialize(nf), "NUL")


def test_layer_reading_an_unwritten_operand() -> None:
    ops = [Operand(0, "x", IO_INPUT, 1, (1, -1, -1, 1)), Operand(1, "t", 3), Operand(2, "y", IO_OUTPUT)]
    nf = NativeFile([MathBinary(1, False, 0, False, 1, 2)], ops)
    _bad(serialize(nf), "byte 23", "reads operand 1 't'", "no earlier layer writes")


def test_missing_file(tmp_path) -> None:
    with pytest.raises(NotFoundError) as info:
        load(tmp_path / "nope.model")
    assert info.value.file.endswith("nope.model")


def test_load_error_names_the_file(tmp_path) -> None:
    path = tmp_path / "cut.model"
    path.write_bytes(serialize(all_layers(3).nf)[:-3])
    with pytest.raises(InvalidDataError) as info:
        NativeModel.load(path)
    assert str(path) in str(info.value)
