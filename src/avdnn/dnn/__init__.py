"""avdnn's DNN module: FFmpeg's DNN interface, one shared execution engine, io_proc, backends.

Filters use :func:`load_model` and the :class:`DnnModel` it returns (execute, get_result,
flush, close; with ``model_instance``, a handle on a shared instance: :mod:`.shared`),
:class:`Item` for an inference, and the backend table's read side re-exported here (they
never import ``dnn.backends`` or ``dnn.engine``); backends implement
:class:`~avdnn.dnn.interface.Backend` and are listed in :mod:`avdnn.dnn.backends`. Nothing
here imports a DNN runtime until a model is loaded.
"""

from __future__ import annotations

from avdnn.dnn.backends import (
    FFMPEG_BACKEND_NAMES,
    KNOWN_BACKENDS,
    BackendSpec,
    backend_class,
    backend_for_path,
    is_installed,
    list_backends,
    on_change,
    register_backend,
    spec_for,
    unregister_backend,
)
from avdnn.dnn.config import DEFAULT_BATCH_TIMEOUT, DnnConfig, EngineOptions
from avdnn.dnn.engine import Engine, EngineStats, Item, Result, Task
from avdnn.dnn.interface import (
    DNNAsyncStatusType,
    DNNBackendType,
    DNNColorOrder,
    DNNDataType,
    DNNFunctionType,
    DNNLayout,
    ModelConfig,
    ModelIO,
    TensorInfo,
)
from avdnn.dnn.load import load_model
from avdnn.dnn.model import DnnModel
from avdnn.dnn.shared import InstanceReport, InstanceScope

__all__ = [
    "DEFAULT_BATCH_TIMEOUT",
    "FFMPEG_BACKEND_NAMES",
    "KNOWN_BACKENDS",
    "BackendSpec",
    "DNNAsyncStatusType",
    "DNNBackendType",
    "DNNColorOrder",
    "DNNDataType",
    "DNNFunctionType",
    "DNNLayout",
    "DnnConfig",
    "DnnModel",
    "Engine",
    "EngineOptions",
    "EngineStats",
    "InstanceReport",
    "InstanceScope",
    "Item",
    "ModelConfig",
    "ModelIO",
    "Result",
    "Task",
    "TensorInfo",
    "backend_class",
    "backend_for_path",
    "is_installed",
    "list_backends",
    "load_model",
    "on_change",
    "register_backend",
    "spec_for",
    "unregister_backend",
]
