"""The one table of DNN backends, imported lazily, with install hints.

Each row names a backend the way FFmpeg's ``dnn_backend`` option does, its FFmpeg bit id,
the avdnn module and class that implement it, the pip extra that installs its runtime and
the import that proves the runtime is there. ``import avdnn`` imports no runtime; the
backend module itself imports its runtime only when a model is loaded, so its option rows
can be listed (``-h``) without it. Each backend is one row, e.g.::

    BackendSpec("openvino", DNNBackendType.OV, "openvino", "OpenVINOBackend", "openvino", "openvino"),

The native backend needs only numpy; its ``extra`` names no real extra (it is always installed).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from avdnn.dnn.interface import Backend, DNNBackendType
from avdnn.errors import BackendUnavailableError, InvalidArgumentError, NotSupportedError


@dataclass(frozen=True)
class BackendSpec:
    """One backend: FFmpeg name and id, implementing module/class, pip extra, runtime import."""

    name: str
    flag: DNNBackendType
    module: str
    cls: str
    extra: str
    requires: str
    option_group: str = ""
    aliases: tuple[str, ...] = ()
    #: model file endings this backend loads when ``dnn_backend`` is not given (``/`` = a folder)
    suffixes: tuple[str, ...] = ()


#: name -> spec. FFmpeg's names: tensorflow (1), openvino (2), torch (4), onnx (8).
KNOWN_BACKENDS: dict[str, BackendSpec] = {
    spec.name: spec
    for spec in (
        BackendSpec(
            "onnx",
            DNNBackendType.ONNX,
            "onnxruntime",
            "OnnxRuntimeBackend",
            "onnxruntime",
            "onnxruntime",
            "dnn_onnx",
            aliases=("onnxruntime",),
            suffixes=(".onnx",),
        ),
        BackendSpec(
            "openvino",
            DNNBackendType.OV,
            "openvino",
            "OpenVINOBackend",
            "openvino",
            "openvino",
            "dnn_openvino",
            aliases=("ov",),
            suffixes=(".xml",),
        ),
        BackendSpec(
            "torch",
            DNNBackendType.TH,
            "torch",
            "TorchBackend",
            "torch",
            "torch",
            "dnn_th",
            aliases=("pytorch", "libtorch"),
            suffixes=(".pt", ".pt2"),
        ),
        BackendSpec(
            "tensorflow",
            DNNBackendType.TF,
            "tensorflow",
            "TensorFlowBackend",
            "tensorflow",
            "tensorflow",
            "dnn_tensorflow",
            aliases=("tf",),
            suffixes=(".pb", "/"),
        ),
        BackendSpec(
            "tflite",
            DNNBackendType.TFLITE,
            "tflite",
            "TFLiteBackend",
            "tflite",
            "ai_edge_litert",
            "dnn_tflite",
            aliases=("litert",),
            suffixes=(".tflite",),
        ),
        BackendSpec(
            "native",
            DNNBackendType.NATIVE,
            "native",
            "NativeBackend",
            "native",
            "numpy",
            "dnn_native",
            suffixes=(".model",),
        ),
    )
}

#: FFmpeg's dnn_backend constants, whether or not avdnn has the backend yet, plus avdnn's
#: tflite and native (FFmpeg 5.1's native was 0; here it is a mask bit like the others).
FFMPEG_BACKEND_NAMES: dict[str, DNNBackendType] = {
    "tensorflow": DNNBackendType.TF,
    "openvino": DNNBackendType.OV,
    "torch": DNNBackendType.TH,
    "onnx": DNNBackendType.ONNX,
    "tflite": DNNBackendType.TFLITE,
    "native": DNNBackendType.NATIVE,
}

_loaded: dict[str, type[Any]] = {}
#: called after the table changes (the filters rebuild their dnn_backend and backend option rows)
_listeners: list[Callable[[], None]] = []


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` after every register/unregister (the layer above subscribes; no import up)."""
    _listeners.append(listener)


def _changed() -> None:
    for listener in _listeners:
        listener()


def register_backend(spec: BackendSpec) -> None:
    """Add a backend row (plugins, tests); a name or flag may be registered once.

    The filters' ``dnn_backend`` constants, their backend option groups and ``-h`` follow at once.
    """
    if spec.name in KNOWN_BACKENDS or any(s.flag == spec.flag for s in KNOWN_BACKENDS.values()):
        raise InvalidArgumentError(f"DNN backend '{spec.name}' ({int(spec.flag)}) is already registered")
    KNOWN_BACKENDS[spec.name] = spec
    _changed()


def unregister_backend(name: str) -> None:
    KNOWN_BACKENDS.pop(name, None)
    _loaded.pop(name, None)
    _changed()


def backend_for_path(path: str) -> BackendSpec | None:
    """The backend a model file calls for by its name (FFmpeg's lines name no dnn_backend for a .pb).

    A folder is a SavedModel (the row whose suffixes hold ``/``); None when no row claims the name.
    """
    folder = os.path.isdir(path)
    low = path.lower().rstrip("/")
    for spec in KNOWN_BACKENDS.values():
        if any(s == "/" if folder else (s != "/" and low.endswith(s)) for s in spec.suffixes):
            return spec
    return None


def list_backends() -> list[str]:
    return sorted(KNOWN_BACKENDS)


def spec_for(name_or_flag: str | int) -> BackendSpec:
    """The row for a backend name, alias or FFmpeg id; NotSupportedError lists the known ones."""
    for spec in KNOWN_BACKENDS.values():
        if name_or_flag in (spec.name, *spec.aliases) or (isinstance(name_or_flag, int) and name_or_flag == spec.flag):
            return spec
    label = name_or_flag
    if isinstance(name_or_flag, int):
        label = next((n for n, f in FFMPEG_BACKEND_NAMES.items() if f == name_or_flag), str(name_or_flag))
    raise NotSupportedError(
        f"DNN backend '{label}' is not available in avdnn (available: {', '.join(list_backends())})",
        option="dnn_backend",
    )


def is_installed(name: str) -> bool:
    """Whether the backend's runtime can be imported (checked without importing it)."""
    spec = spec_for(name)
    return importlib.util.find_spec(spec.requires) is not None


def backend_class(name_or_flag: str | int, *, check_runtime: bool = True) -> type[Backend]:
    """The backend class; BackendUnavailableError with the pip command when its runtime is missing."""
    spec = spec_for(name_or_flag)
    if check_runtime and importlib.util.find_spec(spec.requires) is None:
        raise BackendUnavailableError(
            f"DNN backend '{spec.name}' needs {spec.requires}, which is not installed: "
            f"pip install 'avdnn[{spec.extra}]'",
            option="dnn_backend",
        )
    cls = _loaded.get(spec.name)
    if cls is None:
        own = f"{__name__}.{spec.module}"  # avdnn's rows name a module of this package, plugins any module
        module = importlib.import_module(own if importlib.util.find_spec(own) is not None else spec.module)
        cls = getattr(module, spec.cls)
        _loaded[spec.name] = cls
    return cls
