"""What every DNN filter shares: FFmpeg's ``dnn_base`` options and the drive of the DNN model.

Options (reference s.2.1), with FFmpeg's names, defaults and ranges: ``model``, ``input``,
``output`` (``&``-separated, at most 4), ``backend_configs``/``options`` (deprecated
``k=v&k2=v2``, applied to the selected backend's own options only), ``nireq`` (0 = auto:
CPU count / 2 + 1), ``async`` (1), ``batch_size`` (1..1000), ``device``, ``device_id``; then
each backend's own group (``dnn_onnx``: ``threads_per_operation``...), settable directly on
the filter. Deliberate difference: ``dnn_backend`` defaults to ``onnx`` (FFmpeg: tensorflow),
because ONNX Runtime is avdnn's core runtime.

:class:`DnnFilter` runs FFmpeg's activate loop the Python way: ``filter`` submits a frame and
returns the results that are ready, ``flush`` runs the partial batch and waits for the rest.
Errors keep their real code (FFmpeg rewrites execute failures to EIO; the seed patches and
avdnn do not) and are raised only after every frame before the failure was returned: when a
call has frames to return, the error waits for the next call, and at EOF for ``close``.

``model=zoo:NAME`` (:mod:`avdnn.zoo`) is resolved here, before anything reads the options, so
every DNN filter takes zoo models alike; the entry may also ask for a pixel format (converted
as libavfilter's negotiation would) and edge padding (valid-convolution models).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np

from ..dnn import DnnConfig, DnnModel, load_model
from ..dnn.backends import FFMPEG_BACKEND_NAMES, KNOWN_BACKENDS, backend_class
from ..dnn.engine import Item
from ..dnn.interface import DNNAsyncStatusType, DNNBackendType, DNNFunctionType
from ..errors import AvdnnError, ExitRequestedError, InvalidArgumentError, OptionNotFoundError
from ..media.frame import Frame
from ..media.pixfmt import lookup
from .base import Filter
from .options import INT_MAX, INT_MIN, Option, did_you_mean

log = logging.getLogger("avdnn.filters")

ALL_BACKENDS = (DNNBackendType.TF | DNNBackendType.OV | DNNBackendType.TH | DNNBackendType.ONNX
                | DNNBackendType.TFLITE | DNNBackendType.NATIVE)
MAX_OUTPUTS = 4

DNN_BASE_OPTIONS: tuple[Option, ...] = (
    Option("model", "string", None, help="path to model file", group="dnn_base"),
    Option("input", "string", None, help="input name of the model", group="dnn_base"),
    Option("output", "string", None, help="output name of the model (several separated by '&')", group="dnn_base"),
    Option("backend_configs", "string", None, help="backend configs (deprecated)", aliases=("options",),
           group="dnn_base", deprecated=True),
    Option("nireq", "int", 0, 0, INT_MAX, help="number of request (0 = auto)", group="dnn_base"),
    Option("async", "bool", True, 0, 1, help="use DNN async inference", group="dnn_base"),
    Option("batch_size", "int", 1, 1, 1000, help="batch size per request", group="dnn_base"),
    Option("device", "string", None, help="device to run model", group="dnn_base"),
    Option("device_id", "int", 0, 0, INT_MAX, help="device id (onnx: cuda/dml)", group="dnn_base"),
)


def dnn_backend_option(mask: DNNBackendType, default: DNNBackendType = DNNBackendType.ONNX,
                       lo: float = INT_MIN, hi: float = INT_MAX) -> Option:
    """A filter's own ``dnn_backend`` option: FFmpeg's constants for the backends in ``mask``."""
    consts = {n: int(f) for n, f in FFMPEG_BACKEND_NAMES.items() if f & mask}
    for spec in KNOWN_BACKENDS.values():  # avdnn's own backends (no FFmpeg name) by their table name
        if spec.flag & mask:
            consts.setdefault(spec.name, int(spec.flag))
    return Option("dnn_backend", "int", int(default), lo, hi, help="DNN backend", consts=consts)


def backend_options(mask: DNNBackendType) -> tuple[Option, ...]:
    """Each registered backend's own options (FFmpeg's child AVClasses), in table order.

    A name two backends share is listed once (FFmpeg finds the first child that has it)
    and applied to whichever backend is selected.
    """
    rows: list[Option] = []
    seen = {o.name for o in DNN_BASE_OPTIONS}
    for spec in KNOWN_BACKENDS.values():
        if not spec.flag & mask:
            continue
        for bo in backend_class(spec.name, check_runtime=False).options:
            if bo.name in seen:
                continue
            seen.add(bo.name)
            rows.append(Option(bo.name, bo.type, bo.default, bo.min, bo.max, bo.help, dict(bo.consts),
                               group=spec.option_group or f"dnn_{spec.name}"))
    return tuple(rows)


def dnn_options(mask: DNNBackendType) -> tuple[Option, ...]:
    """dnn_base followed by the backend groups of ``mask``."""
    return (*DNN_BASE_OPTIONS, *backend_options(mask))


def dnn_config(values: dict[str, Any], mask: DNNBackendType, *, label: str) -> DnnConfig:
    """Typed DnnConfig from bound option values; FFmpeg's init-time checks (EINVAL)."""
    model = values.get("model")
    if not model:
        raise InvalidArgumentError("model file for network is not specified", filter=label, option="model")
    backend = values.get("dnn_backend", int(DNNBackendType.ONNX))
    cls = backend_class(backend)
    spec = next(s for s in KNOWN_BACKENDS.values() if s.flag == cls.flag)
    if not spec.flag & mask:
        raise InvalidArgumentError(f"DNN backend '{spec.name}' cannot run this filter", filter=label,
                                   option="dnn_backend")
    outputs: tuple[str, ...] = ()
    if values.get("output"):
        outputs = tuple(values["output"].split("&"))
        if len(outputs) > MAX_OUTPUTS or not all(outputs):
            raise InvalidArgumentError(f"could not parse model output names '{values['output']}' "
                                       f"(at most {MAX_OUTPUTS}, separated by '&')", filter=label, option="output")
    own = {o.name: o for o in cls.options}
    opts = {name: values.get(name, o.default) for name, o in own.items()}
    if values.get("backend_configs"):
        log.warning("%s: backend_configs is deprecated, set the backend options directly", label)
        opts.update(_parse_backend_configs(values["backend_configs"], own, label))
    return DnnConfig(
        model=str(model), backend=spec.name, input=values.get("input") or None, outputs=outputs,
        async_mode=bool(values.get("async", True)), nireq=int(values.get("nireq", 0)),
        batch_size=int(values.get("batch_size", 1)), device=values.get("device") or None,
        device_id=int(values.get("device_id", 0)), backend_options=opts,
    )


def _parse_backend_configs(text: str, own: dict[str, Any], label: str) -> dict[str, Any]:
    """``k=v&k2=v2`` against the selected backend's options only (as FFmpeg since 2024)."""
    out: dict[str, Any] = {}
    for pair in filter(None, text.split("&")):
        key, sep, value = pair.partition("=")
        if not sep or key not in own:
            raise OptionNotFoundError(
                f"backend_configs: option '{key}' not found for this backend{did_you_mean(key, own)}",
                filter=label, option="backend_configs",
            )
        o = own[key]
        row = Option(o.name, o.type, o.default, o.min, o.max, consts=dict(o.consts))
        try:
            out[key] = row.parse(value)
        except AvdnnError as exc:
            raise exc.with_context(filter=label, option="backend_configs")
    return out


class DnnFilter(Filter):
    """Base of the DNN filters: loads the model at init and drives execute/get_result/flush."""

    backend_mask: ClassVar[DNNBackendType] = ALL_BACKENDS
    func_type: ClassVar[DNNFunctionType] = DNNFunctionType.PROCESS_FRAME
    #: the zoo entry behind ``model=zoo:NAME`` (avdnn.zoo.resolve.ZooRef), None for a file
    zoo: Any = None

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        values = self.resolve_zoo(values, label)
        super().__init__(values, label=label)
        zoo = self.zoo
        #: what the detections' source names: the ``model`` value as given (FFmpeg's header source)
        self.model_source: str = zoo.text if zoo is not None else str(values.get("model") or "")
        self._zoo_fmt = zoo.spec.pix_fmt if zoo is not None else None
        self._zoo_pad = zoo.spec.pad if zoo is not None else 0
        if self._zoo_fmt:
            self.pix_fmts = (self._zoo_fmt,)  # type: ignore[misc]  # what auto_format converts to before this filter
        self._error: AvdnnError | None = None
        self._error_raised = False
        self._failed_frames = 0
        self._eof = False
        self.config = dnn_config(values, self.backend_mask, label=self.label)
        try:
            self.model: DnnModel | None = load_model(self.config, self.func_type, name=self.label)
        except AvdnnError as exc:
            raise exc.with_context(filter=self.label)

    def resolve_zoo(self, values: dict[str, Any], label: str | None) -> dict[str, Any]:
        """``values`` with ``model=zoo:NAME`` resolved (:func:`avdnn.zoo.apply`); sets ``self.zoo``.

        Idempotent: subclasses that read options before DnnFilter's init call it first.
        """
        from ..zoo.resolve import apply, is_zoo_ref

        if not is_zoo_ref(values.get("model")):
            return values
        try:
            values, self.zoo = apply(values, self.options, filter_name=self.name,
                                     backend_name=lambda v: backend_class(v, check_runtime=False).name)
        except AvdnnError as exc:
            raise exc.with_context(filter=label or self.name)
        return values

    def push(self, frame: Frame) -> list[Frame]:  # type: ignore[override]
        """A zoo entry's pixel format and edge padding first, then the filter."""
        if self._zoo_fmt and frame.format != self._zoo_fmt:
            converted = Frame.from_av(frame.to_av().reformat(format=self._zoo_fmt))
            frame = Frame.from_planes(converted.planes, self._zoo_fmt, pts=frame.pts, time_base=frame.time_base,
                                      duration=frame.duration, sample_aspect_ratio=frame.sample_aspect_ratio,
                                      side_data=frame.side_data.copy())  # colour props are the new format's
        if self._zoo_pad:
            frame = pad_edges(frame, self._zoo_pad)
        return list(super().push(frame))

    @classmethod
    def help_extra(cls) -> str:
        """``-h filter=NAME``: which of this filter's backends are installed (their options follow)."""
        from ..dnn.backends import is_installed

        rows = []
        for spec in KNOWN_BACKENDS.values():
            if spec.flag & cls.backend_mask:
                state = "installed" if is_installed(spec.name) else f"not installed: pip install 'avdnn[{spec.extra}]'"
                rows.append(f"    {spec.name:<11} ({int(spec.flag):>2}) {state}; options: {spec.option_group}")
        return "  DNN backends:\n" + "\n".join(rows)

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
            dropped = self.model.engine.queued if self.model is not None else 0
            if dropped:
                self.failed["not processed after an earlier error"] = dropped
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



def pad_edges(frame: Frame, pad: int) -> Frame:
    """``frame`` with its edge pixels repeated ``pad`` times on every side (fillborders=mode=smear).

    For valid-convolution models (waifu2x upconv_7 loses 7 px per side): numpy's edge mode per
    plane; a chroma plane gets ``pad`` shifted by its subsampling (which must divide it).
    """
    spec = lookup(frame.format)
    planes = []
    for pspec, plane in zip(spec.planes, frame.planes, strict=True):
        px, py = pad >> pspec.log2_w, pad >> pspec.log2_h
        if px << pspec.log2_w != pad or py << pspec.log2_h != pad:
            raise InvalidArgumentError(f"cannot pad {frame.format} frames by {pad} px (chroma subsampling)")
        widths = [(py, py), (px, px)] + [(0, 0)] * (plane.ndim - 2)
        planes.append(np.pad(plane, widths, mode="edge"))
    return frame.with_planes(planes)
