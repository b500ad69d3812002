"""Debian's ffmpeg 5.1 as the oracle for the native backend, plus FFmpeg's frame<->tensor maths.

FFmpeg 5.1 is the last release with ``dnn_backend=native``; Debian 12 ships it as /usr/bin/ffmpeg
(the imageio-ffmpeg binary the rest of the suite uses is 9.0 and has no native backend). Input
frames are pulled from the same binary, so swscale differences between FFmpeg versions cannot
matter; the conversion below is dnn_io_proc's for the native backend (the real io_proc lives in
avdnn.dnn.io_proc and is tested on its own):

* rgb24/bgr24: bytes in memory order are channels; in = byte * float32(1/255) (one float32
  multiply); out = clip_uint8((int)lrintf(255.0f * v)), rounding half to even.
* grayf32: raw float32 both ways.
* yuv420p: only Y goes through the model, with the rgb24 scaling; U and V are copied.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

import numpy as np
from spine_util import missing

FFMPEG = os.environ.get("AVDNN_NATIVE_FFMPEG", "/usr/bin/ffmpeg")
W, H = 64, 48
SOURCE = "testsrc2=s=160x120:r=10:d=0.3"  # 3 frames
#: Put before every filter chain: noise and a bicubic downscale give thousands of distinct
#: grayf32 values (testsrc2 alone has about 15 grey levels at this size).
PRE = f"noise=alls=40:allf=t+u,scale={W}:{H}:flags=bicubic"


@functools.cache
def ffmpeg_skip_reason() -> str | None:
    """None when FFMPEG is a 5.x build whose dnn_processing lists the native backend."""
    if not os.access(FFMPEG, os.X_OK):
        return (
            f"{FFMPEG} not found: the native-backend oracle needs Debian 12's ffmpeg 5.1 "
            "(apt-get install --no-install-recommends ffmpeg)"
        )
    try:
        ver = subprocess.run([FFMPEG, "-hide_banner", "-version"], capture_output=True, text=True, timeout=30).stdout
        helptext = subprocess.run(
            [FFMPEG, "-hide_banner", "-h", "filter=dnn_processing"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{FFMPEG} does not run: {exc}"
    m = re.search(r"ffmpeg version (\S+)", ver)
    version = m.group(1) if m else "?"
    if not re.match(r"(n)?5\.", version):
        return f"{FFMPEG} is ffmpeg {version}; the native DNN backend oracle needs ffmpeg 5.x"
    if not re.search(r"^\s+native\s", helptext, re.M):
        return f"{FFMPEG} (ffmpeg {version}) has no native backend in dnn_processing"
    return None


def need_ffmpeg51() -> None:
    reason = ffmpeg_skip_reason()
    if reason:
        missing("oracle", reason)


def ffmpeg_raw(vf: str, pix_fmt: str, source: str = SOURCE) -> bytes:
    """Raw frames out of ``-f lavfi -i source -vf PRE,vf`` in ``pix_fmt``."""
    cmd = [
        FFMPEG,
        "-nostdin",
        "-hide_banner",
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        source,
        "-vf",
        f"{PRE},{vf}",
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"ffmpeg failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")
    return proc.stdout


def frame_size(pix_fmt: str, w: int, h: int) -> int:
    return {
        "rgb24": 3 * w * h,
        "bgr24": 3 * w * h,
        "grayf32le": 4 * w * h,
        "yuv420p": w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2),
    }[pix_fmt]


def split(raw: bytes, pix_fmt: str, w: int, h: int) -> list[bytes]:
    n = frame_size(pix_fmt, w, h)
    assert len(raw) % n == 0 and raw, (len(raw), n)
    return [raw[i : i + n] for i in range(0, len(raw), n)]


def u8_to_float(b: np.ndarray) -> np.ndarray:
    return b.astype(np.float32) * np.float32(1 / 255)


def float_to_u8(v: np.ndarray) -> np.ndarray:
    """av_clip_uint8(lrintf(255.0f * v)): lrintf gives a 64-bit long, av_clip_uint8 takes an int."""
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.rint(np.float32(255.0) * v.astype(np.float32)).astype(np.float64)
        ok = np.isfinite(r) & (np.abs(r) < 2.0**63)
        as_long = np.where(ok, r, -(2.0**63)).astype(np.int64)  # x86's "integer indefinite"
    return np.clip(as_long.astype(np.int32), 0, 255).astype(np.uint8)


def to_tensor(frame: bytes, pix_fmt: str, w: int, h: int) -> np.ndarray:
    if pix_fmt in ("rgb24", "bgr24"):
        return u8_to_float(np.frombuffer(frame, np.uint8).reshape(1, h, w, 3))
    if pix_fmt == "grayf32le":
        return np.frombuffer(frame, "<f4").reshape(1, h, w, 1).astype(np.float32)
    if pix_fmt == "yuv420p":
        return u8_to_float(np.frombuffer(frame, np.uint8)[: w * h].reshape(1, h, w, 1))
    raise ValueError(pix_fmt)


def from_tensor(t: np.ndarray, pix_fmt: str, src_frame: bytes, w: int, h: int, chroma: bytes | None = None) -> bytes:
    """The output frame: ``t`` converted back; yuv chroma copied from the input (or ``chroma``)."""
    if pix_fmt == "grayf32le":
        return np.ascontiguousarray(t, "<f4").tobytes()
    if pix_fmt in ("rgb24", "bgr24"):
        assert t.shape[-1] == 3
        return float_to_u8(t).tobytes()
    if pix_fmt == "yuv420p":
        assert t.shape[-1] == 1
        if chroma is None:
            assert t.shape[1:3] == (h, w), "a size-changing model needs scaled chroma"
            chroma = src_frame[w * h :]
        return float_to_u8(t).tobytes() + chroma
    raise ValueError(pix_fmt)
