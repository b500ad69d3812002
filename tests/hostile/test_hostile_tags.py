"""Tags that are not UTF-8, as old tools and cameras write them: read, shown and copied as ffmpeg does.

The files are the oracle's, from a few frames of a sample clip, with tags written as ASCII
placeholders and then patched to Latin-1 bytes of the same length (every size field around
them still holds). ffmpeg reads such a file like any other and copies the bytes; PyAV's strict
UTF-8 refused it at av.open, which avdnn reported as ``Unknown input format: 'None'``.
"""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest
from mutate import oracle, patch_tag
from spine_util import run_cli

from avdnn.media import tags
from avdnn.media.input.source import Source
from avdnn.media.tags import tag_bytes

TITLE = b"Caf\xe9 \xe0 Z\xfcrich"  # Latin-1
COMMENT = b"\xc9t\xe9"
ARTIST = b"M\xf6tley Cr\xfce"  # typed in a Latin-1 terminal: argv holds these bytes
COMMON = ["-hide_banner", "-nostdin", "-nostats"]
EXTS = {"mkv": ["-f", "matroska"], "mp4": ["-f", "mp4"]}


def _latin1(ffmpeg: str, src: str, path: Path, fmt: list[str]) -> Path:
    title, comment = b"T" * len(TITLE), b"C" * len(COMMENT)
    stream_tag = "comment" if "matroska" in fmt else "handler_name"
    oracle(
        ffmpeg,
        ["-i", src, "-frames:v", "10", "-c:v", "libx264", "-preset", "ultrafast", "-threads", "1",
         "-metadata", f"title={title.decode()}", "-metadata:s:v:0", f"{stream_tag}={comment.decode()}",
         *fmt, str(path)],
    )  # fmt: skip
    path.write_bytes(patch_tag(patch_tag(path.read_bytes(), title, TITLE), comment, COMMENT))
    return path


@pytest.fixture(scope="module")
def latin1(ffmpeg: str, clip: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Ten frames of carphone with a Latin-1 title and stream tag, by container."""
    root = tmp_path_factory.mktemp("latin1")
    return {ext: _latin1(ffmpeg, clip["carphone"], root / f"latin1.{ext}", fmt) for ext, fmt in EXTS.items()}


def _ffmpeg(ffmpeg: str, args: list[str | bytes]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([ffmpeg, *COMMON, *args], capture_output=True, timeout=60, check=False)


def _hashes(out: bytes) -> list[bytes]:
    return [line for line in out.splitlines() if line and not line.startswith(b"#")]


@pytest.mark.parametrize("ext", list(EXTS))
def test_every_frame_is_read_as_ffmpeg_reads_it(ffmpeg: str, latin1: dict[str, Path], ext: str) -> None:
    theirs = _ffmpeg(ffmpeg, ["-i", str(latin1[ext]), "-f", "framemd5", "-"])
    ours = run_cli([*COMMON, "-i", str(latin1[ext]), "-f", "framemd5", "-"])
    assert theirs.returncode == ours.rc == 0, ours.err
    assert len(_hashes(ours.out)) == 10 and _hashes(ours.out) == _hashes(theirs.stdout)


@pytest.mark.parametrize("ext", list(EXTS))
def test_the_banner_shows_the_bytes_as_escapes(ffmpeg: str, latin1: dict[str, Path], ext: str) -> None:
    """``-i X`` alone: ffmpeg's status (no output file), and the title's bytes in the Input block
    (ffmpeg writes them raw; avdnn as ``\\xe9``: docs/media.md)."""
    theirs = _ffmpeg(ffmpeg, ["-i", str(latin1[ext])])
    ours = run_cli([*COMMON, "-i", str(latin1[ext])])
    assert ours.rc == theirs.returncode, ours.err
    assert b"title           : " + TITLE in theirs.stderr
    assert "title           : Caf\\xe9 \\xe0 Z\\xfcrich" in ours.err
    assert "\\xc9t\\xe9" in ours.err  # the stream's tag too


def test_the_tags_keep_their_bytes_in_python(latin1: dict[str, Path]) -> None:
    with Source(str(latin1["mkv"])) as source:
        assert tag_bytes(source.container.metadata["title"]) == TITLE
        assert tag_bytes(source.container.streams.video[0].metadata["COMMENT"]) == COMMENT


def _tags(path: Path) -> tuple[dict[str, bytes], list[dict[str, bytes]]]:
    """A file's global and per-stream tags as bytes, without the encoder names (the two
    programs' libraries differ)."""
    import av

    def plain(d: dict[str, str]) -> dict[str, bytes]:
        return {k: tag_bytes(v) for k, v in d.items() if k.lower() != "encoder"}

    with av.open(str(path), metadata_errors="surrogateescape") as c:
        return plain(c.metadata), [plain(s.metadata) for s in c.streams]


@pytest.mark.parametrize("out_ext", ["mkv", "mp4", "mov"])
def test_an_output_carries_the_bytes_ffmpeg_writes(
    ffmpeg: str, latin1: dict[str, Path], tmp_path: Path, out_ext: str
) -> None:
    """The input's Latin-1 tags copied, and a Latin-1 ``-metadata`` value from argv written as typed."""
    args = ["-i", str(latin1["mkv"]), "-map", "0", "-c", "copy", "-metadata"]
    theirs, ours = tmp_path / f"ffmpeg.{out_ext}", tmp_path / f"avdnn.{out_ext}"
    ran = _ffmpeg(ffmpeg, [*args, b"artist=" + ARTIST, str(theirs)])
    assert ran.returncode == 0, ran.stderr
    res = run_cli([*COMMON, *args, os.fsdecode(b"artist=" + ARTIST), str(ours)])
    assert res.rc == 0, res.err
    assert _tags(ours) == _tags(theirs)
    glob, _ = _tags(ours)
    assert glob["title"] == TITLE and ARTIST in glob.values()


def _exif_jpeg(ffmpeg: str, path: Path) -> Path:
    """A camera's JPEG: one frame with an EXIF Make in Latin-1 (APP1, TIFF little-endian, one IFD entry)."""
    oracle(ffmpeg, ["-f", "lavfi", "-i", "testsrc2=s=64x48", "-frames:v", "1", str(path)])
    make = b"Caf\xe9 \xe0\x00"
    ifd = struct.pack("<H", 1) + struct.pack("<HHII", 0x010F, 2, len(make), 8 + 2 + 12 + 4) + struct.pack("<I", 0)
    app1 = b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 8) + ifd + make
    data = path.read_bytes()
    path.write_bytes(data[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + data[2:])
    return path


def test_a_cameras_latin1_exif_does_not_stop_the_run(ffmpeg: str, tmp_path: Path) -> None:
    """The mjpeg decoder puts EXIF strings in the frame's metadata, which PyAV reads as strict UTF-8
    (a traceback before): the frame goes on, as in ffmpeg, with one warning that avdnn's filters
    do not see those tags."""
    jpeg = _exif_jpeg(ffmpeg, tmp_path / "camera.jpg")
    args = ["-i", str(jpeg), "-vf", "scale=32:24", "-f", "framemd5", "-"]
    theirs = _ffmpeg(ffmpeg, args)
    tags._warn_once.cache_clear()  # once per process: this test's run is the one that says it
    ours = run_cli([*COMMON, *args])
    assert ours.rc == theirs.returncode == 0, ours.err
    assert "Traceback" not in ours.err and len(_hashes(ours.out)) == 1
    assert ours.err.count("frame metadata that is not UTF-8") == 1


@pytest.mark.parametrize("fmt", ["nope", "webm", "mp4:aac"])
def test_a_format_name_is_checked_as_ffmpeg_checks_it(ffmpeg: str, latin1: dict[str, Path], fmt: str) -> None:
    """``-f`` names an input format (a demuxer's names, comma-separated, count) or is refused
    with ffmpeg's cause and status."""
    args = ["-f", fmt, "-i", str(latin1["mkv"]), "-f", "null", "-"]
    theirs = _ffmpeg(ffmpeg, args)
    ours = run_cli([*COMMON, *args])
    assert ours.rc == theirs.returncode, (ours.err, theirs.stderr)
    if ours.rc:
        assert f"Unknown input format: '{fmt}'" in ours.err and b"Unknown input format: '%s'" % fmt.encode() in (
            theirs.stderr
        )
