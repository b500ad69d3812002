"""One-time conversions of zoo files no runtime reads as shipped, into avdnn's cache directory.

MobileNetV2 ships as a PyTorch ``state_dict`` (``.pth``): weights without a graph. With torch
installed, avdnn builds the network (:mod:`avdnn.zoo.mobilenet_v2`), loads the weights and
exports it once: ONNX for the onnx backend (ONNX Runtime, the core runtime, so later runs need
no torch) or a ``torch.export`` program (``.pt2``, which keeps its input shape) for the torch
backend. Without torch, the error says how to get the file: install torch once, or put a file
exported elsewhere at the path it names. The cache is ``$AVDNN_CACHE``, else
``$XDG_CACHE_HOME/avdnn``, else ``~/.cache/avdnn``; files are written atomically (temporary
name, then rename), so concurrent first runs cannot read half a file.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

from avdnn.dnn.backends import cache
from avdnn.errors import BackendUnavailableError, NotSupportedError
from avdnn.zoo.spec import ModelSpec

#: suffix of the exported file per backend
SUFFIXES = {"onnx": ".onnx", "torch": ".pt2"}


def cache_dir() -> Path:
    """Where converted models go (created on first use): avdnn's model cache folder."""
    return cache.cache_dir()


def target(spec: ModelSpec, backend: str) -> Path:
    """The cache path of ``spec`` converted for ``backend`` (named by package version)."""
    if backend not in SUFFIXES:
        raise NotSupportedError(
            f"zoo:{spec.name} can be exported for {', '.join(SUFFIXES)}, not {backend}", option="dnn_backend"
        )
    return cache_dir() / f"{spec.name}-{spec.package.version}{SUFFIXES[backend]}"


def exported(spec: ModelSpec, source: str, backend: str) -> str:
    """The converted file for ``backend``, exporting it from ``source`` the first time."""
    path = target(spec, backend)
    if path.is_file():
        return str(path)
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailableError(
            f"zoo:{spec.name} ships a PyTorch state_dict; avdnn converts it once to {path} and needs torch "
            f"for that: pip install torch==2.13.0 (or place a {SUFFIXES[backend]} exported elsewhere there; "
            f"AVDNN_CACHE moves the folder)"
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        EXPORTERS[spec.export or ""](source, backend, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(path)


def _mobilenet_v2(source: str, backend: str, out: str) -> None:
    """MobileNetV2 taking 0..255 RGB NCHW 224x224 (what dnn_classify feeds a float tensor)."""
    import torch

    from avdnn.zoo.mobilenet_v2 import load

    net = load(source, pixel_range=255.0)
    example = torch.zeros(1, 3, 224, 224)
    with warnings.catch_warnings():  # the TorchScript-based ONNX exporter is deprecated in torch 2.13
        warnings.simplefilter("ignore")
        if backend == "onnx":
            torch.onnx.export(
                net,
                (example,),
                out,
                input_names=["image"],
                output_names=["prob"],
                dynamic_axes={"image": {0: "n"}, "prob": {0: "n"}},
                dynamo=False,
            )
        else:
            batch = torch.export.Dim("n", min=1, max=1024)
            program = torch.export.export(net, (torch.zeros(2, 3, 224, 224),), dynamic_shapes=({0: batch},))
            torch.export.save(program, out)


#: spec.export -> converter(source file, backend, output path)
EXPORTERS = {"mobilenet_v2": _mobilenet_v2}

__all__ = ["EXPORTERS", "SUFFIXES", "cache_dir", "exported", "target"]
