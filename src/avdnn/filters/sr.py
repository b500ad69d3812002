"""sr: super-resolution of the luma plane (FFmpeg's vf_sr).

Two kinds of model, told apart by one trial inference at configuration time, as FFmpeg does:
a model that keeps the size (SRCNN) runs on the frame first upscaled ``scale_factor`` times
with bicubic libswscale, in place on its luma; a model that enlarges (ESPCN) gives the luma
at its own output size and the chroma is bicubic-upscaled to match. Formats: yuv420p,
yuv422p, yuv444p, yuv410p, yuv411p, gray8. Deliberate differences: ``dnn_backend`` also
takes every backend (FFmpeg allows tensorflow only; unset, it follows the model file), failures keep their code, and a
model with a 3-channel input (most pretrained SR models, e.g. waifu2x) upscales rgb24/bgr24
frames whole, in the frame's channel order, instead of being refused.
"""

from __future__ import annotations

from typing import Any, ClassVar

from avdnn.dnn import io_proc
from avdnn.dnn.interface import DNNBackendType
from avdnn.errors import IOFailureError
from avdnn.filters.dnn_common import ALL_BACKENDS, dnn_backend_option, dnn_options
from avdnn.filters.dnn_processing import DnnProcessingFilter
from avdnn.filters.options import Option
from avdnn.media.frame import Frame

SR_BACKENDS = ALL_BACKENDS
RGB_FMTS = ("rgb24", "bgr24")


class SrFilter(DnnProcessingFilter):
    """Upscale frames with an SRCNN- or ESPCN-style luma model."""

    name: ClassVar[str] = "sr"
    description: ClassVar[str] = "Apply DNN-based image super resolution to the input."
    backend_mask: ClassVar[DNNBackendType] = SR_BACKENDS
    pix_fmts: ClassVar[tuple[str, ...] | None] = ("yuv420p", "yuv422p", "yuv444p", "yuv410p", "yuv411p", "gray")
    options: ClassVar[tuple[Option, ...]] = (
        dnn_backend_option(SR_BACKENDS, DNNBackendType.TF, bounded=True),
        Option("scale_factor", "int", 2, 2, 4, help="scale factor for SRCNN model"),
        *dnn_options(SR_BACKENDS),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        #: per input geometry: True when the model keeps the size (SRCNN pre-scale)
        self._prescale: dict[tuple[str, int, int], bool] = {}
        super().__init__(values, label=label)
        if self.model is not None and self.model.get_input().channels == 3:
            self.pix_fmts = RGB_FMTS  # type: ignore[misc]  # an RGB model: negotiate packed RGB instead of luma

    def setup(self, fmt: str, width: int, height: int) -> tuple[int, int]:
        self.check_input(fmt, width, height)
        out_w, out_h = self.output_size(fmt, width, height)
        if (out_w, out_h) != (width, height):  # ESPCN: the model enlarges
            self._prescale[(fmt, width, height)] = False
            return out_w, out_h
        factor = int(self.opts.get("scale_factor", 2))
        up_w, up_h = width * factor, height * factor
        self.check_input(fmt, up_w, up_h)
        if self.output_size(fmt, up_w, up_h) != (up_w, up_h):
            raise IOFailureError(
                f"the model keeps {width}x{height} but not {up_w}x{up_h}; an SRCNN-style model must keep every size"
            )
        self._prescale[(fmt, width, height)] = True
        return up_w, up_h

    def prepare(self, frame: Frame) -> Frame:
        if self._prescale.get((frame.format, frame.width, frame.height)):
            out_w, out_h = self.geometry(frame)
            return io_proc.upscale_frame(frame, out_w, out_h)
        return frame
