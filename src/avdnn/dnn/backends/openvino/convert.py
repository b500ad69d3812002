"""Reading a model for OpenVINO: a TensorFlow graph or a .tflite is converted once, to IR, in the cache.

``core.read_model`` converts a frozen TensorFlow graph on every run (the zoo's SSD: ~8 s of CPU),
so a ``.pb`` or ``.tflite`` is converted once into an IR entry of avdnn's model cache
(:mod:`avdnn.dnn.backends.cache`) keyed by the file's sha256, OpenVINO's version and the cut
points, and later runs read the IR (milliseconds). IR and ONNX files are read directly (an ONNX
file reads fast, and its weights may live in other files the key would not cover).

**Cut points.** As in FFmpeg's TensorFlow backend, where ``output`` may name any operation of
the graph, ``output`` names that are not outputs of a ``.pb`` cut the graph there: only what
they need is converted (the zoo's SSD runs without its post-processor's 90 NMS loops).

**INT8.** ``precision=int8`` reads the quantized IR ``avdnn models quantize`` made for the same
source, OpenVINO version and cut (:mod:`avdnn.dnn.backends.openvino.quantize`); there is no
silent fallback.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from avdnn.dnn.backends import cache
from avdnn.dnn.backends._common import strip_port
from avdnn.dnn.backends.openvino.tfod import batch_resize
from avdnn.dnn.interface import ModelConfig
from avdnn.errors import InvalidArgumentError, InvalidDataError, NotFoundError

__all__ = ["CONVERTED", "INT8_KIND", "IR_FILE", "IR_KIND", "cut_names", "material", "read", "read_converted"]

log = logging.getLogger("avdnn.dnn.openvino")

#: source formats converted into the cache (the others are read directly)
CONVERTED = (".pb", ".tflite")
#: bump when the conversion itself changes: older entries are then other keys, never reused
SCHEME = 2
IR_KIND = "openvino"
INT8_KIND = "openvino-int8"
IR_FILE = "model.xml"


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def cut_names(config: ModelConfig) -> tuple[str, ...]:
    """The ``output`` names that shape a conversion (a ``.pb``'s cut points; none otherwise)."""
    return tuple(config.output_names) if _suffix(config.path) == ".pb" else ()


def material(path: str, cut: Sequence[str], **more: Any) -> dict[str, Any]:
    """What an IR converted from ``path`` depends on: the cache key's material."""
    import openvino as ov

    return {
        "what": "openvino-ir",
        "scheme": SCHEME,
        "source_sha256": cache.file_sha256(path),
        "source_format": _suffix(path),
        "runtime": ov.get_version(),
        "outputs": list(cut),
        **more,
    }


@contextmanager
def _frontend_errors(path: str) -> Iterator[None]:
    """The frontend's own failure types (not RuntimeError) as a model that cannot be read."""
    from openvino.frontend import GeneralFailure, InitializationFailure, NotImplementedFailure, OpConversionFailure

    try:
        yield
    except (GeneralFailure, InitializationFailure, NotImplementedFailure, OpConversionFailure, RuntimeError) as exc:
        raise InvalidDataError(
            f"OpenVINO cannot read model '{path}': {' '.join(str(exc).split())[:600]}", file=path
        ) from exc


def _convert(core: Any, path: str, cut: Sequence[str]) -> Any:
    """The source as an ov.Model, cut at ``cut`` when those are not all graph outputs."""
    if not cut:
        with _frontend_errors(path):
            return core.read_model(path)
    from openvino.frontend import FrontEndManager

    with _frontend_errors(path):
        frontend = FrontEndManager().load_by_framework("tf")
        model = frontend.load(path)
        outputs = {strip_port(n) for place in model.get_outputs() for n in place.get_names()}
    if all(strip_port(name) in outputs for name in cut):
        with _frontend_errors(path):
            return core.read_model(path)
    places = []
    for name in cut:
        place = model.get_place_by_tensor_name(name)
        if place is None and ":" not in name:
            place = model.get_place_by_tensor_name(name + ":0")
        if place is None:
            raise InvalidArgumentError(
                f"output '{name}' is not a tensor of the graph (its outputs: {', '.join(sorted(outputs))})",
                option="output",
                file=path,
            )
        places.append(place)
    with _frontend_errors(path):
        model.override_all_outputs(places)
        converted = frontend.convert(model)
        return batch_resize(frontend, path, cut, converted)


def _save(core: Any, path: str, cut: Sequence[str], folder: Path) -> dict[str, Any]:
    import openvino as ov

    log.info("openvino: converting '%s' once into the model cache (%s)", path, folder.parent)
    model = _convert(core, path, cut)
    ov.save_model(model, str(folder / IR_FILE), compress_to_fp16=False)  # the weights stay f32
    return {"source": os.path.realpath(path)}


def read(core: Any, config: ModelConfig, *, int8: bool = False) -> Any:
    """The model ``config`` names, as an ov.Model (converted IR from the cache where it applies)."""
    path = config.path
    if int8:
        return read_converted(core, path, cut_names(config), kind=INT8_KIND)
    if _suffix(path) not in CONVERTED:
        with _frontend_errors(path):
            return core.read_model(path)
    return read_converted(core, path, cut_names(config))


def read_converted(core: Any, path: str, cut: Sequence[str], *, kind: str = IR_KIND) -> Any:
    """The cached IR of ``path`` (built now if missing; rebuilt once when OpenVINO cannot read it)."""
    stuff = material(path, cut)
    name = os.path.basename(path) + (f" cut at {'&'.join(cut)}" if cut else "")
    for attempt in (0, 1):
        if kind == INT8_KIND:
            entry = cache.lookup(kind, stuff)
            if entry is None:
                raise NotFoundError(
                    f"no INT8 model of '{path}'{' cut at ' + '&'.join(cut) if cut else ''} for OpenVINO "
                    f"{stuff['runtime']} in {cache.cache_dir()}: make one with "
                    f"'avdnn models quantize NAME --clip FILE' (precision=int8)",
                    option="precision",
                    file=path,
                )
        else:
            entry = cache.get(kind, stuff, lambda folder: _save(core, path, cut, folder), describe=name)
        try:
            return core.read_model(str(entry.file(IR_FILE)))
        except RuntimeError:
            cache.invalidate(entry)
            if attempt or kind == INT8_KIND:
                raise
    raise AssertionError("unreachable")
