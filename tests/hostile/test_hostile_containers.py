"""Mutated containers through the real CLI: each run ends within a bound, never with a traceback.

From small clips the oracle ffmpeg makes (H.264 in MP4 with its moov at the end, the same with
``+faststart``, Matroska, MPEG-TS): random corruption (Hypothesis) and a Y4M header that
declares a frame of 760 MB. ``python -m avdnn -i BAD -f null -`` runs in a subprocess with a
timeout (the bound: a hang fails the test), and ends either with concealment (exit 0, the frame
accounting printed) or with one error line and ffmpeg's status, as ffmpeg would. The seeded
mutations (cuts, flipped bits, damaged headers, splices, odd tags, files that cannot be opened)
are test_hostile_mutations.py, where each exit status is compared with the oracle's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hostile_util import FEW
from hypothesis import given, settings
from hypothesis import strategies as st
from spine_util import run_ffmpeg

BOUND = 90  # seconds a run may take on a loaded machine; a hang (minutes) fails the test
CLIPS = {
    "mp4": ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-f", "mp4"],  # moov at the end
    "faststart.mp4": ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-movflags", "+faststart", "-f", "mp4"],
    "mkv": ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-f", "matroska"],
    "ts": ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-f", "mpegts"],
}


@pytest.fixture(scope="session")
def clips(ffmpeg: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The intact clips (2 s of testsrc2, 50 frames), as bytes, by container."""
    root = tmp_path_factory.mktemp("hostile")
    out = {}
    for name, args in CLIPS.items():
        path = root / f"clip.{name}"
        res = run_ffmpeg(ffmpeg, ["-f", "lavfi", "-i", "testsrc2=s=176x144:d=2", *args, str(path)])
        assert res.rc == 0, res.err
        out[name] = path.read_bytes()
    return out


def _run(path: Path) -> tuple[int, str]:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "avdnn", "-hide_banner", "-nostats", "-i", str(path), "-f", "null", "-"],
            capture_output=True,
            timeout=BOUND,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"avdnn did not end within {BOUND} s on {path.name}") from exc
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def _ends_well(path: Path) -> tuple[int, str]:
    """Concealment (exit 0 and the books) or one error line with a status; never a traceback."""
    rc, err = _run(path)
    assert "Traceback" not in err and "internal error" not in err, err
    ours = [line for line in err.splitlines() if line.startswith("avdnn: ") and "was finished cleanly" not in line]
    if rc == 0:
        assert "frames: read" in err and not ours, err
    else:
        assert 0 < rc < 256 and len(ours) == 1, err
    return rc, err


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_intact_clips_decode(clips: dict[str, bytes], tmp_path: Path) -> None:
    for name, data in clips.items():
        rc, err = _ends_well(_write(tmp_path, f"ok.{name}", data))
        assert rc == 0 and "frames: read 50, written 50" in err, (name, err)


@settings(FEW, max_examples=12)
@given(st.sampled_from(list(CLIPS)), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=40))
def test_any_corruption_ends_within_the_bound(
    clips: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, name: str, edits: list[tuple[float, int]]
) -> None:
    data = bytearray(clips[name])
    for where, byte in edits:
        data[min(int(where * len(data)), len(data) - 1)] = byte
    _ends_well(_write(tmp_path_factory.mktemp("fuzz"), f"fuzz.{name}", bytes(data)))


def test_a_gigantic_declared_frame_is_one_error_line(tmp_path: Path) -> None:
    """A Y4M header declaring 23000x11000 4:4:4 (759 MB a frame), with 4 KB of it: no allocation
    of the declared size and no hang; the short packet is dropped and the run ends with no frame,
    exit 0, as ffmpeg 9.0.2's does ("Truncating packet of size 759000000 to 4096")."""
    head = b"YUV4MPEG2 W23000 H11000 F25:1 Ip A1:1 C444\nFRAME\n"
    rc, err = _ends_well(_write(tmp_path, "huge.y4m", head + bytes(4096)))
    assert rc != 0 or "frames: read 0" in err, err


def test_a_frame_size_libavutil_refuses_is_one_error_line(tmp_path: Path) -> None:
    head = b"YUV4MPEG2 W100000 H100000 F25:1 Ip A1:1 C420jpeg\nFRAME\n"
    rc, _ = _ends_well(_write(tmp_path, "impossible.y4m", head + bytes(4096)))
    assert rc != 0
