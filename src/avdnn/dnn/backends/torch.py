"""PyTorch backend: TorchScript ``.pt`` (``torch.jit``) and ``torch.export`` ``.pt2`` programs.

What FFmpeg's LibTorch backend does (reference s.3), kept here: ``device`` is ``cpu``
(default), ``cuda[:n]`` (also ROCm builds) or ``xpu[:n]``, each checked for availability at
load, anything else refused; ``optimize`` switches TorchScript's graph-executor
optimisation (FFmpeg default 0); the input is a float NCHW RGB batch (pixels / 255) and
``input``/``output`` names are ignored with a warning, since TorchScript has no tensor
names. Batches are one tensor ``[n, C, H, W]``.

Deliberate differences: every function type loads (FFmpeg: process only); every tensor the
model returns (a tensor, or tuples/lists/dicts of them, flattened in order) is an output
(FFmpeg: the first); a model without parameters works (FFmpeg 9.0 probed the device from
the parameters and crashed); a ``.pt2`` program describes its input shape and type from the
export. ``optimize`` is thread-local in PyTorch, so it is set around each run on the thread
that runs it. CUDA could not be verified where this was written (no GPU).
"""

from __future__ import annotations

import logging
import threading
import warnings
import zipfile
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.backends._common import (
    ErrorTable,
    check_model_file,
    data_type,
    map_errors,
    tensor_scale,
    warn_ignored_names,
)
from avdnn.dnn.interface import (
    ALL_FUNCTION_TYPES,
    DYNAMIC,
    BackendOption,
    DNNBackendType,
    DNNColorOrder,
    DNNDataType,
    DNNFunctionType,
    DNNLayout,
    ModelConfig,
    ModelIO,
    TensorInfo,
)
from avdnn.errors import (
    ExternalError,
    InvalidArgumentError,
    InvalidDataError,
    NotSupportedError,
    OutOfMemoryError,
)

log = logging.getLogger("avdnn.dnn.torch")

_ANY4 = (DYNAMIC, DYNAMIC, DYNAMIC, DYNAMIC)


def _table() -> ErrorTable:
    """torch's C++ errors surface as RuntimeError (or subclasses) raised inside torch's package."""
    import torch

    return [
        (torch.OutOfMemoryError, OutOfMemoryError),
        (torch.jit.Error, ExternalError),
        (RuntimeError, ExternalError, "torch"),
        (ValueError, InvalidArgumentError, "torch"),
        (AssertionError, InvalidArgumentError, "torch"),  # an exported program's shape guards
    ]


def _device(config: ModelConfig) -> Any:
    """FFmpeg's device check: cpu, cuda[:n] (needs CUDA/ROCm) or xpu[:n] (needs XPU)."""
    import torch

    name = (config.device or "cpu").lower()
    kind = name.split(":")[0]
    if kind not in ("cpu", "cuda", "xpu"):
        raise InvalidArgumentError(
            f"device '{config.device}' is not a torch device (cpu, cuda[:n], xpu[:n])", option="device"
        )
    if kind == "cuda" and not torch.cuda.is_available():
        raise NotSupportedError(f"device '{name}': No CUDA device available", option="device")
    if kind == "xpu" and not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        raise NotSupportedError(f"device '{name}': No XPU device available", option="device")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise InvalidArgumentError(f"device '{name}': {exc}", option="device") from exc
    if kind in ("cuda", "xpu") and device.index is not None:
        count = int(getattr(torch, kind).device_count())
        if device.index >= count:  # else torch.jit.load fails, and the model would be blamed (InvalidData)
            raise InvalidArgumentError(
                f"device '{name}': no such device, {count} {kind.upper()} device(s) present", option="device"
            )
    return device


def _is_export_archive(path: str) -> bool:
    """A torch.export archive (``torch.export.save``) rather than a TorchScript one."""
    try:
        with zipfile.ZipFile(path) as zf:
            return any(
                n.endswith(("serialized_exported_program.json", "archive_format"))
                or ("/models/" in n and n.endswith(".json"))
                for n in zf.namelist()
            )
    except (OSError, zipfile.BadZipFile):
        return False


def _leaves(args: Any) -> Iterator[Any]:
    if isinstance(args, (tuple, list)):
        for a in args:
            yield from _leaves(a)
    elif isinstance(args, dict):
        for a in args.values():
            yield from _leaves(a)
    elif args is not None:
        yield args


def _flatten(value: Any) -> Iterator[Any]:
    """The tensors of a model's output (a tensor, or tuples/lists/dicts of them), in order."""
    import torch

    return (v for v in _leaves(value) if isinstance(v, torch.Tensor))


class TorchBackend:
    """One TorchScript module or exported program on one device; ``run`` is thread-safe."""

    name: ClassVar[str] = "torch"
    flag: ClassVar[DNNBackendType] = DNNBackendType.TH
    func_types: ClassVar[frozenset[DNNFunctionType]] = ALL_FUNCTION_TYPES
    options: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("optimize", "int", 0, 0, 1, "turn on graph executor optimization"),
    )
    supports_async = True

    def __init__(self, module: Any, config: ModelConfig, device: Any, io: ModelIO, scripted: bool) -> None:
        self._module = module
        self.config = config
        self.device = device
        self._io = io
        self._scripted = scripted
        self._optimize = bool(int(config.options.get("optimize", 0)))
        self._local = threading.local()  # per request thread: its CUDA stream and pinned buffer

    @classmethod
    def load(cls, config: ModelConfig) -> TorchBackend:
        """``torch.jit.load`` (``.pt``) or ``torch.export.load`` (``.pt2``) onto the device."""
        check_model_file(config.path)
        import torch

        path = config.path
        device = _device(config)
        warn_ignored_names(log, "torch", config)
        exported = path.endswith(".pt2") or _is_export_archive(path)
        with map_errors(f"model '{path}'", path, _table):
            try:
                if exported:
                    program = torch.export.load(path)
                    module = program.module().to(device)
                else:
                    with warnings.catch_warnings():  # deprecated in torch 2.13 but what .pt files need
                        warnings.simplefilter("ignore", DeprecationWarning)
                        module = torch.jit.load(path, map_location=device)  # type: ignore[no-untyped-call]
                    module.eval()
            except (RuntimeError, ValueError, zipfile.BadZipFile, KeyError) as exc:
                kind = "a torch.export program" if exported else "a TorchScript module"
                raise InvalidDataError(
                    f"torch cannot load '{path}' as {kind}: {' '.join(str(exc).split())[:600]}", file=path
                ) from exc
        if exported:
            io = cls._describe_export(program)
        else:
            io = ModelIO(
                (TensorInfo("input", _ANY4, DNNDataType.FLOAT, "float32", DNNLayout.NCHW, DNNColorOrder.RGB),),
                (TensorInfo("output", _ANY4, DNNDataType.FLOAT, "float32", DNNLayout.NCHW, DNNColorOrder.RGB),),
            )
        return cls(module, config, device, io, scripted=not exported)

    @staticmethod
    def _describe_export(program: Any) -> ModelIO:
        """Input/output dims and types from the exported program's placeholders."""
        from torch.export.graph_signature import InputKind

        user = [s.arg.name for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
        nodes = {n.name: n for n in program.graph.nodes}
        infos = []
        for name in user:
            val = nodes[name].meta.get("val") if name in nodes else None
            infos.append(_info(name, val))
        out_node = next(n for n in program.graph.nodes if n.op == "output")
        outs = [_info(f"output{i}", getattr(a, "meta", {}).get("val")) for i, a in enumerate(_leaves(out_node.args))]
        if not infos:
            raise InvalidDataError("the exported program takes no input tensor")
        if len(infos) > 1:
            raise NotSupportedError(f"the exported program takes {len(infos)} inputs; the torch backend feeds one")
        return ModelIO(tuple(infos), tuple(outs) or (_info("output0", None),))

    def describe(self) -> ModelIO:
        return self._io

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        """One forward pass over ``batch`` (``[n, C, H, W]``); every returned tensor, on the CPU."""
        import torch

        path = self.config.path
        with map_errors(f"inference with '{path}'", path, _table), torch.inference_mode():
            if self.device.type == "cuda":
                arrays = self._run_cuda(batch)
            else:
                x = torch.as_tensor(batch)
                if self.device.type != "cpu":
                    x = x.to(self.device)
                arrays = [t.detach().to("cpu").numpy() for t in _flatten(self._forward(x))]
        if not arrays:
            raise InvalidDataError(f"model '{path}' returned no tensor", file=path)
        # an identity model hands back the engine's own buffer, which is reused for the next batch
        return [a.copy() if np.shares_memory(a, batch) else a for a in arrays]

    def _forward(self, x: Any) -> Any:
        if self._scripted:
            import torch

            with torch.jit.optimized_execution(self._optimize):  # type: ignore[attr-defined]
                return self._module(x)
        return self._module(x)

    def _run_cuda(self, batch: np.ndarray) -> list[np.ndarray]:
        """Each request thread on a CUDA stream of its own, from a pinned buffer of its own, so
        ``nireq`` requests overlap their copies and kernels instead of queueing on one stream."""
        import torch

        local = self._local
        if getattr(local, "stream", None) is None:
            local.stream = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
            local.pinned = None
        src = torch.from_numpy(np.ascontiguousarray(batch))
        if local.pinned is None or local.pinned.numel() < src.numel() or local.pinned.dtype != src.dtype:
            local.pinned = torch.empty(src.numel(), dtype=src.dtype).pin_memory()
        host = local.pinned[: src.numel()].view(src.shape)
        host.copy_(src)
        with torch.cuda.stream(local.stream):
            x = host.to(self.device, non_blocking=True)
            outs = [t.detach() for t in _flatten(self._forward(x))]
            # the copies back are synchronous on this stream: the pinned buffer is free again after
            return [t.to("cpu").numpy() for t in outs]

    def close(self) -> None:
        self._module = None


def _info(name: str, val: Any) -> TensorInfo:
    if val is None or not hasattr(val, "shape"):
        return TensorInfo(name, _ANY4, DNNDataType.FLOAT, "float32", DNNLayout.NCHW, DNNColorOrder.RGB)
    dims = tuple(d if isinstance(d, int) and d > 0 else DYNAMIC for d in val.shape)
    np_type = str(val.dtype).replace("torch.", "")
    try:
        dtype = data_type(np.dtype(np_type))
    except TypeError:
        dtype = None
    return TensorInfo(name, dims, dtype, np_type, DNNLayout.NCHW, DNNColorOrder.RGB, tensor_scale(dtype))
