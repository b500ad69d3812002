"""Real ffmpeg-driving Python tools, each pointed at avdnn with its own documented switch.

imageio-ffmpeg (``IMAGEIO_FFMPEG_EXE``), ffmpeg-python (``run(cmd=...)``), moviepy
(``FFMPEG_BINARY``) and ffmpeg-progress-yield (the command's first element) run unpatched in a
child process; every test runs the same client against the static ffmpeg 9.0.2 as the reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import avdnn

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def avdnn_exe(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An ``avdnn`` executable running the avdnn under test (the venv's console script may be another's)."""
    src = str(Path(avdnn.__file__).resolve().parent.parent)
    path = tmp_path_factory.mktemp("bin") / "avdnn"
    path.write_text(f'#!/bin/sh\nPYTHONPATH={src}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} -m avdnn "$@"\n')
    path.chmod(0o755)
    return str(path)


@pytest.fixture(params=["avdnn", "ffmpeg"])
def exe(request: pytest.FixtureRequest, avdnn_exe: str, ffmpeg: str) -> str:
    return avdnn_exe if request.param == "avdnn" else ffmpeg


def _client(code: str, env: dict[str, str] | None = None, timeout: float = 240) -> str:
    """Run a client script in a child (its switch set in its environment); its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def _frames(path: Path) -> int:
    import av

    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


def test_imageio_ffmpeg_reads_carphone(exe: str, clip: dict[str, str]) -> None:
    out = _client(
        f"""
        import imageio_ffmpeg
        gen = imageio_ffmpeg.read_frames({clip["carphone"]!r})
        meta = next(gen)
        n = sum(1 for frame in gen if len(frame) == 176 * 144 * 3)
        print(meta["size"], meta["fps"], n)
    """,
        {"IMAGEIO_FFMPEG_EXE": exe},
    )
    assert out.split() == ["(176,", "144)", "29.97", "120"]


def test_imageio_ffmpeg_writes_ten_frames(exe: str, tmp_path: Path) -> None:
    target = tmp_path / "w.mp4"
    _client(
        f"""
        import numpy as np, imageio_ffmpeg
        w = imageio_ffmpeg.write_frames({str(target)!r}, (64, 48), fps=10, macro_block_size=1)
        w.send(None)
        for k in range(10):
            w.send(np.full((48, 64, 3), k * 20, np.uint8))
        w.close()
    """,
        {"IMAGEIO_FFMPEG_EXE": exe},
    )
    assert _frames(target) == 10


def test_ffmpeg_python_scale_graph(exe: str, clip: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "s.mkv"
    _client(f"""
        import ffmpeg
        out = ffmpeg.input({clip["carphone"]!r}).filter("scale", 88, -2).output({str(target)!r})
        assert "-filter_complex" in out.compile(cmd={exe!r})
        out.run(cmd={exe!r}, quiet=True)
    """)
    assert _frames(target) == 120
    import av

    with av.open(str(target)) as c:
        assert (c.streams.video[0].width, c.streams.video[0].height) == (88, 72)


def test_ffmpeg_python_dnn_processing_graph(avdnn_exe: str, ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """format + dnn_processing (an identity model) gives 120 frames, and ffmpeg's format=rgb24 frames."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "dnn"))
    from onnx_models import identity

    model = identity(tmp_path)
    target = tmp_path / "d.nut"
    _client(f"""
        import ffmpeg
        out = (ffmpeg.input({clip["carphone"]!r}).filter("format", "rgb24")
               .filter("dnn_processing", dnn_backend="onnx", model={model!r}, input="x", output="y")
               .output({str(target)!r}, vcodec="rawvideo", format="nut"))
        out.run(cmd={avdnn_exe!r}, quiet=True)
    """)
    assert _frames(target) == 120
    ref = subprocess.run(
        [ffmpeg, "-v", "error", "-i", clip["carphone"], "-vf", "format=rgb24", "-f", "framemd5", "-"],
        capture_output=True,
        check=True,
    ).stdout
    got = subprocess.run(
        [ffmpeg, "-v", "error", "-i", str(target), "-f", "framemd5", "-"], capture_output=True, check=True
    ).stdout
    hashes = [[ln.split(b",")[-1] for ln in out.splitlines() if not ln.startswith(b"#")] for out in (ref, got)]
    assert hashes[0] == hashes[1]


def test_ffmpeg_progress_yield_reaches_100(exe: str, clip: dict[str, str], tmp_path: Path) -> None:
    out = _client(f"""
        from ffmpeg_progress_yield import FfmpegProgress
        p = FfmpegProgress([{exe!r}, "-y", "-i", {clip["carphone"]!r}, "-vf", "scale=88:-2",
                            {str(tmp_path / "p.mkv")!r}])
        print(" ".join(str(x) for x in p.run_command_with_progress()))
    """)
    values = [float(v) for v in out.split()]
    assert values[-1] == 100 and values == sorted(values) and len(values) >= 2


def test_moviepy_reads_bigbuckbunny_with_audio(exe: str, clip: dict[str, str]) -> None:
    out = _client(
        f"""
        from moviepy import VideoFileClip
        c = VideoFileClip({clip["bigbuckbunny"]!r})
        frame = c.get_frame(0)
        sound = c.audio.subclipped(0, 0.5).to_soundarray()
        print(c.duration, c.fps, c.size[0], c.size[1], frame.shape[0], sound.shape[0], sound.shape[1],
              int(abs(sound).max() > 0))
        c.close()
    """,
        {"FFMPEG_BINARY": exe},
    )
    assert out.split() == ["5.31", "25.0", "1280", "720", "720", "22050", "2", "1"]


def test_moviepy_writes_a_one_second_subclip_with_audio(exe: str, clip: dict[str, str], tmp_path: Path) -> None:
    """moviepy writes the audio first (``-f s16le ... -i -``), then muxes video from a pipe with it
    as a second input (``-i - -i sub.mp3 -acodec copy``)."""
    import av

    target = tmp_path / "sub.mp4"
    _client(
        f"""
        import os
        from moviepy import VideoFileClip
        os.chdir({str(tmp_path)!r})  # moviepy writes its temporary audio file next to the script
        c = VideoFileClip({clip["bigbuckbunny"]!r})
        c.subclipped(1, 2).write_videofile({str(target)!r}, logger=None, preset="ultrafast")
        c.close()
    """,
        {"FFMPEG_BINARY": exe},
    )
    assert _frames(target) == 25
    with av.open(str(target)) as c:
        assert [s.type for s in c.streams] == ["video", "audio"]
        samples = sum(f.samples for f in c.decode(audio=0))
    assert abs(samples - 44100) < 3 * 1152, samples


def test_imageio_ffmpeg_writes_with_audio(exe: str, ffmpeg: str, tmp_path: Path) -> None:
    """write_frames(audio_path=...): -i - -i AUDIO -map 0:v:0 -map 1:a:0."""
    import av

    sound = tmp_path / "a.wav"
    subprocess.run([ffmpeg, "-v", "error", "-f", "lavfi", "-i", "sine=d=1", str(sound)], check=True)
    target = tmp_path / "wa.mp4"
    _client(
        f"""
        import numpy as np, imageio_ffmpeg
        w = imageio_ffmpeg.write_frames({str(target)!r}, (64, 48), fps=10, macro_block_size=1,
                                        audio_path={str(sound)!r}, audio_codec="aac")
        w.send(None)
        for k in range(10):
            w.send(np.full((48, 64, 3), k * 20, np.uint8))
        w.close()
    """,
        {"IMAGEIO_FFMPEG_EXE": exe},
    )
    assert _frames(target) == 10
    with av.open(str(target)) as c:
        assert [s.type for s in c.streams] == ["video", "audio"]
