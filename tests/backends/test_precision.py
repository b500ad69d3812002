"""OpenVINO's ``precision`` option: f32, bf16/f16 where the device lists them, auto, and INT8 from the cache."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bkutil import skip_reason
from spine_util import missing

from avdnn.cli.models import main as models_main
from avdnn.dnn.backends import cache
from avdnn.dnn.backends.openvino import OpenVINOBackend
from avdnn.dnn.backends.openvino.loading import inference_precision
from avdnn.dnn.interface import DNNFunctionType, ModelConfig
from avdnn.errors import InvalidArgumentError, NotFoundError, NotSupportedError


class FakeCore:
    """A core whose device lists the capabilities a test names."""

    def __init__(self, caps: list[str]) -> None:
        self.caps = caps

    def get_property(self, device: str, name: str) -> Any:
        assert name == "OPTIMIZATION_CAPABILITIES"
        return self.caps


@pytest.mark.parametrize(
    "caps, device, asked, expect",
    [
        (["BF16", "FP32", "INT8"], "CPU", "auto", ("bf16", False)),
        (["FP32", "INT8"], "CPU", "auto", ("f32", False)),
        (["FP32", "FP16", "INT8"], "CPU", "auto", ("f32", False)),  # f16 on a CPU: not the fast path
        (["FP32", "FP16"], "GPU", "auto", ("f16", False)),
        (["BF16", "FP32", "INT8"], "CPU", "int8", ("bf16", True)),  # the rest of an INT8 model: auto's float
        (["FP32", "INT8"], "CPU", "int8", ("f32", True)),
        (["BF16", "FP32"], "CPU", "f32", ("f32", False)),
        (["BF16", "FP32"], "CPU", "bf16", ("bf16", False)),
        (["FP32", "FP16"], "GPU", 2, ("f16", False)),
        ([], "AUTO", "bf16", ("bf16", False)),  # a virtual device lists nothing: passed on as asked
    ],
)
def test_precision_follows_the_devices_capabilities(
    caps: list[str], device: str, asked: Any, expect: tuple[str, bool]
) -> None:
    assert inference_precision(FakeCore(caps), device, asked) == expect


def test_a_precision_the_device_lacks_is_enosys() -> None:
    with pytest.raises(NotSupportedError, match=r"does not list BF16 .*precision=auto or f32"):
        inference_precision(FakeCore(["FP32", "INT8"]), "CPU", "bf16")
    with pytest.raises(InvalidArgumentError):
        inference_precision(FakeCore(["FP32"]), "CPU", "f64")


@pytest.fixture
def conv_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A frozen graph taking uint8 NHWC frames (as the zoo's SSD): cast, 3x3 conv, ReLU."""
    why = skip_reason("openvino_pb")
    if why:
        missing("extras", why)
    monkeypatch.setenv("AVDNN_CACHE", str(tmp_path / "cache"))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    w = np.random.default_rng(3).uniform(-0.1, 0.1, (3, 3, 3, 8)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.uint8, [None, None, None, 3], name="image")
        y = tf.nn.conv2d(tf.cast(x, tf.float32), tf.constant(w), 1, "SAME")
        tf.nn.relu(y, name="y")
    path = tmp_path / "conv_u8.pb"
    path.write_bytes(g.as_graph_def().SerializeToString())
    return str(path)


def _run(path: str, precision: str, x: np.ndarray) -> np.ndarray:
    model = OpenVINOBackend.load(
        ModelConfig(path=path, func_type=DNNFunctionType.ANALYTICS_DETECT, options={"precision": precision})
    )
    try:
        assert model.precision == ("int8" if precision == "int8" else "f32")
        return model.run(x)[0]
    finally:
        model.close()


def test_int8_needs_a_quantized_model_and_says_how(conv_graph: str) -> None:
    with pytest.raises(NotFoundError, match=r"no INT8 model of .*avdnn models quantize NAME --clip FILE"):
        _run(conv_graph, "int8", np.zeros((1, 8, 8, 3), np.uint8))


def test_quantized_model_is_kept_in_the_cache_and_runs(conv_graph: str, tmp_path: Path) -> None:
    if importlib.util.find_spec("nncf") is None:
        missing("extras", "pip install 'avdnn[quantize]'")
    from avdnn.dnn.backends.openvino.quantize import quantize

    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (24, 32, 3), dtype=np.uint8) for _ in range(4)]
    clip = tmp_path / "clip.bin"
    clip.write_bytes(b"stands for the clip")
    entry = quantize(conv_graph, (), frames, clip=str(clip))
    assert entry.manifest["frames"] == 4 and entry.manifest["clip_sha256"] == cache.file_sha256(str(clip))
    x = frames[0][None]
    ref, q = _run(conv_graph, "f32", x), _run(conv_graph, "int8", x)
    assert q.shape == ref.shape and not np.array_equal(q, ref)  # quantized: close, not equal
    assert np.abs(q - ref).max() <= 0.05 * np.abs(ref).max()
    again = quantize(conv_graph, (), frames[:2], clip=str(clip))  # another calibration replaces it
    assert again.path == entry.path and again.manifest["frames"] == 2


def test_models_quantize_command_line_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert models_main(["quantize"]) == 1
    assert "usage: avdnn models quantize NAME --clip FILE [--frames N]" in capsys.readouterr().err
    assert models_main(["quantize", "ssd_mobilenet_v2_coco", "--clip"]) == 1
    assert models_main(["quantize", "ssd_mobilenet_v2_coco", "--clip", "x", "--speed", "2"]) == 1
    capsys.readouterr()
    assert models_main(["quantize", "ssd_mobilenet_v2_coco", "--clip", str(tmp_path / "no.mp4")]) == 1
    assert "No such file or directory" in capsys.readouterr().err
    assert models_main(["quantize", "ssd_mobilenet_v2_coco", "--clip", "x", "--frames", "0"]) == 1
    assert "--frames must be a positive number" in capsys.readouterr().err
    assert models_main(["quantize", "multistyle26", "--clip", "x"]) == 1
    assert "does not run on OpenVINO" in capsys.readouterr().err
