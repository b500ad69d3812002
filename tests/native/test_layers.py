"""Layer maths against the reference vectors (native_format.md s.5) and NativeModel behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from builders import MODELS, Chain, all_layers, espcn, identity

from avdnn.dnn.native import (
    AvgPool,
    Conv2D,
    Dense,
    DepthToSpace,
    MathBinary,
    MathUnary,
    Maximum,
    MirrorPad,
    NativeModel,
)
from avdnn.dnn.native.layerbase import UNARY_NAMES
from avdnn.errors import InvalidArgumentError, InvalidDataError, NotSupportedError

F = np.float32
X = np.arange(1, 10, dtype=F).reshape(1, 3, 3, 1)
A = np.arange(25, dtype=F).reshape(1, 5, 5, 1)
ONES3 = np.ones((1, 3, 3, 1), F)


def img(a: np.ndarray) -> np.ndarray:
    return a[0, ..., 0]


@pytest.mark.parametrize(
    ("padding", "want"),
    [
        (0, [[45]]),
        (1, [[12, 21, 16], [27, 45, 33], [24, 39, 28]]),
        (2, [[21, 27, 33], [39, 45, 51], [57, 63, 69]]),
        (7, [[12, 21, 16], [27, 45, 33], [24, 39, 28]]),  # unknown padding codes behave like SAME
    ],
)
def test_conv_padding_modes(padding: int, want: list) -> None:
    assert np.array_equal(img(Conv2D(1, padding, 3, ONES3, None, 0, 1).forward(X)), want)


@pytest.mark.parametrize("padding", [0, 1])
def test_conv_even_kernel_taps_at_minus_one_and_zero(padding: int) -> None:
    k = np.array([1, 10, 100, 1000], F).reshape(1, 2, 2, 1)
    want = [[1000, 2100, 3200], [4010, 5421, 6532], [7040, 8754, 9865]]
    assert np.array_equal(img(Conv2D(1, padding, 3, k, None, 0, 1).forward(X)), want)


def test_conv_dilation_and_relu_bias() -> None:
    want = [
        [24, 28, 42, 28, 32],
        [44, 48, 72, 48, 52],
        [66, 72, 108, 72, 78],
        [44, 48, 72, 48, 52],
        [64, 68, 102, 68, 72],
    ]
    assert np.array_equal(img(Conv2D(2, 1, 3, ONES3, None, 0, 1).forward(A)), want)
    got = Conv2D(1, 0, 0, ONES3, np.array([-40], F), 0, 1).forward(A)
    assert np.array_equal(img(got), [[14, 23, 32], [59, 68, 77], [104, 113, 122]])


def test_conv_activations_are_ffmpegs() -> None:
    v = np.array([-3.0, -0.5, 0.0, 0.25, 2.0, np.nan], F).reshape(1, 1, 6, 1)
    one = np.ones((1, 1, 1, 1), F)
    relu, tanh, sig, none, leaky, nine = (
        Conv2D(1, 1, a, one, None, 0, 1).forward(v).ravel() for a in (0, 1, 2, 3, 4, 9)
    )
    assert np.array_equal(relu[:5], [0, 0, 0, 0.25, 2]) and relu[5] == 0  # NaN -> 0
    t = (2.0 / (1.0 + np.exp(-2.0 * v.astype(np.float64))) - 1.0).astype(F)
    assert np.array_equal(tanh, t.ravel(), equal_nan=True)
    assert np.array_equal(sig[:5], (1 / (1 + np.exp(-v.astype(np.float64)))).astype(F).ravel()[:5])
    assert np.array_equal(leaky[:5], np.array([-0.6, -0.1, 0, 0.25, 2.0]).astype(F))  # slope fixed at 0.2
    assert np.array_equal(none, nine, equal_nan=True) and np.array_equal(none, v.ravel(), equal_nan=True)


def test_conv_accumulates_in_ffmpegs_order() -> None:
    # 1e8 + 1 - 1e8 in float32 depends on the order: channel-major, then ky, then kx.
    x = np.array([1e8, 1.0, -1e8], F).reshape(1, 1, 1, 3)
    k = np.ones((1, 1, 1, 3), F)
    assert img(Conv2D(1, 1, 3, k, None, 0, 1).forward(x)).item() == 0.0
    assert img(Dense(3, k.reshape(1, 3), None, 0, 1).forward(x)).item() == 0.0


@pytest.mark.parametrize(
    ("k", "s", "p", "want"),
    [
        (3, 2, 1, [[3, 4.5, 6], [10.5, 12, 13.5], [18, 19.5, 21]]),
        (3, 2, 0, [[6, 8], [16, 18]]),
        (2, 2, 1, [[3, 5, 6.5], [13, 15, 16.5], [20.5, 22.5, 24]]),
        (4, 3, 1, [[6, 8], [16, 18]]),
    ],
)
def test_avgpool(k: int, s: int, p: int, want: list) -> None:
    assert np.array_equal(img(AvgPool(s, p, k, 0, 1).forward(A)), want)


def test_depth_to_space_and_dense_chain() -> None:
    conv = Conv2D(1, 1, 3, np.array([1, 2, 3, 4], F).reshape(4, 1, 1, 1), np.array([0, 0.1, 0.2, 0.3], F), 0, 1)
    x = np.array([1, 2], F).reshape(1, 1, 2, 1)
    got = img(DepthToSpace(2, 0, 1).forward(conv.forward(x)))
    assert np.array_equal(got, np.array([[1, 2.1, 2, 4.1], [3.2, 4.3, 6.2, 8.3]], F))
    c3 = Conv2D(1, 1, 3, np.array([1, 2, 3], F).reshape(3, 1, 1, 1), None, 0, 1)
    dense = Dense(3, np.array([[1, 10, 100]], F), np.array([0.5], F), 0, 1)
    assert np.array_equal(img(dense.forward(c3.forward(x))), [[321.5, 642.5]])


def test_mirror_pad() -> None:
    pads = ((0, 0), (1, 1), (2, 2), (0, 0))
    assert np.array_equal(
        img(MirrorPad(1, pads, 0, 1).forward(X)),
        [
            [6, 5, 4, 5, 6, 5, 4],
            [3, 2, 1, 2, 3, 2, 1],
            [6, 5, 4, 5, 6, 5, 4],
            [9, 8, 7, 8, 9, 8, 7],
            [6, 5, 4, 5, 6, 5, 4],
        ],
    )
    assert np.array_equal(
        img(MirrorPad(2, pads, 0, 1).forward(X)),
        [
            [2, 1, 1, 2, 3, 3, 2],
            [2, 1, 1, 2, 3, 3, 2],
            [5, 4, 4, 5, 6, 6, 5],
            [8, 7, 7, 8, 9, 9, 8],
            [8, 7, 7, 8, 9, 9, 8],
        ],
    )
    src = np.arange(48, dtype=F).reshape(1, 4, 4, 3)
    out = MirrorPad(2, ((0, 0), (2, 3), (3, 2), (0, 0)), 0, 1).forward(src)
    hmap, wmap = [1, 0, 0, 1, 2, 3, 3, 2, 1], [2, 1, 0, 0, 1, 2, 3, 3, 2]
    assert np.array_equal(out[0], src[0][hmap][:, wmap])
    with pytest.raises(InvalidArgumentError, match="larger than reflect mode allows"):
        MirrorPad(1, ((0, 0), (3, 0), (0, 0), (0, 0)), 0, 1).forward(X)


@pytest.mark.parametrize("y", [2.3, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan])
def test_maximum_is_cs_comparison_bit_for_bit(y: float) -> None:
    """FFmpeg's ``in > y ? in : y`` on every kind of float: NaN inputs give y, a NaN y gives
    NaN, and of two zeros the one C picks (fmax, where it is the same float, is faster)."""
    bits = np.arange(0, 2**32, 65521, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, y, -y], F)
    x = np.concatenate([bits.view(F), specials]).reshape(1, 1, -1, 1)
    with np.errstate(invalid="ignore"):
        want = np.where(x > F(y), x, F(y))
    assert np.array_equal(Maximum(y, 0, 1).forward(x).view(np.uint32), want.view(np.uint32))


def test_maximum_and_floormod() -> None:
    x = np.array([-3, 2.5, 2, -2.1, 7.8, 100, np.nan], F).reshape(1, 1, 7, 1)
    assert np.array_equal(Maximum(2.3, 0, 1).forward(x).ravel(), np.array([2.3, 2.5, 2.3, 2.3, 7.8, 100, 2.3], F))
    t = np.array([-7.9, -7.2, -5.5, -4, -3.1, -0.5, 0.5, 4.9, 5.5, 7.99], F).reshape(1, 1, 10, 1)
    for s in (3.5, -3.5):  # C's truncating %, not TensorFlow's floor-mod
        got = MathBinary(5, False, 0, True, s, 1).forward(t).ravel()
        assert np.array_equal(got, [-1, -1, -2, -1, 0, 0, 0, 1, 2, 1])
    with pytest.raises(InvalidArgumentError, match="divisor of 0"):
        MathBinary(5, False, 0, True, 0.5, 1).forward(t)


X6 = np.array([-3, 2.5, 2, -2.1, 7.8, 100], F).reshape(1, 1, 2, 3)
X6B = np.array([-1, 2, 3, -21, 8, 10], F).reshape(1, 1, 2, 3)
V = float(F(7.28))
BINARY_TABLE = {  # op: (v . x, x . v, x . x1), native_format.md s.5.2
    0: (
        [10.280001, 4.78, 5.28, 9.38, -0.52, -92.72],
        [-10.280001, -4.78, -5.28, -9.38, 0.52, 92.72],
        [-2, 0.5, -1, 18.9, -0.19999981, 90],
    ),
    1: ([4.28, 9.780001, 9.280001, 5.1800003, 15.08, 107.28], None, [-4, 4.5, 5, -23.1, 15.8, 110]),
    2: ([-21.84, 18.2, 14.56, -15.288, 56.784004, 728], None, [3, 5, 6, 44.1, 62.4, 1000]),
    3: (
        [-2.4266667, 2.9120002, 3.64, -3.466667, 0.93333334, 0.0728],
        [-0.4120879, 0.3434066, 0.27472526, -0.2884615, 1.0714285, 13.736263],
        [3, 1.25, 0.6666667, 0.099999994, 0.975, 10],
    ),
    4: ([-3, 2.5, 2, -2.1, 7.28, 7.28], None, [-3, 2, 2, -21, 7.8, 10]),
    5: ([1, 1, 1, 1, 0, 7], [-3, 2, 2, -2, 0, 2], [0, 0, 2, -2, 7, 0]),
}


@pytest.mark.parametrize("op", sorted(BINARY_TABLE))
def test_math_binary_table(op: int) -> None:
    sf, ss, tt = BINARY_TABLE[op]
    ss = sf if ss is None else ss
    assert np.array_equal(MathBinary(op, True, V, False, 0, 1).forward(X6).ravel(), np.array(sf, F))
    assert np.array_equal(MathBinary(op, False, 0, True, V, 1).forward(X6).ravel(), np.array(ss, F))
    assert np.array_equal(MathBinary(op, False, 0, False, 1, 2).forward(X6, X6B).ravel(), np.array(tt, F))


def test_math_unary_quirks() -> None:
    x = np.array([0.1, 0.5, 0.75, -3, 2.5, 2, -2.1, 7.8, 100, -0.4, -2.5, -0.0], F).reshape(1, 1, 12, 1)

    def run(name: str) -> np.ndarray:
        return MathUnary(UNARY_NAMES.index(name), 0, 1).forward(x).ravel()

    assert np.array_equal(run("round")[:11], [0, 1, 1, -3, 3, 2, -2, 8, 100, -0.0, -3])  # halves away from 0
    ceil, floor = run("ceil"), run("floor")
    assert ceil[9] == 0 and not np.signbit(ceil[9])  # +0.0, as FFmpeg's -fno-signed-zeros build gives
    assert not np.signbit(floor[11]) and not np.signbit(run("abs")[11])
    asin = run("asin")
    assert np.isnan(asin[3]) and not np.signbit(asin[3])  # glibc's +NaN
    assert np.array_equal(
        run("exp")[:9],
        np.array([1.105171, 1.6487212, 2.117, 0.049787067, 12.182494, 7.389056, 0.12245644, 2440.6025, np.inf], F),
    )


def test_layer_shape_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="input has 3 channels, the kernel expects 1"):
        Conv2D(1, 1, 3, ONES3, None, 0, 1).forward(np.zeros((1, 4, 4, 3), F))
    with pytest.raises(InvalidArgumentError, match="output data length overflow"):
        Conv2D(1, 0, 3, np.ones((1, 5, 5, 1), F), None, 0, 1).forward(np.zeros((1, 3, 3, 1), F))
    with pytest.raises(InvalidArgumentError, match="not divisible"):
        DepthToSpace(2, 0, 1).forward(np.zeros((1, 2, 2, 3), F))
    with pytest.raises(InvalidArgumentError, match="fewer elements"):
        MathBinary(1, False, 0, False, 1, 2).forward(np.zeros((1, 2, 2, 3), F), np.zeros((1, 2, 2, 1), F))


# ---------------------------------------------------------------------------------------------
# NativeModel


def test_describe() -> None:
    m = NativeModel(espcn(3).nf, conv2d_threads=3)
    assert m.conv2d_threads == 3
    assert [(t.name, t.dims, t.dtype, t.layout) for t in m.inputs] == [("x", (1, -1, -1, 1), "float32", "NHWC")]
    assert [(t.name, t.dims) for t in m.outputs] == [("y", (1, -1, -1, 1))]
    assert m.output_dims({"x": (1, 48, 64, 1)}) == {"y": (1, 144, 192, 1)}
    assert m.output_dims({"x": (1, -1, 64, 1)}) == {"y": (1, -1, 192, 1)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_shape_inference_matches_run(name: str) -> None:
    built = MODELS[name]()
    m = NativeModel(built.nf)
    x = np.random.default_rng(1).random((1, 9, 13, built.cin), dtype=F)
    assert m.run({"x": x})["y"].shape == m.output_dims({"x": x.shape})["y"]


@pytest.mark.parametrize("make", [lambda: all_layers(3), lambda: espcn(2), lambda: MODELS["binary3_tt"]()])
def test_batch_equals_one_by_one(make) -> None:
    m = NativeModel(make().nf)
    c = m.inputs[0].dims[3]
    xs = np.random.default_rng(2).random((4, 11, 7, c), dtype=F)
    batched = m.run({"x": xs})["y"]
    single = np.concatenate([m.run({"x": xs[i : i + 1]})["y"] for i in range(4)])
    assert batched.tobytes() == single.tobytes()


def test_batch_refused_when_padding_n() -> None:
    m = NativeModel(Chain(1).pad(2, ((1, 1), (0, 0), (0, 0), (0, 0))).build("n").nf)
    assert m.run({"x": np.zeros((1, 2, 2, 1), F)})["y"].shape == (3, 2, 2, 1)
    with pytest.raises(NotSupportedError, match="pads along N"):
        m.run({"x": np.zeros((2, 2, 2, 1), F)})


def test_run_errors() -> None:
    m = NativeModel(identity(3).nf)
    x = np.zeros((1, 4, 4, 3), F)
    with pytest.raises(InvalidArgumentError, match='Could not find "z" in model'):
        m.run({"z": x})
    with pytest.raises(InvalidArgumentError, match='Found "y" in model, but it is not input node'):
        m.run({"y": x})
    with pytest.raises(InvalidArgumentError, match="requires channel 3 but got 1"):
        m.run({"x": np.zeros((1, 4, 4, 1), F)})
    with pytest.raises(InvalidArgumentError, match="4-D NHWC float"):
        m.run({"x": np.zeros((4, 4, 3), F)})
    with pytest.raises(InvalidArgumentError, match='Could not find "nope"'):
        m.run({"x": x}, outputs=["nope"])
    # Naming the input as the output is FFmpeg's identity model.
    assert m.run({"x": x + 1}, outputs=["x"])["x"].tobytes() == (x + 1).tobytes()


def test_fixed_input_size_and_dtype() -> None:
    nf = identity(1).nf
    nf.operands[0].dims = (1, 5, 6, 1)
    m = NativeModel(nf)
    assert m.run({"x": np.zeros((1, 5, 6, 1), F)})["y"].shape == (1, 5, 6, 1)
    with pytest.raises(InvalidArgumentError, match="requires height 5 but got 4"):
        m.run({"x": np.zeros((1, 4, 6, 1), F)})
    nf.operands[0].dtype = 4
    with pytest.raises(NotSupportedError, match="DNN_FLOAT"):
        NativeModel(nf).run({"x": np.zeros((1, 5, 6, 1), F)})


def test_inconsistent_model_is_invalid_data() -> None:
    nf = identity(3).nf
    nf.operands[0].dims = (1, -1, -1, 1)  # the conv kernel expects 3 channels
    with pytest.raises(InvalidDataError, match="inconsistent"):
        NativeModel(nf)
