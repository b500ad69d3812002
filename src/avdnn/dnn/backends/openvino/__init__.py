"""OpenVINO backend: IR (.xml/.bin), ONNX, TensorFlow frozen .pb and .tflite, read directly.

What FFmpeg's OpenVINO backend does (reference s.3), kept here: ``device`` (default CPU;
other names such as GPU, NPU or AUTO pass through), ``input_resizable``, ``layout``
(none/nchw/nhwc; none guesses), ``scale`` and ``mean`` applied by OpenVINO's
PrePostProcessor: the tensor avdnn feeds is uint8 NHWC (packed pixels, no conversion in
Python) and the graph converts it to f32, subtracts ``mean`` and divides by ``scale``
(``scale=0``: 255 for dnn_processing, 1 for detect/classify). A process-frame model with
``scale=1`` and ``mean=0`` gives uint8 output (rounded and clamped in the graph; FFmpeg's
plain convert wraps around). detect/classify models give f32 outputs and, for IR files, see
BGR as in FFmpeg (a .pb/.tflite/.onnx read directly keeps its framework's RGB).

Deliberate differences: ``batch_size > 1`` works (a fixed batch of 1 is made dynamic, or the
batch runs item by item when the model cannot be reshaped; FFmpeg's 2.0 path forces 1);
dynamic-shape models work (FFmpeg refuses them); ``output`` selects outputs by name
(FFmpeg uses every output); ``precision`` (f32 default, bf16, f16) sets
INFERENCE_PRECISION_HINT so results are exact by default (OpenVINO's own default on CPUs
with AMX is bf16); a dynamic channel dim does not make ``layout=none`` guess NCHW.

The parts: :mod:`.loading` (reading, reshaping, pre/post-processing, compiling; the options)
and :mod:`.requests` (the backend class: OpenVINO's infer requests, sync and async; cancel).
"""

from __future__ import annotations

from avdnn._util.offline import no_telemetry

no_telemetry()  # before any module of this package imports openvino (avdnn._util.offline says why)

from avdnn.dnn.backends.openvino.requests import OpenVINOBackend  # noqa: E402

__all__ = ["OpenVINOBackend"]
