"""The heads beyond boxes: ms per frame of each head's decoding against the model alone, side by side.

    .venv/bin/python benchmarks/heads.py                 # every head, 30 repeats each
    .venv/bin/python benchmarks/heads.py --quick --json out.json

Real zoo models (when their packages are installed): the model run alone through its avdnn
backend on a prepared input (what the engine's request runs), then the head's decoding of that
output (``avdnn.dnn.detect.parse``, or the CTC decode for the recognizer): MoveNet and the
selfie mask on carphone (176x144), PP-OCR's detector on a 640x480 frame of text and its
recognizer on one 48x320 line. Heads with no offline model (YOLOv8 -pose, -seg, -obb, YOLO26, a
21-class semantic map) decode synthetic outputs of the real shapes (8400 candidates, 32
prototypes of 160x160) with a realistic handful of objects; their model column is empty. The
last row is drawobjects' cost on a 720p frame (the pixels, not a head).
Medians of the repeats; decode/model is the head's share on top of the model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from avdnn.dnn import backends
from avdnn.dnn import io_analytics as io
from avdnn.dnn.detect import DetectContext, characters, ctc_greedy, letterbox, parse
from avdnn.dnn.interface import DNNFunctionType, ModelConfig
from avdnn.media.frame import Frame
from avdnn.zoo import get, sample


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def first_frame(path: str) -> Frame:
    import av

    with av.open(path) as c:
        return Frame.from_av(next(c.decode(video=0)))


def text_frame(width: int = 640, height: int = 480) -> Frame:
    """Dark text lines on white, drawn with Pillow's default font (what an OCR benchmark needs)."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(32)
    for i, line in enumerate(["AVDNN 2025", "beyond boxes", "PP-OCRv6 small", "keypoints masks text"]):
        draw.text((30, 30 + 100 * i), line, fill="black", font=font)
    return Frame.from_ndarray(np.asarray(img).copy(), "rgb24")


def real_row(name: str, frame: Frame, repeats: int, *, multiple: int = 1) -> dict[str, Any] | None:
    spec = get(name)
    path = spec.source_file()
    if path is None:
        return None
    opts = {k: float(v) for k, v in spec.options.items() if k in ("mean", "scale")}
    func = DNNFunctionType.ANALYTICS_CLASSIFY if spec.function == "classify" else DNNFunctionType.ANALYTICS_DETECT
    model = backends.backend_class(spec.backend).load(ModelConfig(path=path, func_type=func, options=opts))
    info = model.describe().input
    inp = io.input_spec(info, frame.width, frame.height, multiple)
    if spec.function == "classify":
        line, scaled = io.text_spec(inp, True, 300, 40)
        batch = np.zeros((1, *line.shape), line.dtype)
        io.text_fill(frame, (20, 20, 300, 40), line, scaled)(batch[0])
        chars = characters(model.describe().metadata["character"])
        out = model.run(batch)
        model_ms = median_ms(lambda: model.run(batch), repeats)
        decode_ms = median_ms(lambda: ctc_greedy(out[0], chars), repeats)
        shape = f"{line.width}x{line.height}"
    else:
        lb = spec.options.get("letterbox") == "1"
        geom = io.geometry(inp, frame.width, frame.height, lb)
        batch = np.zeros((1, *inp.shape), inp.dtype)
        io.detect_fill(frame, inp, geom)(batch[0])
        ctx = DetectContext(
            frame_width=frame.width,
            frame_height=frame.height,
            input_width=inp.width,
            input_height=inp.height,
            confidence=float(spec.options.get("confidence", 0.5)),
            letterbox=None if geom.is_stretch else geom,
        )
        out = model.run(batch)
        one = [o[0:1] for o in out]
        model_ms = median_ms(lambda: model.run(batch), repeats)
        decode_ms = median_ms(lambda: parse(spec.model_type or "", one, ctx), repeats)
        shape = f"{frame.width}x{frame.height} -> {inp.width}x{inp.height}"
    model.close()
    return {
        "head": spec.model_type or "ctc",
        "model": f"zoo:{name}",
        "input": shape,
        "model_ms": model_ms,
        "decode_ms": decode_ms,
    }


def synthetic_rows(repeats: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    fw, fh = 1280, 720
    geom = letterbox(fw, fh, 640, 640)
    ctx = DetectContext(frame_width=fw, frame_height=fh, input_width=640, input_height=640, letterbox=geom)
    n = 8400

    def candidates(d: int, objects: int = 10) -> np.ndarray:
        t = np.zeros((1, d, n), np.float32)
        t[0, 0:2] = rng.uniform(50, 590, (2, n))
        t[0, 2:4] = rng.uniform(10, 200, (2, n))
        t[0, 4:, :] = rng.uniform(0, 0.1, (d - 4, n))
        hot = rng.choice(n, objects * 5, replace=False).reshape(objects, 5)  # 5 candidates per object
        centre = rng.uniform(100, 540, (objects, 2))
        size = rng.uniform(30, 150, (objects, 2))
        for j in range(5):
            t[0, 0:2, hot[:, j]] = centre + rng.uniform(-3, 3, (objects, 2))  # advanced index first: (objects, 2)
            t[0, 2:4, hot[:, j]] = size * rng.uniform(0.95, 1.05, (objects, 2))
            t[0, 4, hot[:, j]] = rng.uniform(0.5, 0.95, objects)
        return t

    pose = candidates(4 + 1 + 51)
    seg = candidates(4 + 80 + 32)
    protos = rng.normal(size=(1, 32, 160, 160)).astype(np.float32)
    obb = candidates(4 + 15 + 1)
    y26 = np.zeros((1, 300, 6), np.float32)
    y26[0, :, :4] = np.sort(rng.uniform(0, 640, (300, 4)).reshape(300, 2, 2), axis=1).reshape(300, 4)
    y26[0, :, 4] = rng.uniform(0, 1, 300)
    sem = rng.normal(size=(1, 21, 128, 128)).astype(np.float32)
    sem[0, 0] += 3.0
    for k, (y, x) in enumerate([(20, 20), (60, 80), (90, 30)], start=1):  # three class regions
        sem[0, k, y : y + 30, x : x + 30] += 12.0
    cases = [
        ("yolov8_pose", [pose], "1280x720, [1,56,8400]"),
        ("yolov8_seg", [seg, protos], "1280x720, [1,116,8400] + [1,32,160,160]"),
        ("yolov8_obb", [obb], "1280x720, [1,20,8400]"),
        ("yolo26", [y26], "1280x720, [1,300,6]"),
        ("semantic", [sem], "1280x720, [1,21,128,128]"),
    ]
    rows = []
    for head, outs, shape in cases:
        ms = median_ms(lambda head=head, outs=outs: parse(head, outs, ctx), repeats)
        found = len(parse(head, outs, ctx))
        rows.append(
            {
                "head": head,
                "model": "synthetic",
                "input": f"{shape}, {found} objects",
                "model_ms": None,
                "decode_ms": ms,
            }
        )
    return rows


def drawing_row(repeats: int) -> dict[str, Any]:
    """drawobjects on a 1280x720 yuv420p frame: 3 masks (a quarter of the frame each), 2 skeletons, 1 text."""
    from avdnn.dnn.detect import COCO_KEYPOINTS
    from avdnn.filters.options import bind_options
    from avdnn.filters.registry import get_filter
    from avdnn.media.detections import Detections, Mask

    rng = np.random.default_rng(1)
    w, h = 1280, 720
    y = rng.integers(0, 255, (h, w), dtype=np.uint8)
    uv = np.full((h // 2, w // 2), 128, np.uint8)
    frame = Frame.from_planes([y, uv, uv.copy()], "yuv420p")
    kp = np.concatenate([rng.uniform(100, 600, (5, 17, 2)), np.full((5, 17, 1), 0.9)], axis=2)
    masks = tuple(Mask(100 + 300 * i, 100, rng.random((360, 640 - 100 * i)) > 0.3) if i < 3 else None for i in range(5))
    det = Detections(
        xyxy=np.tile([[100, 100, 700, 460]], (5, 1)),
        confidence=np.full(5, 0.9),
        class_id=np.arange(5),
        frame_size=(w, h),
        keypoints=np.where(np.arange(5)[:, None, None] >= 3, kp, np.nan),
        keypoint_names=COCO_KEYPOINTS,
        masks=masks,
        text=("", "", "", "", "AB12 CDE"),
    )
    frame.side_data.detections = det
    cls = get_filter("drawobjects")
    flt = cls(bind_options(cls.options, [], filter_name="drawobjects"))
    ms = median_ms(lambda: flt.filter(frame), repeats)
    return {
        "head": "drawobjects",
        "model": "-",
        "input": "1280x720 yuv420p, 3 masks, 2 skeletons, 1 text",
        "model_ms": None,
        "decode_ms": ms,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="3 repeats (a smoke run)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    car = first_frame(sample("carphone_pristine.mp4"))
    text = text_frame()
    rows = [
        real_row("movenet_lightning", car, repeats),
        real_row("selfie_segmentation", car, repeats),
        real_row("ppocr_det", text, repeats, multiple=32),
        real_row("ppocr_rec", text, repeats),
    ]
    table = [r for r in rows if r is not None] + synthetic_rows(repeats) + [drawing_row(repeats)]
    print("| head | model | input | model ms | decode ms | decode / model |")
    print("|---|---|---|---|---|---|")
    for r in table:
        model = "-" if r["model_ms"] is None else f"{r['model_ms']:.2f}"
        ratio = "-" if r["model_ms"] is None else f"{100 * r['decode_ms'] / r['model_ms']:.1f} %"
        print(f"| {r['head']} | {r['model']} | {r['input']} | {model} | {r['decode_ms']:.2f} | {ratio} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"repeats": repeats, "rows": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
