"""The drive of a DNN filter's model: FFmpeg's execute / get_result / flush loop, the Python way.

:class:`DnnFilter` loads the model at init (options from :mod:`avdnn.filters.dnn_options`, a
zoo entry from :mod:`avdnn.filters.zoo_input`) and runs FFmpeg's activate loop: ``filter``
submits a frame and returns the results that are ready, ``flush`` runs the partial batch and
waits for the rest. Errors keep their real code (FFmpeg rewrites execute failures to EIO; the
seed patches and avdnn do not) and are raised only after every frame before the failure was
returned: when a call has frames to return, the error waits for the next call, and at EOF for
``close``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from avdnn.dnn import DnnModel, Item, load_model
from avdnn.dnn.interface import DNNAsyncStatusType, DNNBackendType, DNNFunctionType
from avdnn.errors import AvdnnError, ExitRequestedError
from avdnn.filters import zoo_input
from avdnn.filters.base import Filter
from avdnn.filters.dnn_options import (
    ALL_BACKENDS,
    dnn_backend_option,
    dnn_config,
    dnn_options,
    follow_table,
    help_rows,
    rebuilt,
)
from avdnn.media.frame import Frame

__all__ = ["ALL_BACKENDS", "DnnFilter", "Item", "dnn_backend_option", "dnn_options"]


class DnnFilter(Filter):
    """Base of the DNN filters: loads the model at init and drives execute/get_result/flush."""

    backend_mask: ClassVar[DNNBackendType] = ALL_BACKENDS
    func_type: ClassVar[DNNFunctionType] = DNNFunctionType.PROCESS_FRAME
    #: the zoo entry behind ``model=zoo:NAME`` (avdnn.zoo.resolve.ZooRef), None for a file
    zoo: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each DNN filter's option rows follow the backend table (register_backend after import)."""
        super().__init_subclass__(**kwargs)
        if "options" in cls.__dict__:

            def refresh(cls: type[DnnFilter] = cls) -> None:
                cls.options = rebuilt(cls.options, cls.backend_mask)

            follow_table(refresh)

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        values = self.resolve_zoo(values, label)
        super().__init__(values, label=label)
        zoo = self.zoo
        #: what the detections' source names: the ``model`` value as given (FFmpeg's header source)
        self.model_source: str = zoo.text if zoo is not None else str(values.get("model") or "")
        self._zoo_pad = zoo.spec.pad if zoo is not None else 0
        if zoo is not None and zoo.spec.pix_fmt:
            self.pix_fmts = (zoo.spec.pix_fmt,)  # type: ignore[misc]  # what the graph converts to first
        self._error: AvdnnError | None = None
        self._error_raised = False
        self._failed_frames = 0
        self._not_processed = 0  # tasks counted as failed after an error, still in the engine
        self._eof = False
        self.config = dnn_config(values, self.backend_mask, label=self.label)
        try:
            self.model: DnnModel | None = load_model(self.config, self.func_type, name=self.label)
        except AvdnnError as exc:
            exc.with_context(filter=self.label)
            raise

    def resolve_zoo(self, values: dict[str, Any], label: str | None) -> dict[str, Any]:
        """``values`` with ``model=zoo:NAME`` resolved; sets ``self.zoo``.

        Idempotent: subclasses that read options before DnnFilter's init call it first.
        """
        values, ref = zoo_input.resolve(values, self.options, filter_name=self.name, label=label)
        if ref is not None:
            self.zoo = ref
        return values

    def push(self, frame: Frame) -> list[Frame]:
        """A zoo entry's edge padding first, then the filter."""
        if self._zoo_pad:
            frame = zoo_input.pad_edges(frame, self._zoo_pad)
        return list(super().push(frame))

    @classmethod
    def help_extra(cls) -> str:
        """``-h filter=NAME``: which of this filter's backends are installed (their options follow)."""
        return help_rows(cls.backend_mask)

    # -- hooks for subclasses -------------------------------------------------------------

    def finish(self, payload: Any, results: tuple[Any, ...]) -> Frame:
        """The output frame of a successful task (default: the first item's result)."""
        return results[0]  # type: ignore[no-any-return]

    # -- driving the model ----------------------------------------------------------------

    def submit(self, payload: Any, items: list[Item]) -> list[Frame]:
        """Execute one task and return the frames that are ready (oldest first)."""
        self.raise_pending()
        assert self.model is not None
        try:
            self.model.execute(payload, items)
        except ExitRequestedError:
            raise  # the run is stopping: not this frame's failure
        except AvdnnError as err:
            self._set_error(err)
            return self._deliver(self._collect(wait=True))
        return self._deliver(self._collect(wait=False))

    def flush(self) -> list[Frame]:
        """EOF: run the partial batch, wait for every result, report the first error."""
        self.raise_pending()
        self._eof = True
        if self.model is None:
            return []
        try:
            self.model.flush()
        except ExitRequestedError:
            raise
        except AvdnnError as err:
            self._set_error(err)
        return self._deliver(self._collect(wait=True))

    @property
    def holding(self) -> int:
        """The frames whose tasks were submitted and not yet returned (the engine counts them),
        less those already counted as failed after an error."""
        model = self.model
        return max(model.queued - self._not_processed, 0) if model is not None else 0

    def interrupt(self) -> None:
        """The run is stopping: cut the engine's waits short and cancel the inferences running."""
        model = self.model
        if model is not None:
            model.interrupt()

    def close(self) -> None:
        """Free the model (bounded wait); an EOF error nobody has heard yet is raised here."""
        model, self.model = self.model, None
        if model is not None:
            model.close()
        if self._eof and self._error is not None and not self._error_raised:
            self.raise_pending()

    def raise_pending(self) -> None:
        """Raise the stored error (the first time also counting the frames it cost)."""
        if self._error is None:
            return
        if not self._error_raised:
            self._error_raised = True
            key = self._error.message
            if self._failed_frames:
                self.failed[key] = self.failed.get(key, 0) + self._failed_frames
            dropped = self.model.queued if self.model is not None else 0
            if dropped:
                self.failed["not processed after an earlier error"] = dropped
                self._not_processed = dropped
        raise self._error

    def _set_error(self, err: AvdnnError) -> None:
        if self._error is None:
            self._error = err.with_context(filter=self.label)

    def _collect(self, wait: bool) -> list[Frame]:
        out: list[Frame] = []
        assert self.model is not None
        while True:
            res = self.model.get_result(wait=wait)
            if res.status == DNNAsyncStatusType.SUCCESS:
                out.append(self.finish(res.payload, res.results))
            elif res.status == DNNAsyncStatusType.FAIL:
                assert res.error is not None
                self._set_error(res.error)
                self._failed_frames += 1
                break
            else:
                break
        return out

    def _deliver(self, frames: list[Frame]) -> list[Frame]:
        if self._error is not None and not frames:
            self.raise_pending()
        return frames
