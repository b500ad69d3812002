"""One contract, every backend: the same nets, each in its backend's own format (nets.py).

identity and invert give byte-identical frames through dnn_processing on every backend; the
3x3 conv agrees with ONNX Runtime within 1e-5; the engine gives the same bytes sync and async,
batched and unbatched, in order; every function type loads and runs; bad files, missing files
and wrong tensor names are avdnn errors carrying the runtime's message; a missing runtime is a
BackendUnavailableError naming the pip extra.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import nets
import numpy as np
import pytest

from avdnn.dnn import DnnConfig, load_model
from avdnn.dnn import backends as registry
from avdnn.dnn.backends._common import raised_in
from avdnn.dnn.interface import DNNAsyncStatusType, DNNDataType, DNNFunctionType, DNNLayout, ModelConfig
from avdnn.errors import (
    AvdnnError,
    BackendUnavailableError,
    InvalidArgumentError,
    InvalidDataError,
    NotFoundError,
)
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter
from avdnn.media.frame import Frame

FORMATS = list(nets.FORMATS)
NetPath = Callable[[str, str], str]


def backend(fmt: str) -> str:
    return nets.FORMATS[fmt][0]


def names(fmt: str) -> tuple[str | None, tuple[str, ...]]:
    """The (input, outputs) to name: none for TorchScript (no names) and for OpenVINO reading a
    .tflite (it sees the converter's tensor names, not the signature's x/y)."""
    return (None, ()) if fmt in ("torch", "torch_export", "openvino_tflite") else ("x", ("y",))


def load(fmt: str, path: str, **kw: object):  # type: ignore[no-untyped-def]
    inp, outs = names(fmt)
    config = ModelConfig(path=path, input_name=inp, output_names=outs, **kw)
    return registry.backend_class(backend(fmt)).load(config)


def make_filter(**options: object):  # type: ignore[no-untyped-def]
    cls = get_filter("dnn_processing")
    values = bind_options(cls.options, [(k, str(v)) for k, v in options.items()], filter_name="dnn_processing")
    return cls(values, label="dnn_processing")


def frames(count: int, width: int = 33, height: int = 21, seed: int = 0) -> list[Frame]:
    rng = np.random.default_rng(seed)
    return [
        Frame.from_planes([rng.integers(0, 256, (height, width, 3), dtype=np.uint8)], "rgb24", pts=i)
        for i in range(count)
    ]


def batch_for(model, n: int = 3, height: int = 7, width: int = 6, seed: int = 1):  # type: ignore[no-untyped-def]
    """A batch in the model's own input form, and the same pixels as ONNX Runtime's float NCHW input."""
    info = model.describe().input
    pixels = np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)
    nchw = pixels.transpose(0, 3, 1, 2)
    ref = np.ascontiguousarray(nchw, dtype=np.float32) / np.float32(255)
    if info.dtype == DNNDataType.UINT8:
        data = pixels if info.layout == DNNLayout.NHWC else nchw
    else:
        data = pixels.astype(np.float32) / np.float32(255)
        data = data if info.layout == DNNLayout.NHWC else data.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(data), ref


def as_nchw(model, out: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    return out.transpose(0, 3, 1, 2) if model.describe().outputs[0].layout == DNNLayout.NHWC else out


def ort_reference(net_path: NetPath, net: str, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(net_path("onnx", net), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


# -- cross-backend equality ------------------------------------------------------------------


@pytest.mark.parametrize("net", ["identity", "invert"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_identity_and_invert_give_the_same_bytes_on_every_backend(fmt: str, net: str, net_path: NetPath) -> None:
    path = net_path(fmt, net)
    src = frames(5)
    inp, outs = names(fmt)
    named = {"input": inp, "output": "&".join(outs)} if inp else {}
    f = make_filter(dnn_backend=backend(fmt), model=path, nireq=2, batch_size=2, **named)
    out: list[Frame] = []
    for frame in src:
        out += f.push(frame)
    out += f.flush()
    f.close()
    assert [o.pts for o in out] == [s.pts for s in src]
    for got, want in zip(out, src, strict=True):
        expected = want.planes[0] if net == "identity" else 255 - want.planes[0]
        assert np.array_equal(got.planes[0], expected), f"{fmt} {net}: bytes differ"


@pytest.mark.parametrize("fmt", FORMATS)
def test_conv_agrees_with_onnxruntime(fmt: str, net_path: NetPath) -> None:
    model = load(fmt, net_path(fmt, "conv"), batch_size=3)
    batch, ref_in = batch_for(model)
    before = batch.copy()
    got = as_nchw(model, model.run(batch)[0])
    assert np.array_equal(batch, before), "the input was mutated"
    want = ort_reference(net_path, "conv", ref_in)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    one = np.concatenate([model.run(batch[k : k + 1])[0] for k in range(3)])
    np.testing.assert_allclose(as_nchw(model, one), got, rtol=0, atol=1e-6)
    model.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_engine_sync_async_batched_unbatched_in_order(fmt: str, net_path: NetPath) -> None:
    path = net_path(fmt, "conv")
    src = [f.planes[0] for f in frames(7, 12, 9, seed=3)]
    answers = []
    for async_mode, batch_size in ((False, 1), (True, 1), (True, 3), (False, 2)):
        dnn = load_model(
            DnnConfig(
                model=path,
                backend=backend(fmt),
                input=names(fmt)[0],
                outputs=names(fmt)[1],
                async_mode=async_mode,
                nireq=2,
                batch_size=batch_size,
            )
        )
        for k, rgb in enumerate(src):
            dnn.execute(k, [dnn.frame_item(rgb, lambda outs: outs[0].copy())])
        dnn.flush()
        got = []
        while (r := dnn.get_result(wait=True, timeout=30)).status == DNNAsyncStatusType.SUCCESS:
            got.append((r.payload, r.results[0]))
        assert r.status == DNNAsyncStatusType.EMPTY_QUEUE, r.error
        assert [p for p, _ in got] == list(range(7)), "order not kept"
        answers.append(np.concatenate([a for _, a in got]))
        dnn.close()
    assert np.array_equal(answers[0], answers[1]), "sync and async differ"
    for other in answers[2:]:
        if backend(fmt) == "torch":  # oneDNN picks another conv kernel per batch size: last-ulp differences
            np.testing.assert_allclose(other, answers[0], rtol=0, atol=1e-6)
        else:
            assert np.array_equal(answers[0], other), "batched and unbatched differ"


@pytest.mark.parametrize("func", [DNNFunctionType.ANALYTICS_DETECT, DNNFunctionType.ANALYTICS_CLASSIFY])
@pytest.mark.parametrize("fmt", FORMATS)
def test_detect_and_classify_models_load_and_run(fmt: str, func: DNNFunctionType, net_path: NetPath) -> None:
    model = load(fmt, net_path(fmt, "conv"), func_type=func, batch_size=2)
    batch, ref_in = batch_for(model, n=2)
    outs = model.run(batch)
    assert len(outs) == 1 and outs[0].shape[0] == 2 and outs[0].dtype == np.float32
    # FFmpeg's OpenVINO scale for detect/classify is 1: the model sees 0..255
    ref = ref_in * 255 if backend(fmt) == "openvino" else ref_in
    np.testing.assert_allclose(as_nchw(model, outs[0]), ort_reference(net_path, "conv", ref), rtol=1e-5, atol=2e-3)
    model.close()


# -- errors ------------------------------------------------------------------------------------

_EXT = {
    "onnx": ".onnx",
    "openvino": ".xml",
    "torch": ".pt",
    "torch_export": ".pt2",
    "tensorflow": ".pb",
    "tf_saved": ".pb",
    "tflite": ".tflite",
    "native": ".model",
    "openvino_pb": ".pb",
    "openvino_tflite": ".tflite",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_and_missing_model_files(fmt: str, net_path: NetPath, tmp_path: Path) -> None:
    net_path(fmt, "identity")  # skips when the backend is absent
    bad = tmp_path / f"bad{_EXT[fmt]}"
    bad.write_bytes(b"\x00garbage, not a model\x01" * 8)
    with pytest.raises(AvdnnError) as info:
        load(fmt, str(bad))
    assert isinstance(info.value, (InvalidDataError, InvalidArgumentError)), repr(info.value)
    assert str(bad) in str(info.value)
    if backend(fmt) != "native":
        assert info.value.__cause__ is not None and not isinstance(info.value.__cause__, AvdnnError)
        assert len(info.value.message) > len(f"model '{bad}': ") + 10, "the runtime's message is missing"
    with pytest.raises(NotFoundError):
        load(fmt, str(tmp_path / f"missing{_EXT[fmt]}"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_wrong_tensor_names(fmt: str, net_path: NetPath) -> None:
    path = net_path(fmt, "identity")
    cls = registry.backend_class(backend(fmt))
    if backend(fmt) == "torch":
        pytest.skip(
            "not applicable: TorchScript has no tensor names; FFmpeg's torch backend ignores them with a warning"
        )
    with pytest.raises(InvalidArgumentError) as info:
        cls.load(ModelConfig(path=path, input_name="nope"))
    assert "nope" in info.value.message
    with pytest.raises(InvalidArgumentError) as info:
        cls.load(ModelConfig(path=path, input_name=names(fmt)[0], output_names=("nope_out",)))
    assert "nope_out" in info.value.message


@pytest.mark.parametrize("fmt", FORMATS)
def test_inference_errors_are_mapped_and_complete_the_task(fmt: str, net_path: NetPath) -> None:
    path = net_path(fmt, "conv")
    model = load(fmt, path)
    info = model.describe().input
    bad = np.zeros(
        (1, 5, 6, 4) if info.layout == DNNLayout.NHWC else (1, 4, 5, 6),
        dtype=np.uint8 if info.dtype == DNNDataType.UINT8 else np.float32,
    )
    with pytest.raises(AvdnnError) as err:
        model.run(bad)
    if backend(fmt) == "native":  # avdnn's own numpy core checks shapes itself: nothing foreign to chain
        assert err.value.__cause__ is None and "requires channel 3 but got 4" in err.value.message
    elif backend(fmt) == "openvino":  # avdnn checks the shape against OpenVINO's before it runs
        assert "does not fit the model input" in err.value.message
    else:  # the runtime's own exception, raised inside its package, mapped at the seam and chained
        package = {"onnx": "onnxruntime", "torch": "torch", "tensorflow": "tensorflow", "tflite": "ai_edge_litert"}
        assert err.value.__cause__ is not None and raised_in(err.value.__cause__, package[backend(fmt)])
    model.close()
    # the same failure inside the engine, async: the task comes back FAIL with the error, nothing hangs
    dnn = load_model(
        DnnConfig(
            model=path, backend=backend(fmt), input=names(fmt)[0], outputs=names(fmt)[1], async_mode=True, nireq=2
        )
    )
    from avdnn.dnn.engine import Item

    item = Item(bad.shape[1:], bad.dtype, lambda dst: dst.fill(0), lambda outs: outs)
    try:
        dnn.execute("bad", [item])
    except AvdnnError:
        pass  # a backend that refuses at start (OpenVINO's shape check) raises here
    else:
        r = dnn.get_result(wait=True, timeout=30)
        assert r.status == DNNAsyncStatusType.FAIL and isinstance(r.error, AvdnnError)
    dnn.close()


@pytest.mark.parametrize("name", ["openvino", "torch", "tensorflow", "tflite", "onnx"])
def test_missing_runtime_names_the_extra(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = registry.spec_for(name)
    monkeypatch.setitem(sys.modules, spec.requires, None)  # `import X` fails, find_spec(X) is None
    monkeypatch.setattr(registry, "_loaded", {})
    with pytest.raises(BackendUnavailableError) as info:
        registry.backend_class(name)
    assert f"pip install 'avdnn[{spec.extra}]'" in info.value.message
    assert isinstance(info.value, ImportError)
    with pytest.raises(BackendUnavailableError):
        make_filter(dnn_backend=name, model="m")


def test_every_backend_is_in_the_table_with_ffmpeg_names() -> None:
    names = registry.list_backends()
    assert {"onnx", "openvino", "torch", "tensorflow", "tflite", "native"} <= set(names)
    assert {registry.spec_for(n).option_group for n in ("tensorflow", "openvino", "torch", "onnx")} == {
        "dnn_tensorflow",
        "dnn_openvino",
        "dnn_th",
        "dnn_onnx",
    }
    assert registry.spec_for(1).name == "tensorflow" and registry.spec_for(2).name == "openvino"
    assert registry.spec_for(4).name == "torch" and registry.is_installed("native")


def test_importing_avdnn_imports_no_runtime() -> None:
    import subprocess

    code = (
        "import sys, avdnn, avdnn.dnn.backends, avdnn.filters.dnn_processing, avdnn.cli.help; "
        "from avdnn.cli.help import help_text; help_text('filter=dnn_processing'); "
        "bad = [m for m in ('onnxruntime', 'openvino', 'torch', 'tensorflow', 'ai_edge_litert') "
        "if m in sys.modules]; assert not bad, bad"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": src}, timeout=120)
