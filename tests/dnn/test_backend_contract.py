"""The backend contract, run over every registered backend whose runtime is installed and the mock.

A backend loads a model, describes it, runs a batch of n items giving n on the first axis,
does not mutate its input, answers the same from several threads as from one, and closes.
The registry refuses duplicates, lists what exists and names the pip extra for a missing runtime.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import onnx_models as models
import pytest
from spine_util import missing

from avdnn.dnn import DnnConfig, load_model
from avdnn.dnn import backends as registry
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.interface import DNNDataType, DNNFunctionType, DNNLayout, ModelConfig
from avdnn.errors import BackendUnavailableError, InvalidArgumentError, NotSupportedError

# The backends that read these ONNX models as float NCHW; every backend, each with its own
# format, goes through tests/backends/test_contract.py.
BACKENDS = ["onnx"]


def _load(name: str, tmp_path: Path, batch_size: int = 1):
    if name == "mock":
        mock = MockBackend(lambda b: 1.0 - b)
        return mock.as_backend().load(ModelConfig(path="mock", batch_size=batch_size))
    if not registry.is_installed(name):
        missing("extras", f"the {name} backend is not installed: pip install 'avdnn[{registry.spec_for(name).extra}]'")
    path = models.invert(tmp_path, 3)
    return registry.backend_class(name).load(ModelConfig(path=path, batch_size=batch_size))


@pytest.mark.parametrize("name", [*BACKENDS, "mock"])
def test_backend_contract(name: str, tmp_path: Path) -> None:
    model = _load(name, tmp_path, batch_size=4)
    io = model.describe()
    assert len(io.inputs) == 1 and len(io.outputs) >= 1
    info = io.input
    assert info.dtype == DNNDataType.FLOAT and info.layout == DNNLayout.NCHW and len(info.dims) == 4
    rng = np.random.default_rng(1)
    batch = rng.random((4, 3, 6, 5), dtype=np.float32)
    before = batch.copy()
    outs = model.run(batch)
    assert np.array_equal(batch, before), "the input was mutated"
    assert outs[0].shape == (4, 3, 6, 5) and outs[0].dtype == np.float32
    np.testing.assert_allclose(outs[0], 1.0 - batch, rtol=0, atol=1e-6)
    one = [model.run(batch[k : k + 1])[0] for k in range(4)]
    assert np.array_equal(np.concatenate(one), outs[0]), "batched differs from unbatched"
    results: list[np.ndarray] = [None] * 4  # type: ignore[list-item]

    def worker(k: int) -> None:
        results[k] = model.run(batch[k : k + 1])[0]

    if getattr(model, "supports_async", True):
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert np.array_equal(np.concatenate(results), outs[0]), "threaded runs differ"
    model.close()


@pytest.mark.parametrize("name", [*BACKENDS, "mock"])
def test_sync_equals_async_through_the_engine(name: str, tmp_path: Path) -> None:
    from avdnn.dnn.interface import DNNAsyncStatusType as S

    answers = []
    for async_mode in (False, True):
        model = _load(name, tmp_path, batch_size=2)
        dnn = load_model(
            DnnConfig(model="m", async_mode=async_mode, nireq=2, batch_size=2),
            backend=MockBackend(model.run).as_backend(),
        )
        frames = [np.full((5, 4, 3), i * 20, dtype=np.uint8) for i in range(5)]
        for k, fr in enumerate(frames):
            dnn.execute(k, [dnn.frame_item(fr, lambda outs: outs[0].copy())])
        dnn.flush()
        got = []
        while (r := dnn.get_result(wait=True, timeout=10)).status == S.SUCCESS:
            got.append(r.results[0])
        assert r.status == S.EMPTY_QUEUE and len(got) == 5
        answers.append(np.concatenate(got))
        dnn.close()
    assert np.array_equal(*answers)


def test_registry_table() -> None:
    assert "onnx" in registry.list_backends()
    spec = registry.spec_for("onnx")
    assert int(spec.flag) == 8 and spec.extra == "onnxruntime"
    assert registry.spec_for(8) is spec and registry.spec_for("onnxruntime") is spec
    with pytest.raises(NotSupportedError) as info:
        registry.spec_for("caffe")
    assert "available: " in info.value.message and "onnx" in info.value.message
    with pytest.raises(InvalidArgumentError):
        registry.register_backend(spec)


def test_missing_runtime_is_an_install_hint() -> None:
    from avdnn.dnn.interface import DNNBackendType

    fake = registry.BackendSpec(
        "fakert", DNNBackendType(1 << 10), "fakert", "FakeBackend", "fakert", "no_such_module_x"
    )
    registry.register_backend(fake)
    try:
        with pytest.raises(BackendUnavailableError) as info:
            registry.backend_class("fakert")
        assert "pip install 'avdnn[fakert]'" in info.value.message
        assert isinstance(info.value, ImportError)
    finally:
        registry.unregister_backend("fakert")


def test_importing_the_dnn_module_imports_no_runtime() -> None:
    code = (
        "import sys, avdnn.dnn, avdnn.dnn.backends, avdnn.filters.dnn_processing, avdnn.filters.sr, "
        "avdnn.filters.derain; assert 'onnxruntime' not in sys.modules, 'onnxruntime imported'"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": src}, timeout=60)


def test_onnx_rejects_fixed_batch_and_two_inputs(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    path = models._save(
        tmp_path / "b2.onnx",
        [helper.make_node("Identity", ["x"], ["y"])],
        [models._vi("x", TensorProto.FLOAT, [2, 3, 4, 4])],
        [models._vi("y", TensorProto.FLOAT, [2, 3, 4, 4])],
    )
    with pytest.raises(NotSupportedError):
        registry.backend_class("onnx").load(ModelConfig(path=path, batch_size=1))
    path2 = models._save(
        tmp_path / "two_in.onnx",
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [models._vi("a", TensorProto.FLOAT, models.nchw(1)), models._vi("b", TensorProto.FLOAT, models.nchw(1))],
        [models._vi("y", TensorProto.FLOAT, models.nchw(1))],
    )
    with pytest.raises(NotSupportedError) as info:
        registry.backend_class("onnx").load(ModelConfig(path=path2))
    assert "extra_inputs=b=" in info.value.message


def test_onnx_fixed_batch_one_runs_a_batch_item_by_item(tmp_path: Path) -> None:
    path = models.identity(tmp_path, 1, dims=[1, 1, "H", "W"], name="b1")
    model = registry.backend_class("onnx").load(
        ModelConfig(path=path, batch_size=3, func_type=DNNFunctionType.PROCESS_FRAME)
    )
    batch = np.random.default_rng(0).random((3, 1, 4, 4), dtype=np.float32)
    assert np.array_equal(model.run(batch)[0], batch)
