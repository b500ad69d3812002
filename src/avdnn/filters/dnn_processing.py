"""dnn_processing: run an image-to-image model over every frame (FFmpeg's vf_dnn_processing).

Pixel formats are FFmpeg's ten: rgb24 and bgr24 feed the model all three channels in the
frame's order; gray8, grayf32 and the yuv/nv12 formats feed the luma plane, with chroma
copied (same size) or bicubic-resized (libswscale) to the output size. The output size comes
from the model at configuration time (static output dims, else one trial inference), and a
fixed model input size, a data type or a channel count that does not fit the frame is
FFmpeg's AVERROR(EIO) with a message saying what to insert. Deliberate differences:
``dnn_backend`` left unset follows the model file (:mod:`avdnn.filters.dnn_options`); uint8
models are accepted for 8-bit formats; a frame whose size or format changes mid-stream is
re-checked and processed (FFmpeg's CLI would reconfigure the graph); execution errors keep
their code instead of becoming EIO.
"""

from __future__ import annotations

from typing import Any, ClassVar

from avdnn.dnn import io_proc
from avdnn.dnn.interface import DYNAMIC, DNNBackendType
from avdnn.errors import IOFailureError
from avdnn.filters.dnn_common import ALL_BACKENDS, DnnFilter, dnn_backend_option, dnn_options
from avdnn.filters.options import Option
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import DNN_PIX_FMTS, canonical

#: (format, width, height) of an input frame -> (width, height) of the output
Geometry = tuple[str, int, int]


class DnnProcessingFilter(DnnFilter):
    """Apply a process-frame model; one output frame per input frame, in order."""

    name: ClassVar[str] = "dnn_processing"
    description: ClassVar[str] = "Apply DNN processing filter to the input."
    backend_mask: ClassVar[DNNBackendType] = ALL_BACKENDS
    pix_fmts: ClassVar[tuple[str, ...] | None] = DNN_PIX_FMTS
    options: ClassVar[tuple[Option, ...]] = (
        dnn_backend_option(ALL_BACKENDS, DNNBackendType.TF),
        *dnn_options(ALL_BACKENDS),
    )

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self._geometry: dict[Geometry, tuple[int, int]] = {}

    # -- configuration (FFmpeg's config_input / config_output) ----------------------------

    def configure(self, frame: Frame) -> None:
        super().configure(frame)
        self.geometry(frame)

    def geometry(self, frame: Frame) -> tuple[int, int]:
        """Output (width, height) for frames like this one; checks the model against it once."""
        key = (canonical(frame.format), frame.width, frame.height)
        size = self._geometry.get(key)
        if size is None:
            try:
                size = self.setup(*key)
            except IOFailureError as exc:
                exc.with_context(filter=self.label, file=self.config.model, pts=frame.pts)
                raise
            self._geometry[key] = size
        return size

    def setup(self, fmt: str, width: int, height: int) -> tuple[int, int]:
        """Check the model input against a frame of this format and size; find the output size."""
        self.check_input(fmt, width, height)
        return self.output_size(fmt, width, height)

    def check_input(self, fmt: str, width: int, height: int) -> None:
        assert self.model is not None
        info = self.model.get_input()
        if len(info.dims) != 4:
            raise IOFailureError(
                f"model input {info.describe()} is not 4-D; a process-frame model takes [N,C,H,W] or [N,H,W,C]"
            )
        if (info.width != DYNAMIC and info.width != width) or (info.height != DYNAMIC and info.height != height):
            raise IOFailureError(
                f"the model input {info.describe()} needs {info.width}x{info.height} frames, "
                f"got {width}x{height}; insert scale={info.width}:{info.height} before {self.name}"
            )
        io_proc.check_dtype(info, fmt, "input")
        want = io_proc.frame_channels(fmt)
        if info.channels != DYNAMIC and info.channels != want:
            raise IOFailureError(
                f"the model input {info.describe()} has {info.channels} channel(s) but {fmt} frames give {want}; "
                f"insert format={'rgb24' if info.channels == 3 else 'gray'} before {self.name}"
            )

    def output_size(self, fmt: str, width: int, height: int) -> tuple[int, int]:
        assert self.model is not None
        want = io_proc.frame_channels(fmt)
        out = self.model.outputs[0]
        io_proc.check_dtype(out, fmt, "output")
        channels, out_h, out_w = self.model.get_output(width, height, want)
        if channels != want:
            raise IOFailureError(
                f"the model output {out.describe()} has {channels} channel(s); {fmt} frames need {want}"
            )
        return out_w, out_h

    # -- per frame ------------------------------------------------------------------------

    def prepare(self, frame: Frame) -> Frame:
        """The frame whose model plane (and chroma) feeds the model; sr pre-scales here."""
        return frame

    def filter(self, frame: Frame) -> list[Frame]:
        self.raise_pending()
        assert self.model is not None
        out_w, out_h = self.geometry(frame)
        source = self.prepare(frame)
        out_info = self.model.outputs[0]
        fmt = canonical(frame.format)

        def post(outputs: list[Any]) -> Frame:
            height, width = io_proc.check_output(outputs[0], out_info, fmt)
            if width != out_w or height != out_h:
                raise IOFailureError(
                    f"the model gave {width}x{height} for a frame configured to {out_w}x{out_h}", pts=frame.pts
                )
            return io_proc.output_frame(frame, io_proc.picture(outputs[0], out_info, fmt), chroma_from=source)

        return self.submit(frame, [self.model.frame_item(io_proc.model_plane(source), post)])
