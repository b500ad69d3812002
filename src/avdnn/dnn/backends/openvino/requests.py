"""OpenVINOBackend: one compiled OpenVINO model's infer requests, run sync or async for the engine.

Async uses OpenVINO's own infer requests (``start_async`` + completion callback on
OpenVINO's threads). OpenVINO's Python callback is not called when an inference fails, so
one watcher thread also waits on every started request: whichever learns the outcome first
completes the engine's items, so every exit path completes them. Output tensors are copied
before their request is reused.
A cancelled backend (``cancel``) cancels the requests running and refuses later ones.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.backends._common import OnceDone, Pool, run_and_report, split_batch
from avdnn.dnn.backends.openvino.loading import OPTIONS, CompiledModel, compile_model, ov_error
from avdnn.dnn.interface import (
    ALL_FUNCTION_TYPES,
    BackendOption,
    DNNBackendType,
    DNNFunctionType,
    DoneCallback,
    ModelConfig,
    ModelIO,
)
from avdnn.errors import AvdnnError, ExternalError, InvalidArgumentError

__all__ = ["OpenVINOBackend"]


class OpenVINOBackend:
    """One compiled OpenVINO model and its pool of infer requests."""

    name: ClassVar[str] = "openvino"
    flag: ClassVar[DNNBackendType] = DNNBackendType.OV
    func_types: ClassVar[frozenset[DNNFunctionType]] = ALL_FUNCTION_TYPES
    options: ClassVar[tuple[BackendOption, ...]] = OPTIONS
    supports_async = True

    def __init__(self, config: ModelConfig, model: CompiledModel) -> None:
        self.config = config
        self._compiled = model.compiled
        self._io = model.io
        self._order = model.outputs
        self._folded = model.folded
        #: the precision it was compiled with (f32, bf16, f16, int8), for messages and benchmarks
        self.precision = model.precision
        self._item_by_item = model.item_by_item
        self._in_shape = model.compiled.inputs[0].get_partial_shape()
        self._pool: Pool[Any] = Pool(model.compiled.create_infer_request)
        self._watch: queue.Queue[tuple[Any, OnceDone] | None] | None = None
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()
        self._cancelled = False

    @classmethod
    def load(cls, config: ModelConfig) -> OpenVINOBackend:
        """Read, reshape, add pre/post-processing and compile the model (:mod:`.loading`)."""
        return cls(config, compile_model(config))

    def describe(self) -> ModelIO:
        return self._io

    # -- running --------------------------------------------------------------------------

    def _check(self, batch: np.ndarray) -> None:
        """Refuse a batch OpenVINO would fail on later (its async failures have no callback)."""
        import openvino as ov

        if not self._in_shape.compatible(ov.PartialShape(list(batch.shape))):
            raise InvalidArgumentError(
                f"input {list(batch.shape)} does not fit the model input {self._in_shape}", file=self.config.path
            )

    def _shape_only(self, batch: np.ndarray) -> list[np.ndarray]:
        """The outputs that follow the input's shape only (:mod:`.folding`), for this batch."""
        if self._folded is None:
            return []
        with ov_error(f"inference with '{self.config.path}'", self.config.path):
            return self._folded.values(batch)

    def _outputs(self, req: Any, shaped: list[np.ndarray]) -> list[np.ndarray]:
        return [
            shaped[i] if folded else np.array(req.get_output_tensor(i).data, copy=True) for folded, i in self._order
        ]

    def _run_one(self, batch: np.ndarray) -> list[np.ndarray]:
        shaped = self._shape_only(batch)
        with self._pool.use() as req, ov_error(f"inference with '{self.config.path}'", self.config.path):
            self._refuse_if_cancelled()
            req.infer({0: batch}, share_inputs=True)
            return self._outputs(req, shaped)

    def _refuse_if_cancelled(self) -> None:
        if self._cancelled:
            raise ExternalError(f"inference with '{self.config.path}': cancelled", file=self.config.path)

    def cancel(self) -> None:
        """Cancel the requests running now (``InferRequest.cancel``); later runs fail at once."""
        with self._lock:
            self._cancelled = True
            for req in self._pool.busy():
                req.cancel()

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        """One synchronous inference over ``batch`` on a pooled infer request."""
        self._check(batch if not self._item_by_item else batch[:1])
        if self._item_by_item:
            return split_batch(self._run_one, batch)
        return self._run_one(batch)

    def run_async(self, batch: np.ndarray, done: DoneCallback) -> None:
        """Start ``batch`` on an OpenVINO request; ``done`` is called exactly once, from any thread."""
        if self._item_by_item and batch.shape[0] > 1:
            # the engine's worker-thread path for a model that cannot take the whole batch
            threading.Thread(target=run_and_report, args=(self.run, batch, done), daemon=True).start()
            return
        self._check(batch)
        shaped = self._shape_only(batch)
        job = OnceDone(done)
        req = self._pool.take()
        try:
            with self._lock, ov_error(f"starting inference with '{self.config.path}'", self.config.path):
                self._refuse_if_cancelled()  # under the lock: cancel() sees every started request
                req.set_callback(self._callback, (req, job, shaped))
                req.start_async({0: batch}, share_inputs=True)
        except BaseException:
            self._pool.give(req)
            raise
        self._watch_request(req, job)

    def _callback(self, userdata: tuple[Any, OnceDone, list[np.ndarray]]) -> None:
        req, job, shaped = userdata
        try:
            outputs = self._outputs(req, shaped)
        except BaseException as exc:  # noqa: BLE001 - reported to the engine, never lost on OpenVINO's thread
            job.finish(None, exc)
        else:
            job.finish(outputs, None)

    def _watch_request(self, req: Any, job: OnceDone) -> None:
        with self._lock:
            if self._watcher is None:
                self._watch = queue.Queue()
                self._watcher = threading.Thread(target=self._watch_loop, name="avdnn-openvino-watch", daemon=True)
                self._watcher.start()
            assert self._watch is not None
            self._watch.put((req, job))

    def _watch_loop(self) -> None:
        assert self._watch is not None
        while (entry := self._watch.get()) is not None:
            req, job = entry
            try:
                with ov_error(f"inference with '{self.config.path}'", self.config.path):
                    req.wait()
            except AvdnnError as err:
                job.finish(None, err)
            if not job.wait(5.0):  # OpenVINO reported success but its callback never came
                job.finish(None, RuntimeError("OpenVINO request ended without its completion callback"))
            self._pool.give(req)

    def close(self) -> None:
        with self._lock:
            watcher, self._watcher = self._watcher, None
            if self._watch is not None:
                self._watch.put(None)
        if watcher is not None:
            watcher.join(timeout=10.0)
        self._pool.clear()
        self._compiled = None
        self._folded = None
