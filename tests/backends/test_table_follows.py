"""The backend table drives the filters: a backend registered after import, and the model file's backend."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
from bkutil import identity_onnx

from avdnn.cli.help import help_text
from avdnn.dnn import BackendSpec, backend_for_path, register_backend, unregister_backend
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.interface import BackendOption, DNNBackendType, ModelConfig
from avdnn.errors import AVERROR, InvalidArgumentError
from avdnn.filters.options import bind_options
from avdnn.filters.registry import KNOWN_FILTERS, get_filter
from avdnn.media.frame import Frame

PLUGIN = DNNBackendType(64)
DNN_FILTERS = [n for n in KNOWN_FILTERS if n.startswith("dnn_") or n in ("sr", "derain")]


class PluginBackend(MockBackend):
    """A backend from outside avdnn: inverts its input, has one option of its own."""

    name: ClassVar[str] = "plugin"
    flag: ClassVar[DNNBackendType] = PLUGIN
    options: ClassVar[tuple[BackendOption, ...]] = (BackendOption("plugin_knob", "int", 3, 0, 9, "a plugin option"),)
    loaded: ClassVar[list[ModelConfig]] = []

    @classmethod
    def load(cls, config: ModelConfig) -> PluginBackend:
        cls.loaded.append(config)
        return cls(lambda b: 1.0 - b)


@pytest.fixture
def plugin() -> Iterator[BackendSpec]:
    spec = BackendSpec(
        "plugin", PLUGIN, __name__, "PluginBackend", "plugin", "numpy", "dnn_plugin", suffixes=(".plug",)
    )
    register_backend(spec)
    try:
        yield spec
    finally:
        unregister_backend("plugin")


@pytest.mark.parametrize("name", DNN_FILTERS)
def test_a_backend_registered_after_import_reaches_every_dnn_filter(plugin: BackendSpec, name: str) -> None:
    cls = get_filter(name)
    row = cls.option("dnn_backend")
    assert row.consts["plugin"] == 64 and row.max is not None and row.max >= 64
    assert cls.option("plugin_knob").group == "dnn_plugin"
    text = help_text(f"filter={name}")
    assert "plugin      (64) installed; options: dnn_plugin" in text
    assert "dnn_plugin AVOptions:" in text and "plugin_knob" in text
    unregister_backend("plugin")
    with pytest.raises(KeyError):
        cls.option("plugin_knob")
    assert "plugin" not in cls.option("dnn_backend").consts
    assert "plugin" not in help_text(f"filter={name}")
    register_backend(plugin)  # the fixture unregisters it again


def _frames() -> list[Frame]:
    rng = np.random.default_rng(0)
    return [Frame.from_planes([rng.integers(0, 256, (8, 10, 3), dtype=np.uint8)], "rgb24", pts=0)]


def _filter(name: str, **options: Any) -> Any:
    cls = get_filter(name)
    values = bind_options(cls.options, [(k, str(v)) for k, v in options.items()], filter_name=name)
    return cls(values, label=name)


def test_the_registered_backend_runs_by_name_and_by_its_file_suffix(plugin: BackendSpec, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "m.plug"
    path.write_bytes(b"")
    PluginBackend.loaded.clear()
    for options in ({"dnn_backend": "plugin", "plugin_knob": 7}, {}):
        f = _filter("dnn_processing", model=path, **options)
        out = list(f.push(_frames()[0])) + list(f.flush())
        f.close()
        assert len(out) == 1
        np.testing.assert_array_equal(out[0].planes[0], 255 - _frames()[0].planes[0])
    assert [c.options["plugin_knob"] for c in PluginBackend.loaded] == [7, 3]


@pytest.mark.parametrize(
    "path,backend",
    [
        ("espcn.pb", "tensorflow"),
        ("m.xml", "openvino"),
        ("m.pt", "torch"),
        ("m.pt2", "torch"),
        ("m.onnx", "onnx"),
        ("M.ONNX", "onnx"),
        ("m.tflite", "tflite"),
        ("m.model", "native"),
    ],
)
def test_backend_for_path(path: str, backend: str) -> None:
    found = backend_for_path(path)
    assert found is not None and found.name == backend


def test_a_folder_is_a_savedmodel_and_other_names_have_no_backend(tmp_path) -> None:  # type: ignore[no-untyped-def]
    found = backend_for_path(str(tmp_path))
    assert found is not None and found.name == "tensorflow"
    assert backend_for_path(os.path.join(str(tmp_path), "weights.bin")) is None


def test_an_explicit_dnn_backend_wins_over_the_file_and_an_inferred_one_is_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    odd = tmp_path / "identity.pb"  # an ONNX file under a TensorFlow name
    os.replace(identity_onnx(tmp_path), odd)
    f = _filter("dnn_processing", model=odd, dnn_backend="onnx")
    assert f.config.backend == "onnx"
    f.close()
    # left unset, the .pb name calls for TensorFlow (which finds no placeholder in these bytes)
    with pytest.raises(InvalidArgumentError, match="placeholders: none") as info:
        _filter("dnn_processing", model=odd)
    assert info.value.code == AVERROR(errno.EINVAL) and info.value.file == str(odd)
    # a backend the filter does not take: the usual error, given or inferred
    with pytest.raises(InvalidArgumentError, match="cannot run this filter"):
        from avdnn.filters.dnn_options import chosen_backend

        chosen_backend({"model": str(tmp_path / "m.tflite")}, DNNBackendType.TF, label="sr")
