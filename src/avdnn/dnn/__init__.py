"""avdnn's DNN module: FFmpeg's DNN interface, one shared execution engine, io_proc, backends.

Filters use :func:`load_model` and the :class:`DnnModel` it returns (execute, get_result,
flush, close); backends implement :class:`~avdnn.dnn.interface.Backend` and are listed in
:mod:`avdnn.dnn.backends`. Nothing here imports a DNN runtime until a model is loaded.
"""

from __future__ import annotations

from .engine import Engine, EngineStats, Item, Result, Task
from .interface import (
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
from .model import DnnConfig, DnnModel, load_model

__all__ = [
    "DNNAsyncStatusType", "DNNBackendType", "DNNColorOrder", "DNNDataType", "DNNFunctionType",
    "DNNLayout", "DnnConfig", "DnnModel", "Engine", "EngineStats", "Item", "ModelConfig", "ModelIO",
    "Result", "Task", "TensorInfo", "load_model",
]
