"""load_model: a filter's DNN model, its own or its handle on a shared model instance.

Above both kinds it builds (:mod:`avdnn.dnn.model` and :mod:`avdnn.dnn.shared`), so neither
imports the other's entry point.
"""

from __future__ import annotations

from avdnn.dnn.config import DnnConfig, load_backend
from avdnn.dnn.faults import FaultPlan
from avdnn.dnn.interface import Backend, DNNFunctionType
from avdnn.dnn.model import DnnModel
from avdnn.dnn.shared import attach

__all__ = ["load_model"]


def load_model(
    config: DnnConfig,
    func_type: DNNFunctionType = DNNFunctionType.PROCESS_FRAME,
    *,
    backend: type[Backend] | None = None,
    name: str = "dnn",
    faults: FaultPlan | None = None,
) -> DnnModel:
    """Load ``config.model`` with its backend (or ``backend``, e.g. a mock) for ``func_type``.

    With ``config.model_instance`` set, the model is the shared instance of that name in the
    current :class:`~avdnn.dnn.shared.InstanceScope` (loaded by its first filter).
    """
    if config.model_instance:
        return attach(config, func_type, backend=backend, name=name, faults=faults)
    loaded, release = load_backend(config, func_type, backend)
    return DnnModel(loaded, config, func_type, name=name, faults=faults, release=release)
