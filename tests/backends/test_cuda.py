"""CUDA devices: the torch backend on ``cuda`` and ONNX Runtime's CUDA execution provider.

Skipped where there is no CUDA device (CI has none): a hardware skip. A missing torch or
onnxruntime is a missing extra, which AVDNN_REQUIRE turns into a failure (spine_util). Run on a
GPU machine with ``pytest tests/backends/test_cuda.py``. The CPU result of the same model is the
reference: identity and invert must be byte-identical through the whole filter, a convolution
close (cuDNN picks other kernels), and async with several requests on their own CUDA streams must
give the same bytes as sync. The device check itself (an index past the devices there are) is
also run without a GPU, on torch's CUDA queries answered by the test.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
from collections.abc import Callable

import numpy as np
import pytest
from spine_util import missing

from avdnn.dnn import backends as registry
from avdnn.dnn.interface import ModelConfig
from avdnn.errors import AVERROR, InvalidArgumentError, NotSupportedError


def _need(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        missing("extras", f"{module} is not installed: pip install 'avdnn[{extra}]'")


def _cuda() -> bool:
    """Whether torch sees a CUDA device (torch is required: without it, the extra is missing)."""
    _need("torch", "torch")
    import torch

    return bool(torch.cuda.is_available())


@pytest.fixture
def cuda() -> None:
    """The test needs a CUDA device: torch is required, the device is hardware (a skip without it)."""
    if not _cuda():
        pytest.skip("hardware: no CUDA device (torch.cuda.is_available() is False)")


def _ort_cuda() -> bool:
    _need("onnxruntime", "onnxruntime")
    import onnxruntime as ort

    return "CUDAExecutionProvider" in ort.get_available_providers()


def _run(backend: str, path: str, device: str, x: np.ndarray) -> np.ndarray:
    model = registry.backend_class(backend).load(ModelConfig(path=path, device=device))
    try:
        return model.run(x)[0]
    finally:
        model.close()


def _through_filter(path: str, backend: str, device: str, **opts: object) -> list[bytes]:
    import avdnn

    extra = "".join(f":{k}={v}" for k, v in opts.items())
    chain = f"format=rgb24,dnn_processing=dnn_backend={backend}:model={path}:device={device}{extra}"
    return [bytes(f.planes[0]) for f in avdnn.run("testsrc2=s=97x61:r=25:d=1", chain, input_format="lavfi")]


@pytest.mark.usefixtures("cuda")
@pytest.mark.parametrize("net", ["identity", "invert"])
def test_torch_cuda_is_byte_identical_to_cpu(net_path: Callable[[str, str], str], net: str) -> None:
    path = net_path("torch", net)
    cpu = _through_filter(path, "torch", "cpu", **{"async": 0})
    assert _through_filter(path, "torch", "cuda", **{"async": 0}) == cpu
    # "cuda:0" in a filter string needs its ':' escaped twice, as in ffmpeg: device=cuda\\:0
    assert _through_filter(path, "torch", r"cuda\\:0", nireq=4, batch_size=3) == cpu  # streams + batches


@pytest.mark.usefixtures("cuda")
def test_torch_cuda_conv_matches_cpu(net_path: Callable[[str, str], str]) -> None:
    path = net_path("torch", "conv")
    x = np.random.default_rng(0).random((2, 3, 61, 97), dtype=np.float32)
    np.testing.assert_allclose(_run("torch", path, "cuda", x), _run("torch", path, "cpu", x), atol=1e-4)


@pytest.mark.usefixtures("cuda")
def test_torch_cuda_async_equals_sync(net_path: Callable[[str, str], str]) -> None:
    path = net_path("torch", "conv")
    sync = _through_filter(path, "torch", "cuda", **{"async": 0})
    assert _through_filter(path, "torch", "cuda", nireq=4) == sync
    assert _through_filter(path, "torch", "cuda", nireq=2, batch_size=4) == sync


@pytest.mark.usefixtures("cuda")
def test_torch_bad_cuda_index_is_an_error(net_path: Callable[[str, str], str]) -> None:
    import torch

    path = net_path("torch", "identity")
    past = f"cuda:{torch.cuda.device_count()}"
    with pytest.raises(InvalidArgumentError) as info:  # the option is wrong, not the model (EINVAL, as FFmpeg)
        _run("torch", path, past, np.zeros((1, 3, 4, 4), np.float32))
    assert info.value.option == "device" and info.value.code == AVERROR(errno.EINVAL)
    assert past in str(info.value)


def test_torch_cuda_index_past_the_devices_is_refused_before_loading(
    net_path: Callable[[str, str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device check on torch's answers (one CUDA device), on any machine: cuda:1 is the option's error."""
    _need("torch", "torch")
    import torch

    from avdnn.dnn.backends import torch as backend

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert backend._device(ModelConfig(path="m.pt", device="cuda:0")) == torch.device("cuda:0")
    assert backend._device(ModelConfig(path="m.pt", device="cuda")) == torch.device("cuda")
    with pytest.raises(InvalidArgumentError) as info:
        _run("torch", net_path("torch", "identity"), "cuda:1", np.zeros((1, 3, 4, 4), np.float32))
    assert info.value.option == "device" and info.value.code == AVERROR(errno.EINVAL)
    assert "cuda:1" in str(info.value) and "1 CUDA device" in str(info.value)


@pytest.mark.usefixtures("cuda")
def test_onnx_cuda_without_the_provider_warns_and_runs_on_cpu(
    net_path: Callable[[str, str], str], caplog: pytest.LogCaptureFixture
) -> None:
    if _ort_cuda():
        pytest.skip("not applicable: this onnxruntime has the CUDA execution provider")
    path = net_path("onnx", "invert")
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        frames = _through_filter(path, "onnx", "cuda")
    assert frames == _through_filter(path, "onnx", "cpu")
    assert "CUDAExecutionProvider" in caplog.text


@pytest.mark.usefixtures("cuda")
def test_onnx_cuda_provider_is_used_and_matches_cpu(net_path: Callable[[str, str], str]) -> None:
    if not _ort_cuda():
        pytest.skip("not applicable: this onnxruntime has no CUDA execution provider (the test above runs)")
    path = net_path("onnx", "conv")
    model = registry.backend_class("onnx").load(ModelConfig(path=path, device="cuda"))
    assert model.provider == "CUDAExecutionProvider"
    x = np.random.default_rng(0).random((1, 3, 61, 97), dtype=np.float32)
    np.testing.assert_allclose(model.run(x)[0], _run("onnx", path, "cpu", x), atol=1e-4)
    assert _through_filter(path, "onnx", "cuda", nireq=2) == _through_filter(path, "onnx", "cuda", **{"async": 0})


def test_torch_cuda_without_a_device_is_refused(net_path: Callable[[str, str], str]) -> None:
    if _cuda():
        pytest.skip("not applicable: a CUDA device is present")
    with pytest.raises(NotSupportedError, match="No CUDA device"):
        _run("torch", net_path("torch", "identity"), "cuda", np.zeros((1, 3, 4, 4), np.float32))
