"""What tools read from ffmpeg, checked against the static ffmpeg 9.0.2: the Input block, pipes,
one-chain -filter_complex, -progress and the listings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avdnn.errors import InvalidArgumentError, NotSupportedError
from avdnn.graph.complexplan import graph_for_output


def _avdnn(args: list[str], *, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "avdnn", *args], input=stdin, capture_output=True, timeout=timeout, check=False
    )


def _ffmpeg(exe: str, args: list[str], *, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([exe, *args], input=stdin, capture_output=True, timeout=120, check=False)


def _hashes(framemd5: bytes) -> list[bytes]:
    """The per-frame lines of a framemd5 (its #software header names the library version)."""
    return [ln for ln in framemd5.splitlines() if not ln.startswith(b"#")]


@pytest.fixture(scope="module")
def mkv(ffmpeg: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A generated Matroska file: video, audio, global and stream tags."""
    path = tmp_path_factory.mktemp("gen") / "gen.mkv"
    subprocess.run(
        [
            ffmpeg,
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=96x64:d=1",
            "-f",
            "lavfi",
            "-i",
            "sine=d=1",
            "-metadata",
            "title=a test",
            "-metadata:s:a:0",
            "language=fra",
            "-c:v",
            "mpeg4",
            "-c:a",
            "flac",
            str(path),
        ],
        check=True,
    )
    return str(path)


# --------------------------------------------------------------------------- the Input block


@pytest.mark.parametrize("name", ["carphone", "bigbuckbunny", "mkv"])
def test_input_block_is_ffmpegs(name: str, clip: dict[str, str], mkv: str, ffmpeg: str) -> None:
    path = mkv if name == "mkv" else clip[name]
    ref = _ffmpeg(ffmpeg, ["-hide_banner", "-i", path])
    got = _avdnn(["-hide_banner", "-i", path])
    assert ref.returncode == got.returncode == 1
    assert got.stderr.decode() == ref.stderr.decode()
    assert got.stderr.decode().startswith("Input #0, ")


def test_banner_header_and_output_block(clip: dict[str, str]) -> None:
    got = _avdnn(
        [
            "-nostdin",
            "-i",
            clip["carphone"],
            "-frames:v",
            "2",
            "-pix_fmt",
            "rgb24",
            "-vcodec",
            "rawvideo",
            "-f",
            "image2pipe",
            "-",
        ]
    )
    err = got.stderr.decode()
    assert got.returncode == 0, err
    assert err.splitlines()[0].startswith("avdnn version ")
    assert "\nStream mapping:\n  Stream #0:0 -> #0:0 (h264 (native) -> rawvideo (native))\n" in err
    assert "\nOutput #0, image2pipe, to 'pipe:':\n" in err
    assert err.index("Input #0") < err.index("Stream mapping:") < err.index("Output #0")
    assert len(got.stdout) == 2 * 176 * 144 * 3
    quiet = _avdnn(["-hide_banner", "-loglevel", "error", "-i", clip["carphone"], "-frames:v", "1", "-f", "null", "-"])
    assert quiet.returncode == 0 and quiet.stderr == b""


# --------------------------------------------------------------------------- pipes


RAW_IN = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "64x48", "-r", "10"]


def test_rawvideo_from_stdin_gives_ffmpegs_md5(ffmpeg: str) -> None:
    data = os.urandom(64 * 48 * 3 * 7)
    ref = _ffmpeg(ffmpeg, ["-v", "error", *RAW_IN, "-i", "-", "-f", "md5", "-"], stdin=data)
    got = _avdnn(["-v", "error", *RAW_IN, "-i", "-", "-f", "md5", "-"], stdin=data)
    assert ref.returncode == got.returncode == 0, got.stderr
    assert got.stdout == ref.stdout and got.stdout.startswith(b"MD5=")
    piped = _avdnn(
        ["-v", "error", *RAW_IN, "-i", "pipe:0", "-vf", "format=gray", "-f", "framemd5", "pipe:1"], stdin=data
    )
    ref2 = _ffmpeg(
        ffmpeg, ["-v", "error", *RAW_IN, "-i", "pipe:0", "-vf", "format=gray", "-f", "framemd5", "pipe:1"], stdin=data
    )
    assert piped.returncode == 0, piped.stderr
    assert _hashes(piped.stdout) == _hashes(ref2.stdout) and len(_hashes(piped.stdout)) == 7


@pytest.mark.parametrize("muxer", ["nut", "matroska", "mpegts", "image2pipe"])
def test_any_muxer_to_a_pipe(muxer: str, clip: dict[str, str], ffmpeg: str) -> None:
    codec = ["-c:v", "png"] if muxer == "image2pipe" else ["-c:v", "mpeg4"]
    got = _avdnn(["-v", "error", "-i", clip["carphone"], "-frames:v", "5", *codec, "-f", muxer, "pipe:1"])
    assert got.returncode == 0, got.stderr
    back = _ffmpeg(ffmpeg, ["-v", "error", "-f", muxer, "-i", "-", "-f", "framemd5", "-"], stdin=got.stdout)
    assert len(_hashes(back.stdout)) == 5, back.stderr


def test_broken_output_pipe_exits_as_ffmpeg(ffmpeg: str) -> None:
    """EPIPE ends the run with ffmpeg's status for AVERROR(EPIPE): 224, for '-' and pipe:1."""
    args = ["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc=d=20", "-f", "rawvideo"]
    statuses = []
    for argv in (
        [ffmpeg, *args, "-"],
        [sys.executable, "-m", "avdnn", *args, "-"],
        [sys.executable, "-m", "avdnn", *args, "pipe:1"],
    ):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.read(1000)
        proc.stdout.close()
        _, err = proc.communicate(timeout=60)
        assert b"Traceback" not in err
        statuses.append(proc.returncode)
    assert statuses == [224, 224, 224]


# --------------------------------------------------------------------------- -filter_complex


@pytest.mark.parametrize(
    "graph", ["[0]scale=88:-2[s0]", "[0:v]format=gray[a];[a]hflip[s0]", "[0:v:0]scale=64:-2 , format=rgb24[s0]"]
)
def test_one_chain_filter_complex_gives_ffmpegs_framemd5(graph: str, clip: dict[str, str], ffmpeg: str) -> None:
    args = ["-v", "error", "-i", clip["carphone"], "-filter_complex", graph, "-map", "[s0]", "-f", "framemd5", "-"]
    ref, got = _ffmpeg(ffmpeg, args), _avdnn(args)
    assert got.returncode == 0, got.stderr
    assert _hashes(got.stdout) == _hashes(ref.stdout) and len(_hashes(ref.stdout)) == 120


def test_filter_complex_script_and_audio_map(clip: dict[str, str], ffmpeg: str, tmp_path: Path) -> None:
    script = tmp_path / "g.txt"
    script.write_text("[0:v]scale=64:-2[v]")
    tail = ["-map", "[v]", "-map", "0:a", "-t", "0.2", "-c:a", "pcm_s16le", "-f", "framemd5", "-"]
    ref = _ffmpeg(ffmpeg, ["-v", "error", "-i", clip["bigbuckbunny"], "-filter_complex", "[0:v]scale=64:-2[v]", *tail])
    for opt, graph in (
        ("-filter_complex_script", str(script)),
        ("-/filter_complex", str(script)),
        ("-lavfi", "[0:v]scale=64:-2[v]"),
    ):
        got = _avdnn(["-v", "error", "-i", clip["bigbuckbunny"], opt, graph, *tail])
        assert got.returncode == 0, got.stderr
        assert _hashes(got.stdout) == _hashes(ref.stdout)
        assert any(ln.startswith(b"1,") for ln in _hashes(got.stdout))  # the audio is there


def test_linear_graph_follows_links() -> None:
    g = graph_for_output("[0]format=rgb24[s0];[s0]dnn_processing=dnn_backend=onnx:model=m.onnx[s1]", "s1")
    assert (g.linear, g.inputs[0].map, g.chain_text, g.output_label) == (
        True,
        "0:v:0",
        "format=rgb24,dnn_processing=dnn_backend=onnx:model=m.onnx",
        "s1",
    )
    assert graph_for_output("[0:1]null", None).inputs[0].map == "0:1"
    assert graph_for_output("[x]hflip[y];[0:v]vflip[x]", "y").chain_text == "vflip,hflip"
    assert graph_for_output("scale=8:8,format=gray", None).output_label is None


@pytest.mark.parametrize(
    ("graph", "named"),
    [
        ("[0:a]anull[o]", "anull"),
        ("[0:v]null[a];[a]hflip[b];[a]vflip[o]", "'a'"),
        ("[0][1]hstack,dnn_processing=dnn_backend=onnx:model=m.onnx[x];[x][0]vstack[o]", "dnn_processing"),
    ],
)
def test_graphs_that_cannot_run_are_refused_by_name(graph: str, named: str) -> None:
    with pytest.raises((NotSupportedError, InvalidArgumentError), match=named.replace("[", r"\[")):
        graph_for_output(graph, "o", n_inputs=2)


def test_unknown_map_label_is_ffmpegs_error(clip: dict[str, str]) -> None:
    got = _avdnn(
        ["-hide_banner", "-i", clip["carphone"], "-filter_complex", "[0]null[s0]", "-map", "[s9]", "-f", "null", "-"]
    )
    assert got.returncode != 0 and b"[s0]" in got.stderr and b"does not exist" in got.stderr
    with pytest.raises(InvalidArgumentError, match="matches no streams"):
        graph_for_output("[x]null", None)


# --------------------------------------------------------------------------- -progress


_KEYS = [
    "frame",
    "fps",
    "stream_0_0_q",
    "bitrate",
    "total_size",
    "out_time_us",
    "out_time_ms",
    "out_time",
    "dup_frames",
    "drop_frames",
    "speed",
    "progress",
]


def _blocks(text: str) -> list[dict[str, str]]:
    blocks, cur = [], {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        cur[key] = value.strip()
        if key == "progress":
            blocks.append(cur)
            cur = {}
    return blocks


def test_progress_blocks_as_ffmpeg(clip: dict[str, str], ffmpeg: str, tmp_path: Path) -> None:
    args = ["-v", "error", "-i", clip["carphone"], "-progress", "pipe:1", "-f", "null", "-"]
    ref, got = _blocks(_ffmpeg(ffmpeg, args).stdout.decode()), _blocks(_avdnn(args).stdout.decode())
    assert list(got[-1]) == list(ref[-1]) == _KEYS
    for key in ("frame", "out_time_us", "out_time_ms", "out_time", "progress", "total_size", "bitrate"):
        assert got[-1][key] == ref[-1][key], key
    assert all(b["progress"] == "continue" for b in got[:-1])
    out = tmp_path / "p.txt"
    slow = _avdnn(
        [
            "-v",
            "error",
            "-i",
            clip["carphone"],
            "-progress",
            str(out),
            "-stats_period",
            "0.01",
            "-vf",
            "scale=352:288:flags=lanczos",
            "-f",
            "null",
            "-",
        ]
    )
    assert slow.returncode == 0, slow.stderr
    blocks = _blocks(out.read_text())
    assert len(blocks) > 2 and blocks[-1]["progress"] == "end" and blocks[-1]["frame"] == "120"
    assert [int(b["out_time_us"]) for b in blocks] == sorted(int(b["out_time_us"]) for b in blocks)


def test_progress_ends_on_failure(clip: dict[str, str], tmp_path: Path) -> None:
    """An output that fails mid-run (a full disk) still gets its last block with progress=end, as ffmpeg's."""
    out = tmp_path / "p.txt"
    args = ["-v", "error", "-i", clip["carphone"], "-progress", str(out), "-y", "-f", "framemd5", "/dev/full"]
    res = _avdnn(args)
    assert res.returncode != 0 and b"No space left on device" in res.stderr, res.stderr
    blocks = _blocks(out.read_text())
    assert blocks and blocks[-1]["progress"] == "end" and list(blocks[-1]) == _KEYS
    assert all(b["progress"] == "continue" for b in blocks[:-1])


def test_progress_ends_on_ctrl_c(clip: dict[str, str], tmp_path: Path) -> None:
    """Ctrl-C (exit 255) still writes the last block with progress=end."""
    out = tmp_path / "p.txt"
    cmd = [sys.executable, "-m", "avdnn", "-v", "error", "-stream_loop", "-1", "-i", clip["carphone"]]
    cmd += ["-progress", str(out), "-stats_period", "0.05", "-f", "null", "-"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while "progress=continue" not in (out.read_text() if out.exists() else "") and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.05)  # polling a file another process writes: there is nothing to wait on
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 255, err
    blocks = _blocks(out.read_text())
    assert blocks[-1]["progress"] == "end" and int(blocks[-1]["frame"]) > 0
    assert [b["progress"] for b in blocks].count("end") == 1


# --------------------------------------------------------------------------- listings


def _listing(exe: list[str], name: str) -> list[str]:
    out = subprocess.run([*exe, "-hide_banner", f"-{name}"], capture_output=True, check=True, timeout=60).stdout
    return out.decode().splitlines()


@pytest.mark.parametrize(
    "name", ["encoders", "decoders", "codecs", "formats", "muxers", "demuxers", "pix_fmts", "protocols"]
)
def test_listings_in_ffmpegs_format(name: str, ffmpeg: str) -> None:
    """Headers equal; the lines of entries both builds have are equal and in the same order."""
    ref, got = _listing([ffmpeg], name), _listing([sys.executable, "-m", "avdnn"], name)
    head = next(i for i, ln in enumerate(ref) if ln.strip().startswith("--")) + 1 if name != "protocols" else 2
    assert got[:head] == ref[:head]
    both = set(ref) & set(got)
    assert len(both) > 0.8 * len(set(got))
    assert [ln for ln in got if ln in both] == [ln for ln in ref if ln in both]
    if name == "pix_fmts":
        assert got == ref
    if name == "encoders":
        assert " V....D libx264              libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (codec h264)" in got


def test_version() -> None:
    out = subprocess.run([sys.executable, "-m", "avdnn", "-version"], capture_output=True, check=True).stdout.decode()
    first = out.splitlines()[0]
    assert first.startswith("avdnn version ") and "Copyright" in first
    assert any(ln.startswith("  libavcodec ") for ln in out.splitlines())


def test_pix_fmt_the_encoder_lacks_is_auto_selected_as_ffmpeg(ffmpeg: str) -> None:
    """moviepy asks libx264 for yuva420p: ffmpeg warns and takes the encoder's closest format."""
    args = [
        "-v",
        "warning",
        "-f",
        "lavfi",
        "-i",
        "testsrc=d=0.2:s=64x48",
        "-c:v",
        "png",
        "-pix_fmt",
        "yuv420p",
        "-f",
        "framemd5",
        "-",
    ]
    ref, got = _ffmpeg(ffmpeg, args), _avdnn(args)
    assert got.returncode == 0, got.stderr
    assert _hashes(got.stdout) == _hashes(ref.stdout)
    assert b"Incompatible pixel format 'yuv420p' for codec 'png', auto-selecting format 'rgb24'" in got.stderr


@pytest.mark.parametrize(
    "extra",
    [["-vf", "scale=64:-2"], ["-filter_complex", "[0:v]scale=64:-2[v]", "-map", "[v]", "-map", "0:a", "-c:a", "copy"]],
)
def test_stream_mapping_block_is_ffmpegs(extra: list[str], clip: dict[str, str], ffmpeg: str, tmp_path: Path) -> None:
    def mapping(exe: list[str], out: Path) -> str:
        err = subprocess.run(
            [
                *exe,
                "-hide_banner",
                "-nostdin",
                "-i",
                clip["bigbuckbunny"],
                "-t",
                "0.2",
                *extra,
                "-c:v",
                "mpeg4",
                str(out),
            ],
            capture_output=True,
            check=True,
            timeout=120,
        ).stderr.decode()
        block = err[err.index("Stream mapping:\n") :]
        return block[: block.index("Output #0")].removesuffix("Press [q] to stop, [?] for help\n")

    ref = mapping([ffmpeg], tmp_path / "ref.mp4")  # mp4: both builds encode its audio with aac
    assert mapping([sys.executable, "-m", "avdnn"], tmp_path / "got.mp4") == ref
    assert ref.count("\n") >= 3


def test_raw_audio_from_stdin_as_ffmpeg(ffmpeg: str) -> None:
    """moviepy's audio pass: -f s16le -acodec pcm_s16le -ar 44100 -ac 2 -i - (an input without video)."""
    pcm = _ffmpeg(
        ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "sine=d=1", "-f", "s16le", "-ac", "2", "-ar", "44100", "-"]
    ).stdout
    args = [
        "-v",
        "error",
        "-f",
        "s16le",
        "-acodec",
        "pcm_s16le",
        "-ar",
        "44100",
        "-ac",
        "2",
        "-i",
        "-",
        "-vn",
        "-acodec",
        "pcm_s16le",
        "-f",
        "framemd5",
        "-",
    ]
    ref, got = _ffmpeg(ffmpeg, args, stdin=pcm), _avdnn(args, stdin=pcm)
    assert got.returncode == 0, got.stderr
    assert _hashes(got.stdout) == _hashes(ref.stdout) and len(_hashes(got.stdout)) > 5
    probe = _avdnn(["-hide_banner", "-f", "s16le", "-ac", "2", "-i", "-"], stdin=pcm)
    assert b"Stream #0:0: Audio: pcm_s16le, 44100 Hz, stereo, s16, 1411 kb/s\n" in probe.stderr
    wrong = _avdnn(["-v", "error", "-f", "s16le", "-acodec", "pcm_f32le", "-i", "-", "-f", "null", "-"], stdin=pcm)
    assert wrong.returncode != 0 and b"pcm_f32le" in wrong.stderr


@pytest.fixture(scope="module")
def wav(ffmpeg: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A mono WAV (its layout is unspecified: ffmpeg guesses mono)."""
    path = tmp_path_factory.mktemp("wav") / "s.wav"
    subprocess.run([ffmpeg, "-v", "error", "-f", "lavfi", "-i", "sine=d=2", str(path)], check=True)
    return str(path)


@pytest.mark.parametrize("maps", [[], ["-map", "1:a", "-map", "0:v"], ["-map", "0:v:0", "-map", "1:a:0"]])
def test_a_second_input_gives_ffmpegs_framemd5(maps: list[str], mkv: str, wav: str, ffmpeg: str) -> None:
    """imageio-ffmpeg and moviepy mux audio from a second input: automatic or explicit maps."""
    args = [
        "-v",
        "error",
        "-i",
        mkv,
        "-i",
        wav,
        *maps,
        "-vf",
        "hflip",
        "-c:v",
        "rawvideo",
        "-c:a",
        "pcm_s16le",
        "-f",
        "framemd5",
        "-",
    ]
    ref, got = _ffmpeg(ffmpeg, args), _avdnn(args)
    assert got.returncode == 0, got.stderr
    assert _hashes(got.stdout) == _hashes(ref.stdout)
    if not maps:  # automatic selection takes mkv's own audio (first best), as ffmpeg does
        assert any(ln.startswith(b"1,") for ln in _hashes(got.stdout))


def test_second_input_banner_and_bad_map(mkv: str, wav: str) -> None:
    got = _avdnn(["-hide_banner", "-i", mkv, "-i", wav, "-map", "0:v", "-map", "1:a", "-f", "null", "-"])
    err = got.stderr.decode()
    assert got.returncode == 0, err
    assert "Input #0, matroska,webm, from" in err and "Input #1, wav, from" in err
    bad = _avdnn(["-hide_banner", "-v", "error", "-i", mkv, "-i", wav, "-map", "2:a", "-f", "null", "-"])
    assert bad.returncode == 234 and b"Invalid input file index: 2." in bad.stderr
    # the chain's video may come from any input (issue 13): input #1 drives this output
    second_video = _avdnn(["-hide_banner", "-v", "error", "-i", wav, "-i", mkv, "-map", "1:v", "-f", "null", "-"])
    assert second_video.returncode == 0, second_video.stderr


def test_a_broken_pipe_with_copied_audio_reads_no_further_and_balances(clip: dict[str, str]) -> None:
    """After the output failed nothing more is read for it, and the books report no false violation."""
    argv = [
        sys.executable,
        "-m",
        "avdnn",
        "-hide_banner",
        "-nostats",
        "-nostdin",
        "-i",
        clip["bigbuckbunny"],
        "-c:a",
        "copy",
        "-f",
        "matroska",
        "-",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.read(100_000)
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    text = err.decode()
    assert proc.returncode == 224, text
    assert "accounting violation" not in text and "Broken pipe" in text
    read = int(text.split("stream 0:1 audio: packets read ")[1].split(",")[0])
    assert read < 249  # the demuxer was not drained to the end into a dead output
