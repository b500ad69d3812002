"""What a side stream holds before the output's header is bounded as ffmpeg's muxing queue is.

``-vf select=gte(n\\,100)`` keeps bigbuckbunny's output headerless for 4 s of its audio (the
video encoder opens on the chain's first frame), so the audio's packets (copied) or decoded
frames (transcoded) are held meanwhile. ffmpeg 5.1 (Debian's) is the oracle for the error: the
static 9.0.2 deadlocks on this very command (it prints the header and hangs, an ffmpeg bug).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from spine_util import missing, run_cli

import avdnn
from avdnn.errors import AVERROR, AvdnnError
from avdnn.media.output.muxqueue import MuxingQueue
from avdnn.run.selection import StreamOptions

LATE = ["-vf", "select=gte(n\\,100)"]
SMALL = ["-max_muxing_queue_size", "16", "-muxing_queue_data_threshold", "0"]
DEBIAN_FFMPEG = "/usr/bin/ffmpeg"


def test_the_queue_grows_as_ffmpegs() -> None:
    q = MuxingQueue()  # 128 packets, 50 MB
    for _ in range(10_000):  # under the data threshold the FIFO keeps doubling
        q.hold(100, "#1")
    assert q.packets == 10_000
    big = MuxingQueue()
    for _ in range(128):
        big.hold(1 << 20, "#1")  # 128 MB held: over the threshold, at the packet limit
    assert big.full_for(1)
    with pytest.raises(AvdnnError, match="Too many packets buffered for output stream #1") as info:
        big.hold(1, "#1")
    assert info.value.code == AVERROR(28)  # ENOSPC
    small = MuxingQueue(16, 0)
    for _ in range(16):
        small.hold(1, "#2")
    with pytest.raises(AvdnnError):
        small.hold(1, "#2")
    small.release()
    small.hold(1, "#2")  # after the header nothing is held


@pytest.mark.parametrize("audio", [[], ["-c:a", "copy"]], ids=["transcoded", "copied"])
def test_a_late_chain_overflows_a_small_queue_as_ffmpeg(clip: dict[str, str], tmp_path: Path, audio: list[str]) -> None:
    args = ["-hide_banner", "-nostats", "-i", clip["bigbuckbunny"], *LATE, *audio, *SMALL]
    res = run_cli([*args, "-y", str(tmp_path / "o.mkv")])
    assert res.rc == 228, res.err  # AVERROR(ENOSPC), as ffmpeg 9.0.2 maps a failure's code
    line = next(ln for ln in res.err.splitlines() if ln.startswith("avdnn: Too many"))
    assert line.startswith("avdnn: Too many packets buffered for output stream #1 (0:1 audio)")
    assert "Traceback" not in res.err and "internal error" not in res.err
    assert "frame accounting" not in res.err  # the refused packet is counted (failed), the held ones dropped
    if not os.path.exists(DEBIAN_FFMPEG):
        missing("oracle", "Debian's ffmpeg 5.1 (apt-get install ffmpeg) is the oracle for the error")
    ref = subprocess.run(
        [DEBIAN_FFMPEG, *args, "-y", str(tmp_path / "ref.mkv")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ref.returncode != 0 and "Too many packets buffered for output stream 0:1." in ref.stderr


def test_the_default_bound_holds_the_late_audio(clip: dict[str, str], tmp_path: Path) -> None:
    """4 s of audio (about 190 packets, well under 50 MB) fit ffmpeg's default queue: every one written."""
    out = tmp_path / "o.mkv"
    stats = avdnn.run(clip["bigbuckbunny"], "select=gte(n\\,100)", output=str(out), audio_codec="copy", codec="ffv1")
    (audio,) = stats.streams
    assert stats.frames_written == 32 and audio.packets_written == audio.packets_read > 128
    assert stats.check(), stats.violations()


def test_the_bound_is_a_per_stream_option_of_the_api(clip: dict[str, str], tmp_path: Path) -> None:
    opts = StreamOptions(per_stream={("max_muxing_queue_size", "a"): "16", ("muxing_queue_data_threshold", ""): "0"})
    with pytest.raises(AvdnnError, match="Too many packets buffered for output stream #1"):
        avdnn.run(
            clip["bigbuckbunny"],
            "select=gte(n\\,100)",
            output=str(tmp_path / "o.mkv"),
            audio_codec="copy",
            codec="ffv1",
            stream_options=opts,
        )
    opts.per_stream[("max_muxing_queue_size", "a")] = "1024"  # the remedy ffmpeg's users know
    stats = avdnn.run(
        clip["bigbuckbunny"],
        "select=gte(n\\,100)",
        output=str(tmp_path / "p.mkv"),
        audio_codec="copy",
        codec="ffv1",
        stream_options=opts,
    )
    assert stats.streams[0].packets_written == stats.streams[0].packets_read
