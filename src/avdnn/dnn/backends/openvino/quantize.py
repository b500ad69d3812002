"""An INT8 OpenVINO model by post-training quantization (NNCF), from frames a user names, kept in the cache.

``avdnn models quantize NAME --clip FILE`` calls :func:`quantize`: the f32 IR of the model (cut
as the zoo entry cuts it, :mod:`.convert`) is calibrated by NNCF on frames of the user's clip,
fed exactly as dnn_detect feeds them, and the quantized IR is kept in the model cache under the
same material as the f32 IR (source sha256, OpenVINO version, cut) in its own kind, so that
``precision=int8`` finds it. The clip, its sha256, the frame count and NNCF's version are in the
entry's manifest; quantizing again (another clip) replaces the entry.

NNCF sees the model as OpenVINO reads it, before avdnn's pre-processing, so only a model that
takes the frame as it is (uint8 NHWC, the zoo's SSD) can be calibrated from frames here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from avdnn.dnn.backends import cache
from avdnn.dnn.backends.openvino.convert import INT8_KIND, IR_FILE, material, read_converted
from avdnn.dnn.backends.openvino.loading import _get_core, ov_error
from avdnn.errors import BackendUnavailableError, InvalidArgumentError, NotSupportedError

__all__ = ["quantize"]

log = logging.getLogger("avdnn.dnn.openvino")


def _nncf() -> Any:
    try:
        import nncf
    except ImportError as exc:
        raise BackendUnavailableError(
            "INT8 quantization needs NNCF, which is not installed: pip install 'avdnn[quantize]'"
        ) from exc
    return nncf


def quantize(path: str, cut: Sequence[str], frames: Sequence[np.ndarray], *, clip: str = "") -> cache.Entry:
    """Quantize ``path`` (cut at ``cut``) on ``frames`` ((H, W, 3) uint8 each); the INT8 cache entry."""
    import openvino as ov

    nncf = _nncf()
    if not frames:
        raise InvalidArgumentError("quantize: no calibration frames (is the clip empty?)", option="frames")
    core = _get_core()
    with ov_error(f"model '{path}'", path):
        model = read_converted(core, path, cut)
    port = model.inputs[0]
    shape = port.get_partial_shape()
    nhwc = shape.rank.is_static and shape.rank.get_length() == 4 and shape[3].is_static and shape[3].get_length() == 3
    if len(model.inputs) != 1 or port.get_element_type() != ov.Type.u8 or not nhwc:
        raise NotSupportedError(
            f"quantize: '{path}' takes {port.get_element_type()} {shape}; only a model taking the frame "
            f"as it is (uint8 [N, H, W, 3]) can be calibrated from frames",
            file=path,
        )
    stuff = material(path, cut)
    digest = cache.file_sha256(clip) if clip else ""

    def make(folder: Path) -> dict[str, Any]:
        started = time.monotonic()
        data = nncf.Dataset([np.ascontiguousarray(f[None]) for f in frames])
        with ov_error(f"quantizing '{path}'", path):
            quantized = nncf.quantize(model, data, subset_size=len(frames))
            ov.save_model(quantized, str(folder / IR_FILE), compress_to_fp16=False)
        log.info("openvino: quantized '%s' on %d frames in %.1f s", path, len(frames), time.monotonic() - started)
        return {"clip": clip, "clip_sha256": digest, "frames": len(frames), "nncf": str(nncf.__version__)}

    cache.discard(INT8_KIND, stuff)
    name = Path(path).name + (f" cut at {'&'.join(cut)}" if cut else "")
    return cache.build(INT8_KIND, stuff, make, describe=f"{name}, INT8 on {len(frames)} frames of {Path(clip).name}")
