"""NativeModel against FFmpeg 5.1's own native backend: MD5-identical frames.

Each case writes a builder model, runs Debian's ffmpeg 5.1 (dnn_processing, sr or derain) on a
small lavfi clip, pulls the *input* frames from the same binary, runs NativeModel on them with
dnn_io_proc's conversion (ffmpeg_oracle.py) and requires the same output bytes.

Not covered: sr with a size-keeping (SRCNN-style) model. FFmpeg 5.1's sr corrupts its heap and
aborts on those with the native backend ("corrupted size vs. prev_size"), even for an identity
model, so there is no oracle for that path.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from builders import MODELS
from ffmpeg_oracle import H, W, ffmpeg_raw, from_tensor, split, to_tensor

from avdnn.dnn.native import NativeModel


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for name, make in MODELS.items():
        cases.append((name, "dnn_processing", "grayf32le" if make().cin == 1 else "rgb24"))
    cases += [
        ("identity3", "dnn_processing", "bgr24"),
        ("identity1", "dnn_processing", "yuv420p"),
        ("all_layers3", "dnn_processing", "bgr24"),
        ("all_layers1", "dnn_processing", "yuv420p"),
        ("conv1_tanh_clamp_k3_d1", "dnn_processing", "yuv420p"),
        ("conv1_leaky_relu_same_k3_d1", "dnn_processing", "yuv420p"),
        ("espcn2_c1", "sr", "yuv420p"),
        ("espcn3_c1", "sr", "yuv420p"),
        ("all_layers3", "derain", "rgb24"),
        ("conv3_relu_clamp_k3_d1", "derain", "rgb24"),
    ]
    return cases


def _diff(got: bytes, want: bytes) -> str:
    if len(got) != len(want):
        return f"sizes differ: {len(got)} != {len(want)}"
    a, b = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
    bad = np.flatnonzero(a != b)
    return f"{bad.size} of {a.size} bytes differ, first at byte {bad[0]}"


@pytest.mark.parametrize(("name", "filt", "pix_fmt"), _cases(), ids=lambda v: str(v))
def test_md5_identical_to_ffmpeg51(name: str, filt: str, pix_fmt: str, tmp_path, ffmpeg51) -> None:
    built = MODELS[name]()
    path = built.save(tmp_path)
    fmt = pix_fmt.removesuffix("le")
    scale = 3 if name == "espcn3_c1" else 2
    if filt == "dnn_processing":
        vf = f"format={fmt},dnn_processing=dnn_backend=native:model={path}:input=x:output=y"
    elif filt == "sr":
        vf = f"format={fmt},sr=dnn_backend=native:model={path}:scale_factor={scale}"
    else:
        vf = f"format={fmt},derain=dnn_backend=native:model={path}"
    want = ffmpeg_raw(vf, pix_fmt)

    model = NativeModel.load(path)
    w, h = W, H
    frames = split(ffmpeg_raw(f"format={fmt}", pix_fmt), pix_fmt, w, h)
    chroma: list[bytes | None] = [None] * len(frames)
    if filt == "sr":
        # sr scales each chroma plane as gray8 with SWS_BICUBIC and no range conversion; vf_scale
        # does the same once both ranges are pinned (left alone it converts tv -> pc range).
        cw, ch = (W // 2) * scale, (H // 2) * scale
        planes = [
            _chunks(
                ffmpeg_raw(
                    f"format={fmt},extractplanes={p},scale={cw}:{ch}:flags=bicubic:in_range=pc:out_range=pc", "gray"
                ),
                cw * ch,
            )
            for p in "uv"
        ]
        chroma = [u + v for u, v in zip(*planes, strict=True)]
    got = b"".join(
        from_tensor(model.run({"x": to_tensor(f, pix_fmt, w, h)})["y"], pix_fmt, f, w, h, chroma=c)
        for f, c in zip(frames, chroma, strict=True)
    )
    assert hashlib.md5(got).hexdigest() == hashlib.md5(want).hexdigest(), _diff(got, want)


def _chunks(raw: bytes, n: int) -> list[bytes]:
    return [raw[i : i + n] for i in range(0, len(raw), n)]
