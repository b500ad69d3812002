"""avdnn: FFmpeg's DNN video filters, in Python, done right.

``avdnn.run(input, "scale=320:-2,format=rgb24")`` iterates the frames leaving a chain;
with ``output=`` it writes them and returns the frame accounting; ``avdnn.batch(inputs, chain,
output="out/{stem}.mkv")`` runs a chain over a corpus of files on Ray. Heavy runtimes
(onnxruntime, openvino, torch, tensorflow) are imported only when a model is loaded.
"""

from __future__ import annotations

from typing import Any as _Any

from avdnn._util import redact as _redact
from avdnn.api import (
    FrameStream,
    Job,
    MultiFrameStream,
    OutputsFailedError,
    StreamOptions,
    keep_models,
    open,  # noqa: A004 - avdnn.open, as av.open
    open_many,
    run,
    run_many,
)
from avdnn.errors import (
    AvdnnError,
    BackendUnavailableError,
    ExternalError,
    FilterNotFoundError,
    InvalidArgumentError,
    InvalidDataError,
    IOFailureError,
    NotFoundError,
    NotSupportedError,
    OptionNotFoundError,
    OutOfMemoryError,
    OutOfRangeError,
    PermissionDeniedError,
)
from avdnn.media.detections import Detections, Mask
from avdnn.media.frame import Frame, SideData
from avdnn.run.multistats import MultiRunStats, OutputResult
from avdnn.run.stats import RunStats
from avdnn.tracking import TrackSummary

__version__ = "0.1.0"

# every record of the avdnn and libav loggers is redacted when made, whoever handles it (_util.redact)
_redact.install()


def __getattr__(name: str) -> _Any:
    """``avdnn.batch``: the corpus runner on Ray, a subpackage above the API (it calls ``run``),
    loaded on first use like a lazy submodule; calling it runs :func:`avdnn.batch.batch`."""
    if name == "batch":
        import importlib

        return importlib.import_module(f"{__name__}.batch")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AvdnnError",
    "BackendUnavailableError",
    "Detections",
    "ExternalError",
    "FilterNotFoundError",
    "Frame",
    "FrameStream",
    "IOFailureError",
    "InvalidArgumentError",
    "InvalidDataError",
    "Job",
    "Mask",
    "MultiFrameStream",
    "MultiRunStats",
    "NotFoundError",
    "NotSupportedError",
    "OptionNotFoundError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "OutputResult",
    "OutputsFailedError",
    "PermissionDeniedError",
    "RunStats",
    "SideData",
    "StreamOptions",
    "TrackSummary",
    "__version__",
    "batch",
    "keep_models",
    "open",
    "open_many",
    "run",
    "run_many",
]
