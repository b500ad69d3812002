"""MockBackend: a backend over a plain function, to test the engine and filters without a runtime.

``MockBackend(fn)`` is a loaded model whose ``run(batch)`` returns ``fn(batch)`` (one array or
a list of arrays); it records the batch sizes it saw and how many runs overlapped. Pass
``mock.as_backend()`` wherever a backend class is expected (``load_model(..., backend=...)``).
It is not in the backend table: it is a test double, not a runtime.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.interface import (
    DYNAMIC,
    BackendOption,
    DNNBackendType,
    DNNDataType,
    DNNFunctionType,
    ModelConfig,
    ModelIO,
    TensorInfo,
)

MockFn = Callable[[np.ndarray], "np.ndarray | Sequence[np.ndarray]"]
_ANY4 = (DYNAMIC, DYNAMIC, DYNAMIC, DYNAMIC)


class MockBackend:
    """A BackendModel over ``fn``; thread-safe bookkeeping of what it was asked to run."""

    name: ClassVar[str] = "mock"
    flag: ClassVar[DNNBackendType] = DNNBackendType(0)
    options: ClassVar[tuple[BackendOption, ...]] = ()
    func_types: ClassVar[frozenset[DNNFunctionType]] = frozenset(DNNFunctionType)

    def __init__(
        self,
        fn: MockFn,
        *,
        inputs: TensorInfo | None = None,
        outputs: Sequence[TensorInfo] | None = None,
        supports_async: bool = True,
    ) -> None:
        self.fn = fn
        self.supports_async = supports_async
        self._io = ModelIO(
            (inputs or TensorInfo("x", _ANY4, DNNDataType.FLOAT, "tensor(float)"),),
            tuple(outputs or (TensorInfo("y", _ANY4, DNNDataType.FLOAT, "tensor(float)"),)),
        )
        self.batch_sizes: list[int] = []
        self.active = 0
        self.max_active = 0
        self.closed = False
        self.config: ModelConfig | None = None
        self._lock = threading.Lock()

    def as_backend(self) -> Any:
        """A backend class whose ``load`` returns this very mock (and remembers the config)."""
        mock = self

        class _Loaded(MockBackend):
            @classmethod
            def load(cls, config: ModelConfig) -> MockBackend:
                mock.config = config
                return mock

        return _Loaded

    def describe(self) -> ModelIO:
        return self._io

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        with self._lock:
            self.batch_sizes.append(int(batch.shape[0]))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            out = self.fn(batch)
        finally:
            with self._lock:
                self.active -= 1
        return [out] if isinstance(out, np.ndarray) else list(out)

    def close(self) -> None:
        self.closed = True
