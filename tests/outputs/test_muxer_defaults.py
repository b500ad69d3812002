"""Outputs whose muxer has no default codec, or that get no stream: ffmpeg's status and files.

ffmpeg picks an output's streams with ``av_guess_codec`` (the segment muxer answers for the
format its file name names, image2 for its extension) and refuses an output that gets none:
"Output file does not contain any stream", exit 234. ffmpeg 9.0.2 is the oracle for the files
each writes (the same names, the same packets) and for the status.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from outputs_util import hashes
from spine_util import run_cli, run_cli_subprocess, run_ffmpeg

BITEXACT = ["-bitexact", "-g", "30"]  # keyframes each second, so a segmenter has places to cut


def _both(ffmpeg: str, tmp_path: Path, args: list[str], *, inputs: list[str]) -> tuple[Path, Path, int, int]:
    """Run avdnn in ``tmp/a`` and ffmpeg in ``tmp/f`` with ``args`` (``{out}`` is each one's folder)."""
    dirs = tmp_path / "a", tmp_path / "f"
    rcs = []
    for root, runner in zip(dirs, ("avdnn", "ffmpeg"), strict=True):
        (root / "sub").mkdir(parents=True)
        given = [a.replace("{out}", str(root)) for a in args]
        # x264's packets depend on heap bytes it never wrote: two fresh, zeroed processes (spine_util)
        if runner == "avdnn":
            res = run_cli_subprocess(["-hide_banner", "-loglevel", "error", *inputs, *given], zeroed=True)
        else:
            res = run_ffmpeg(ffmpeg, [*inputs, *given], zeroed=True)
        rcs.append(res.rc)
    return dirs[0], dirs[1], rcs[0], rcs[1]


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _packets(ffmpeg: str, path: Path, fmt: list[str] | None = None) -> list[str]:
    """The md5 of every packet of stream 0, as ffmpeg demuxes ``path`` (what the muxer wrote)."""
    res = run_ffmpeg(ffmpeg, [*(fmt or []), "-i", str(path), "-map", "0:v", "-c", "copy", "-f", "framemd5", "-"])
    assert res.rc == 0, res.err
    return hashes(res.out.decode())


def test_an_output_without_a_stream_is_refused_as_ffmpeg_refuses_it(
    ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    a, f, got, want = _both(ffmpeg, tmp_path, ["-vn", "{out}/out.mp4"], inputs=["-i", clip["carphone"]])
    assert want == 234 and got == want
    assert _files(a) == _files(f) == []
    res = run_cli(["-hide_banner", "-loglevel", "error", "-i", clip["carphone"], "-vn", str(tmp_path / "x.mp4")])
    assert "Output file does not contain any stream" in res.err, res.err


@pytest.mark.parametrize(
    ("args", "media"),
    [
        (["-f", "segment", "-segment_time", "1", "{out}/seg%02d.mp4"], ["seg00.mp4", "seg01.mp4", "seg03.mp4"]),
        (["-f", "segment", "-segment_time", "1", "{out}/seg%02d.ts"], ["seg00.ts", "seg02.ts"]),
        (["-f", "hls", "-hls_time", "1", "{out}/x.m3u8"], ["x.m3u8", "x1.ts"]),
    ],
)
def test_segmenters_pick_the_video_as_ffmpeg_does(
    args: list[str], media: list[str], ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    """No -map, no -c:v: the segment muxer's inner format (from the name) and hls choose H.264."""
    a, f, got, want = _both(ffmpeg, tmp_path, [*BITEXACT, *args], inputs=["-i", clip["carphone"]])
    assert got == want == 0
    assert _files(a) == _files(f) and len(_files(a)) > 2, (_files(a), _files(f))
    for name in media:
        assert _packets(ffmpeg, a / name) == _packets(ffmpeg, f / name), name


def test_dash_picks_the_video_as_ffmpeg_does(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    a, f, got, want = _both(ffmpeg, tmp_path, [*BITEXACT, "-f", "dash", "{out}/x.mpd"], inputs=["-i", clip["carphone"]])
    assert got == want == 0
    assert _files(a) == _files(f), (_files(a), _files(f))
    joined = []
    for root in (a, f):  # the init segment and the media chunk make one fragmented MP4
        chunks = sorted(root.glob("chunk-stream0-*.m4s"))
        path = root / "whole.mp4"
        path.write_bytes((root / "init-stream0.m4s").read_bytes() + b"".join(c.read_bytes() for c in chunks))
        joined.append(_packets(ffmpeg, path))
    assert joined[0] == joined[1] and len(joined[0]) == 120


def test_a_segment_name_without_a_known_format_gets_no_stream(
    ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    args = ["-f", "segment", "-segment_time", "1", "-segment_format", "mpegts", "{out}/seg%02d.bin"]
    a, f, got, want = _both(ffmpeg, tmp_path, args, inputs=["-i", clip["carphone"]])
    assert want == 234 and got == want
    assert _files(a) == _files(f) == []


@pytest.mark.parametrize(
    ("args", "status"),
    [
        ([], 234),  # tee has no default codec: no stream is chosen
        (["-map", "0:v"], 8),  # mapped, but no encoder to pick: "Automatic encoder selection failed"
        (["-map", "0:v", "-c:v", "libx264", "-flags", "+global_header"], 0),
    ],
)
def test_tee_as_ffmpeg(args: list[str], status: int, ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """``-f tee "a.mkv|sub/b.mp4"``: a slave in a folder is no "No such file or directory" any more."""
    tee = ["-f", "tee", "{out}/a.mkv|{out}/sub/b.mp4"]
    a, f, got, want = _both(ffmpeg, tmp_path, [*BITEXACT, *args, *tee], inputs=["-i", clip["carphone"]])
    assert want == status and got == want
    assert _files(a) == _files(f)
    for name in ("a.mkv", "sub/b.mp4") if status == 0 else ():
        assert _packets(ffmpeg, a / name) == _packets(ffmpeg, f / name), name


def test_tee_without_an_encoder_says_what_ffmpeg_says(clip: dict[str, str], tmp_path: Path) -> None:
    out = f"{tmp_path}/a.mkv|{tmp_path}/b.mp4"
    res = run_cli(["-hide_banner", "-loglevel", "error", "-i", clip["carphone"], "-map", "0:v", "-f", "tee", out])
    assert res.rc == 8, res.err
    assert "Automatic encoder selection failed Default encoder for format tee (codec none)" in res.err, res.err


def test_image2pipe_picks_ffmpegs_encoder(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    a, f, got, want = _both(ffmpeg, tmp_path, ["-f", "image2pipe", "{out}/frames.bin"], inputs=["-i", clip["carphone"]])
    assert got == want == 0
    for root in (a, f):  # both JPEG images (the muxer's MJPEG), 120 of them
        data = (root / "frames.bin").read_bytes()
        assert data[:2] == b"\xff\xd8" and data.count(b"\xff\xd8\xff") == 120
        res = run_ffmpeg(ffmpeg, ["-f", "image2pipe", "-i", str(root / "frames.bin"), "-f", "framemd5", "-"])
        assert res.rc == 0 and len(hashes(res.out.decode())) == 120, res.err


def test_an_existing_sequence_or_playlist_is_not_asked_about(clip: dict[str, str], tmp_path: Path) -> None:
    """ffmpeg's assert_file_overwrite looks at a file the muxer writes itself (and image2's single
    image), never at a muxer that opens its own files: without -y an hls playlist is rewritten."""
    playlist = tmp_path / "x.m3u8"
    playlist.write_text("old")
    res = run_cli(["-hide_banner", "-loglevel", "error", "-n", "-i", clip["carphone"], "-f", "hls", str(playlist)])
    assert res.rc == 0, res.err
    assert playlist.read_text().startswith("#EXTM3U")
    single = tmp_path / "one.png"
    single.write_bytes(b"")
    res = run_cli(["-hide_banner", "-loglevel", "error", "-n", "-i", clip["carphone"], "-frames:v", "1", str(single)])
    assert res.rc != 0 and "already exists" in res.err and os.path.getsize(single) == 0, res.err
