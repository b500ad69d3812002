"""FFmpeg's ``dnn_base`` options, each DNN filter's ``dnn_backend`` row and the backends' own groups.

Options (reference s.2.1), with FFmpeg's names, defaults and ranges: ``model``, ``input``,
``output`` (``&``-separated, at most 4), ``backend_configs``/``options`` (deprecated
``k=v&k2=v2``, applied to the selected backend's own options only), ``nireq`` (0 = auto),
``async`` (1), ``batch_size`` (1..1000), ``device``, ``device_id``, and avdnn's
``model_instance`` / ``batch_timeout`` (a model shared across chains, :mod:`avdnn.dnn.shared`);
then each backend's own group (``dnn_onnx``: ``threads_per_operation``...), settable directly
on the filter.

``dnn_backend`` left unset follows the model file, so FFmpeg's command lines run unchanged
(``sr=model=espcn.pb`` runs on TensorFlow): ``.pb`` or a SavedModel folder tensorflow,
``.xml`` openvino, ``.pt``/``.pt2`` torch, ``.onnx`` onnx, ``.tflite`` tflite, ``.model``
native (each backend row's ``suffixes``); a file no row claims gets the filter's FFmpeg
default. An explicit ``dnn_backend`` always wins, and a backend the filter does not take is
refused the same way whether it was given or inferred.

The rows follow the backend table: :func:`avdnn.dnn.register_backend` after import reaches
every DNN filter's ``dnn_backend`` constants, its backend option groups and ``-h``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from avdnn.dnn import (
    DEFAULT_BATCH_TIMEOUT,
    FFMPEG_BACKEND_NAMES,
    KNOWN_BACKENDS,
    BackendSpec,
    DnnConfig,
    backend_class,
    backend_for_path,
    on_change,
    spec_for,
)
from avdnn.dnn.interface import DNNBackendType
from avdnn.errors import AvdnnError, InvalidArgumentError, OptionNotFoundError
from avdnn.filters.options import INT_MAX, INT_MIN, Option, did_you_mean
from avdnn.zoo.resolve import COLON_FORM

log = logging.getLogger("avdnn.filters")

#: every backend of the table, also one registered later (a mask of all bits)
ALL_BACKENDS = DNNBackendType(INT_MAX)
MAX_OUTPUTS = 4
MAX_BATCH_TIMEOUT = 60.0

DNN_BASE_OPTIONS: tuple[Option, ...] = (
    Option("model", "string", None, help="path to model file", group="dnn_base", joins_bare=(COLON_FORM,), reads=True),
    Option("input", "string", None, help="input name of the model", group="dnn_base"),
    Option("output", "string", None, help="output name of the model (several separated by '&')", group="dnn_base"),
    Option(
        "backend_configs",
        "string",
        None,
        help="backend configs (deprecated)",
        aliases=("options",),
        group="dnn_base",
        deprecated=True,
    ),
    Option("nireq", "int", 0, 0, INT_MAX, help="number of request (0 = auto: from the usable cores)", group="dnn_base"),
    Option("async", "bool", True, 0, 1, help="use DNN async inference", group="dnn_base"),
    Option("batch_size", "int", 1, 1, 1000, help="batch size per request", group="dnn_base"),
    Option("device", "string", None, help="device to run model", group="dnn_base"),
    Option("device_id", "int", 0, 0, INT_MAX, help="device id (onnx: cuda/dml)", group="dnn_base"),
    Option(
        "model_instance",
        "string",
        None,
        help="share one loaded model and its batches with the DNN filters naming it (avdnn)",
        group="dnn_base",
    ),
    Option(
        "batch_timeout",
        "duration",
        DEFAULT_BATCH_TIMEOUT,
        0,
        MAX_BATCH_TIMEOUT,
        help="longest wait for a shared instance's batch to fill (avdnn; needs model_instance)",
        group="dnn_base",
    ),
)


@dataclass(frozen=True)
class BackendChoice(Option):
    """A filter's ``dnn_backend`` row, remembering how it was made so it can follow the table."""

    mask: DNNBackendType = ALL_BACKENDS
    bounded: bool = False


def dnn_backend_option(
    mask: DNNBackendType, default: DNNBackendType = DNNBackendType.ONNX, *, bounded: bool = False
) -> BackendChoice:
    """A filter's own ``dnn_backend`` option: FFmpeg's constants for the backends in ``mask``.

    ``bounded``: the range is 0..the highest flag of ``mask`` (sr/derain, FFmpeg's 0..1 grown
    by avdnn's backends), otherwise INT_MIN..INT_MAX as in FFmpeg's other DNN filters.
    """
    consts = {n: int(f) for n, f in FFMPEG_BACKEND_NAMES.items() if f & mask}
    for spec in KNOWN_BACKENDS.values():  # avdnn's own backends (no FFmpeg name) by their table name
        if spec.flag & mask:
            consts.setdefault(spec.name, int(spec.flag))
    lo, hi = (0, max(consts.values(), default=0)) if bounded else (INT_MIN, INT_MAX)
    return BackendChoice(
        "dnn_backend",
        "int",
        int(default),
        lo,
        hi,
        help="DNN backend (unset: the model file's)",
        consts=consts,
        mask=mask,
        bounded=bounded,
    )


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
        try:
            cls = backend_class(spec.name, check_runtime=False)
        except ModuleNotFoundError:  # a plugin's row whose module is not installed: nothing to list
            continue
        for bo in cls.options:
            if bo.name in seen:
                continue
            seen.add(bo.name)
            rows.append(
                Option(bo.name, bo.type, bo.default, bo.min, bo.max, bo.help, dict(bo.consts), group=_group(spec))
            )
    return tuple(rows)


def _group(spec: BackendSpec) -> str:
    return spec.option_group or f"dnn_{spec.name}"


def _is_backend_row(row: Option) -> bool:
    return row.group.startswith("dnn_") and row.group != "dnn_base"


def dnn_options(mask: DNNBackendType) -> tuple[Option, ...]:
    """dnn_base followed by the backend groups of ``mask``."""
    return (*DNN_BASE_OPTIONS, *backend_options(mask))


def rebuilt(rows: tuple[Option, ...], mask: DNNBackendType) -> tuple[Option, ...]:
    """``rows`` with the dnn_backend row and the backend groups made again from the table now."""
    out: list[Option] = []
    placed = False
    for row in rows:
        if isinstance(row, BackendChoice):
            out.append(
                replace(
                    row,
                    **{
                        k: getattr(dnn_backend_option(row.mask, DNNBackendType(row.default), bounded=row.bounded), k)
                        for k in ("min", "max", "consts")
                    },
                )
            )
        elif _is_backend_row(row):
            if not placed:
                out.extend(backend_options(mask))
                placed = True
        else:
            out.append(row)
    if not placed and any(r.group == "dnn_base" for r in rows):
        last = max(i for i, r in enumerate(out) if r.group == "dnn_base")
        out[last + 1 : last + 1] = backend_options(mask)
    return tuple(out)


_followers: list[Callable[[], None]] = []


def follow_table(refresh: Callable[[], None]) -> None:
    """Run ``refresh`` whenever the backend table changes (a DNN filter class rebuilding its rows)."""
    if not _followers:
        on_change(_refresh_all)
    _followers.append(refresh)


def _refresh_all() -> None:
    for refresh in _followers:
        refresh()


def chosen_backend(values: dict[str, Any], mask: DNNBackendType, *, label: str) -> BackendSpec:
    """The backend given, or the one the model file calls for; refused when the filter does not take it."""
    given = getattr(values, "given", None)
    explicit = "dnn_backend" in given if given is not None else "dnn_backend" in values
    model = str(values.get("model") or "")
    spec = None if explicit else backend_for_path(model)
    if spec is None:
        spec = spec_for(backend_class(values.get("dnn_backend", int(DNNBackendType.ONNX))).flag)
    else:
        log.debug("%s: dnn_backend=%s from the model file '%s'", label, spec.name, model)
        backend_class(spec.name)  # the runtime is installed, or the pip command
    if not spec.flag & mask:
        raise InvalidArgumentError(
            f"DNN backend '{spec.name}' cannot run this filter", filter=label, option="dnn_backend"
        )
    return spec


def dnn_config(values: dict[str, Any], mask: DNNBackendType, *, label: str) -> DnnConfig:
    """Typed DnnConfig from bound option values; FFmpeg's init-time checks (EINVAL)."""
    model = values.get("model")
    if not model:
        raise InvalidArgumentError("model file for network is not specified", filter=label, option="model")
    spec = chosen_backend(values, mask, label=label)
    cls = backend_class(spec.name)
    outputs: tuple[str, ...] = ()
    if values.get("output"):
        outputs = tuple(values["output"].split("&"))
        if len(outputs) > MAX_OUTPUTS or not all(outputs):
            raise InvalidArgumentError(
                f"could not parse model output names '{values['output']}' (at most {MAX_OUTPUTS}, separated by '&')",
                filter=label,
                option="output",
            )
    own = {o.name: o for o in cls.options}
    opts = {name: values.get(name, o.default) for name, o in own.items()}
    if values.get("backend_configs"):
        log.warning("%s: backend_configs is deprecated, set the backend options directly", label)
        opts.update(_parse_backend_configs(values["backend_configs"], own, label))
    instance = values.get("model_instance") or None
    if instance is None and _given(values, "batch_timeout", DEFAULT_BATCH_TIMEOUT):
        raise InvalidArgumentError(
            "batch_timeout applies to a shared model only: set model_instance too",
            filter=label,
            option="batch_timeout",
        )
    return DnnConfig(
        model=str(model),
        backend=spec.name,
        input=values.get("input") or None,
        outputs=outputs,
        async_mode=bool(values.get("async", True)),
        nireq=int(values.get("nireq", 0)),
        batch_size=int(values.get("batch_size", 1)),
        device=values.get("device") or None,
        device_id=int(values.get("device_id", 0)),
        backend_options=opts,
        model_instance=instance,
        batch_timeout=float(values.get("batch_timeout", DEFAULT_BATCH_TIMEOUT)),
    )


def _given(values: dict[str, Any], name: str, default: Any) -> bool:
    """Whether the user set option ``name`` (bound values know; a plain dict: a value off the default)."""
    given = getattr(values, "given", None)
    if given is not None:
        return name in given
    return name in values and values[name] != default


def _parse_backend_configs(text: str, own: dict[str, Any], label: str) -> dict[str, Any]:
    """``k=v&k2=v2`` against the selected backend's options only (as FFmpeg since 2024)."""
    out: dict[str, Any] = {}
    for pair in filter(None, text.split("&")):
        key, sep, value = pair.partition("=")
        if not sep or key not in own:
            raise OptionNotFoundError(
                f"backend_configs: option '{key}' not found for this backend{did_you_mean(key, own)}",
                filter=label,
                option="backend_configs",
            )
        o = own[key]
        row = Option(o.name, o.type, o.default, o.min, o.max, consts=dict(o.consts))
        try:
            out[key] = row.parse(value)
        except AvdnnError as exc:
            exc.with_context(filter=label, option="backend_configs")
            raise
    return out


def help_rows(mask: DNNBackendType) -> str:
    """``-h filter=NAME``: which of this filter's backends are installed (their options follow)."""
    from avdnn.dnn import is_installed

    rows = []
    for spec in KNOWN_BACKENDS.values():
        if spec.flag & mask:
            state = "installed" if is_installed(spec.name) else f"not installed: pip install 'avdnn[{spec.extra}]'"
            rows.append(f"    {spec.name:<11} ({int(spec.flag):>2}) {state}; options: {_group(spec)}")
    return "  DNN backends:\n" + "\n".join(rows)
