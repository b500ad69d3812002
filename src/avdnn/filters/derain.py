"""derain: remove rain (or haze) from rgb24 frames with a same-size model (FFmpeg's vf_derain).

``filter_type`` (derain/dehaze) is accepted and, as in FFmpeg, changes nothing: the model
decides what it removes. The model must keep the frame size (AVERROR(EIO) otherwise).
Deliberate differences: ``dnn_backend`` takes every backend (FFmpeg allows tensorflow only;
unset, it follows the model file) and failures keep their code.
"""

from __future__ import annotations

from typing import ClassVar

from avdnn.dnn.interface import DNNBackendType
from avdnn.errors import IOFailureError
from avdnn.filters.dnn_common import ALL_BACKENDS, dnn_backend_option, dnn_options
from avdnn.filters.dnn_processing import DnnProcessingFilter
from avdnn.filters.options import Option

DERAIN_BACKENDS = ALL_BACKENDS


class DerainFilter(DnnProcessingFilter):
    """Apply a same-size rgb24 model to every frame."""

    name: ClassVar[str] = "derain"
    description: ClassVar[str] = "Apply derain filter to the input."
    backend_mask: ClassVar[DNNBackendType] = DERAIN_BACKENDS
    pix_fmts: ClassVar[tuple[str, ...] | None] = ("rgb24",)
    options: ClassVar[tuple[Option, ...]] = (
        Option("filter_type", "int", 0, 0, 1, help="filter type(derain/dehaze)", consts={"derain": 0, "dehaze": 1}),
        dnn_backend_option(DERAIN_BACKENDS, DNNBackendType.TF, bounded=True),
        *dnn_options(DERAIN_BACKENDS),
    )

    def setup(self, fmt: str, width: int, height: int) -> tuple[int, int]:
        out_w, out_h = super().setup(fmt, width, height)
        if (out_w, out_h) != (width, height):
            raise IOFailureError(
                f"derain needs a model that keeps the frame size; this one turns {width}x{height} into {out_w}x{out_h}"
            )
        return out_w, out_h
