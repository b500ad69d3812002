"""avdnn's own filters with dnn_backend=native against Debian's ffmpeg 5.1, end to end.

test_oracle.py checks the native layer maths; this runs the whole avdnn chain (source,
io_proc, engine, native backend, filter, sink) and ffmpeg 5.1's dnn_processing / sr / derain
on the same input file and requires MD5-identical output. The input is written once by
ffmpeg 5.1 itself as raw video in NUT, so no libswscale difference between FFmpeg versions
can enter; the filters get frames already in the pixel format they process.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import builders
import pytest
from ffmpeg_oracle import FFMPEG, PRE, SOURCE

from avdnn.cli.command import main as avdnn_main

CASES = [
    # (filter, model builder, input pixel format, output pixel format)
    ("dnn_processing", lambda: builders.conv_probe(3, "relu", "same"), "rgb24", "rgb24"),
    ("dnn_processing", lambda: builders.all_layers(3), "bgr24", "bgr24"),
    # grayf32 does not survive NUT between FFmpeg versions (read back as rgb555le): feed gray
    # and convert in both chains (gray8 -> grayf32 is v/255 in every libswscale)
    ("format=grayf32,dnn_processing", lambda: builders.conv_probe(1, "tanh", "clamp"), "gray", "grayf32le"),
    ("dnn_processing", lambda: builders.conv_probe(1, "sigmoid", "valid", k=1), "yuv420p", "yuv420p"),
    ("dnn_processing", lambda: builders.all_layers(1), "yuv444p", "yuv444p"),
    ("sr", lambda: builders.espcn(2), "yuv420p", "yuv420p"),
    ("sr", lambda: builders.espcn(3), "gray", "gray"),
    ("derain", lambda: builders.all_layers(3), "rgb24", "rgb24"),
]


def _input(tmp: Path, pix_fmt: str) -> Path:
    path = tmp / f"in_{pix_fmt}.nut"
    cmd = [
        FFMPEG,
        "-nostdin",
        "-hide_banner",
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        SOURCE,
        "-vf",
        f"{PRE},format={pix_fmt}",
        "-c:v",
        "rawvideo",
        "-f",
        "nut",
        "-y",
        str(path),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


def _ffmpeg51(inp: Path, vf: str, pix_fmt: str) -> bytes:
    cmd = [
        FFMPEG,
        "-nostdin",
        "-hide_banner",
        "-v",
        "error",
        "-i",
        str(inp),
        "-vf",
        vf,
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc.stdout


def _avdnn(inp: Path, vf: str, pix_fmt: str, out: Path, extra: list[str]) -> bytes:
    rc = avdnn_main(
        [
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            str(inp),
            "-vf",
            vf,
            *extra,
            "-pix_fmt",
            pix_fmt,
            "-f",
            "rawvideo",
            "-y",
            str(out),
        ]
    )
    assert rc == 0
    return out.read_bytes()


@pytest.mark.parametrize(
    ("filt", "build", "in_fmt", "out_fmt"), CASES, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)]
)
@pytest.mark.parametrize("mode", ["sync", "async_batched"])
def test_avdnn_filter_md5_identical_to_ffmpeg51(filt, build, in_fmt, out_fmt, mode, tmp_path, ffmpeg51) -> None:
    model = build().save(tmp_path)
    inp = _input(tmp_path, in_fmt)
    args = f"dnn_backend=native:model={model}:input=x:output=y"
    if filt.endswith("sr"):
        args += ":scale_factor=" + ("2" if "espcn2" in model.name else "3")
    want = _ffmpeg51(inp, f"{filt}={args}", out_fmt)
    ours_args = args + (":async=0" if mode == "sync" else ":async=1:batch_size=2:nireq=2")
    got = _avdnn(inp, f"{filt}={ours_args}", out_fmt, tmp_path / "out.raw", [])
    assert len(got) == len(want) and len(want) > 0
    assert hashlib.md5(got).hexdigest() == hashlib.md5(want).hexdigest()
