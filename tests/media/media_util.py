"""Helpers of the input-side tests: damaged and rotated clips, and ffmpeg-vs-avdnn framemd5 runs.

A plain module with a name no other test folder uses (the test folders have no __init__.py).
"""

from __future__ import annotations

import random
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

from spine_util import Result, run_cli, run_ffmpeg

FRAMEMD5 = ["-fflags", "+bitexact", "-f", "framemd5", "-"]


def mdat_span(data: bytes) -> tuple[int, int]:
    """Start and end offsets of the payload of the top-level ``mdat`` box of an MP4."""
    pos = 0
    while pos + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[pos : pos + 8])
        header = 8
        if size == 1:
            size, header = struct.unpack(">Q", data[pos + 8 : pos + 16])[0], 16
        elif size == 0:
            size = len(data) - pos
        if kind == b"mdat":
            return pos + header, pos + size
        pos += size
    raise ValueError("no mdat box")


def corrupt_mp4(src: str | Path, dst: Path, *, total: int, chunk: int, seed: int) -> Path:
    """Overwrite ``total`` bytes, in runs of ``chunk``, at seeded offsets inside the mdat.

    Deterministic: the same arguments always damage the same bytes the same way. Container
    boxes stay intact, so the demuxer reads every packet and only the decoder sees damage.
    """
    data = bytearray(Path(src).read_bytes())
    start, end = mdat_span(bytes(data))
    rng = random.Random(seed)
    for _ in range(total // chunk):
        off = rng.randrange(start, end - chunk)
        data[off : off + chunk] = rng.randbytes(chunk)
    dst.write_bytes(bytes(data))
    return dst


def ffmpeg_make(ffmpeg: str, args: Sequence[str], out: Path) -> Path:
    """Write ``out`` with the oracle ffmpeg (quiet; raises when it fails)."""
    subprocess.run(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args, str(out)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return out


def both(
    ffmpeg: str, input_args: Sequence[str], path: str | Path, output_args: Sequence[str] = ()
) -> tuple[Result, Result]:
    """The same command to ffmpeg and to avdnn: ``[input options] -i path [output options] framemd5``."""
    argv = [*input_args, "-i", str(path), *output_args, *FRAMEMD5]
    ours = run_cli(["-hide_banner", "-loglevel", "error", *argv])
    return run_ffmpeg(ffmpeg, argv), ours


def frame_lines(out: bytes) -> list[str]:
    return [ln for ln in out.decode().splitlines() if ln and not ln.startswith("#")]
