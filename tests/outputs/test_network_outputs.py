"""Network outputs, opened as ffmpeg opens them: a real ffmpeg on loopback receives every frame.

Each protocol test pushes carphone (120 frames) through lossless H.264 (``-qp 0``) to the oracle
ffmpeg listening on loopback and compares the md5 of every frame it decoded with the source's:
every frame arrived, bit for bit. The issue's own commands (``-c:v libx264 -f mpegts tcp://``,
``-f flv rtmp://``) are run as written and counted. A refused output is ffmpeg's status; a peer
that goes away or stops reading ends that output with its cause while the others go on.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from outputs_util import Peer, Receiver, free_port, hashes, source_hashes, wait_socket
from spine_util import run_cli, run_ffmpeg

LOSSLESS = ["-c:v", "libx264", "-qp", "0"]
QUIET = ["-hide_banner", "-loglevel", "error"]


def _avdnn(*args: str) -> list[str]:
    """The avdnn command line run as a child process."""
    return [sys.executable, "-m", "avdnn", *QUIET, *args]


#: protocol -> (the receiver's input options, its URL, the sender's output options); PORT is filled in
CASES = {
    "tcp": ([], "tcp://127.0.0.1:PORT?listen=1", ["-f", "mpegts"], "tcp://127.0.0.1:PORT"),
    "rtmp": (["-listen", "1"], "rtmp://127.0.0.1:PORT/live/cam", ["-f", "flv"], "rtmp://127.0.0.1:PORT/live/cam"),
    "http_put": (
        ["-listen", "1", "-method", "PUT"],
        "http://127.0.0.1:PORT/cam.ts",
        ["-f", "mpegts", "-method", "PUT"],
        "http://127.0.0.1:PORT/cam.ts",
    ),
    "http_post": (["-listen", "1"], "http://127.0.0.1:PORT/cam.ts", ["-f", "mpegts"], "http://127.0.0.1:PORT/cam.ts"),
    # ffmpeg 9.0.2's RTSP listener needs its own -listen_timeout (its default is out of tcp's range),
    # and drops the frames a B-frame delay leaves at the end: without B-frames it receives all
    "rtsp": (
        ["-rtsp_flags", "listen", "-listen_timeout", "60"],
        "rtsp://127.0.0.1:PORT/live",
        ["-bf", "0", "-f", "rtsp", "-rtsp_transport", "tcp"],
        "rtsp://127.0.0.1:PORT/live",
    ),
}


@pytest.mark.parametrize("proto", sorted(CASES))
def test_every_frame_reaches_a_listening_ffmpeg(proto: str, ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    before, listen, out_opts, url = CASES[proto]
    port = free_port()
    with Receiver(ffmpeg, listen.replace("PORT", str(port)), tmp_path / "got.framemd5", before) as rx:
        wait_socket(port)
        sent = run_cli(["-hide_banner", "-i", clip["carphone"], *LOSSLESS, *out_opts, url.replace("PORT", str(port))])
        assert sent.rc == 0, sent.err
        assert rx.frames() == source_hashes(ffmpeg, clip["carphone"])


def test_udp_output_reaches_a_bound_ffmpeg(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """UDP has no end of stream: the receiver ends 3 s after the last datagram (its -timeout).

    Loopback drops a datagram when the receiving socket's buffer is full, which a busy machine's
    receiver can let happen under the sender's bursts (its initial -re burst, x264's flush at the
    end): the receiver asks for a 4 MiB socket buffer (``buffer_size``, within net.core.rmem_max
    here) so that what is measured is the sender, not the scheduler.
    """
    port = free_port()
    listen = f"udp://127.0.0.1:{port}?buffer_size=4194304"
    with Receiver(ffmpeg, listen, tmp_path / "got.framemd5", ["-timeout", "3000000"]) as rx:
        wait_socket(port, udp=True)
        url = f"udp://127.0.0.1:{port}"
        sent = run_cli(["-hide_banner", "-re", "-i", clip["carphone"], *LOSSLESS, "-f", "mpegts", url])
        assert sent.rc == 0, sent.err
        assert rx.frames() == source_hashes(ffmpeg, clip["carphone"])


@pytest.mark.parametrize(
    ("before", "listen", "fmt", "url"),
    [
        ([], "tcp://127.0.0.1:PORT?listen=1", "mpegts", "tcp://127.0.0.1:PORT"),
        (["-listen", "1"], "rtmp://127.0.0.1:PORT/live/cam", "flv", "rtmp://127.0.0.1:PORT/live/cam"),
    ],
)
def test_the_issues_commands_as_written(
    before: list[str], listen: str, fmt: str, url: str, ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    """``avdnn -i carphone.mp4 -c:v libx264 -f mpegts tcp://...`` and ``-f flv rtmp://...``."""
    port = free_port()
    with Receiver(ffmpeg, listen.replace("PORT", str(port)), tmp_path / "got.framemd5", before) as rx:
        wait_socket(port)
        sent = run_cli(["-i", clip["carphone"], "-c:v", "libx264", "-f", fmt, url.replace("PORT", str(port))])
        assert sent.rc == 0, sent.err
        assert len(rx.frames()) == 120


def test_pipe_output_reaches_ffmpeg(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """``pipe:1``: libavformat's pipe protocol on the descriptor, read by ffmpeg from its stdin."""
    sender = subprocess.Popen(
        _avdnn("-i", clip["carphone"], *LOSSLESS, "-f", "mpegts", "pipe:1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert sender.stdout is not None
    out = tmp_path / "got.framemd5"
    rx = subprocess.run(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-f", "framemd5", str(out)],
        stdin=sender.stdout,
        capture_output=True,
        timeout=60,
        check=False,
    )
    sender.stdout.close()
    _, err = sender.communicate(timeout=60)
    assert sender.returncode == 0 and rx.returncode == 0, (err, rx.stderr)
    assert hashes(out.read_text()) == source_hashes(ffmpeg, clip["carphone"])


@pytest.mark.parametrize(
    ("fmt", "url"),
    [("flv", "rtmp://127.0.0.1:1/x"), ("mpegts", "tcp://127.0.0.1:1"), ("mpegts", "http://127.0.0.1:1/x")],
)
def test_a_refused_output_is_ffmpegs_cause_and_status(fmt: str, url: str, ffmpeg: str, clip: dict[str, str]) -> None:
    args = ["-i", clip["carphone"], "-c:v", "libx264", "-f", fmt, url]
    want = run_ffmpeg(ffmpeg, args)
    got = run_cli(["-hide_banner", "-loglevel", "error", *args])
    assert want.rc == 145 and got.rc == want.rc, (got.err, want.err)
    assert f"Error opening output {url}: Connection refused" in got.err, got.err


def test_a_protocol_pyavs_ffmpeg_lacks_is_libavformats_error(clip: dict[str, str]) -> None:
    """PyAV's FFmpeg is built without libsrt: ``srt://`` is "Protocol not found" (exit 8), said once."""
    from avdnn.media.libav.avio import protocol_name

    if protocol_name("srt://127.0.0.1:1") is not None:
        pytest.skip("not applicable: this PyAV's FFmpeg has srt: the output is opened like the others")
    got = run_cli(["-hide_banner", "-loglevel", "error", "-i", clip["carphone"], "-f", "mpegts", "srt://127.0.0.1:1"])
    assert got.rc == 8 and "Error opening output srt://127.0.0.1:1: Protocol not found" in got.err, got.err


def test_a_lost_peer_ends_that_output_and_the_others_go_on(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """The peer resets the connection after 20 kB: that output fails with its cause, the file is whole."""
    with Peer("drop") as peer:
        other = tmp_path / "other.framemd5"
        push = ["-c:v", "rawvideo", "-f", "nut", f"tcp://127.0.0.1:{peer.port}"]
        got = run_cli([*QUIET, "-i", clip["carphone"], *push, "-f", "framemd5", str(other)])
    assert got.rc in (152, 224), got.err  # ECONNRESET or EPIPE, whichever the kernel reports first
    assert "Connection reset by peer" in got.err or "Broken pipe" in got.err, got.err
    assert hashes(other.read_text()) == source_hashes(ffmpeg, clip["carphone"])


def test_a_peer_that_stops_reading_is_bounded_by_rw_timeout(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """The peer accepts and never reads: the write waits -rw_timeout (0.3 s), not for ever."""
    with Peer("stall") as peer:
        other = tmp_path / "other.framemd5"
        push = ["-c:v", "rawvideo", "-f", "nut", "-rw_timeout", "300000", f"tcp://127.0.0.1:{peer.port}"]
        got = run_cli([*QUIET, "-i", clip["carphone"], *push, "-f", "framemd5", str(other)])
    assert got.rc == 146 and "Connection timed out" in got.err, got.err  # AVERROR(ETIMEDOUT)
    assert hashes(other.read_text()) == source_hashes(ffmpeg, clip["carphone"])


def test_a_listening_output_serves_its_peer(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """``tcp://...?listen=1`` as an output: avdnn waits for its peer, as ffmpeg does."""
    port = free_port()
    sender = subprocess.Popen(
        _avdnn("-i", clip["carphone"], *LOSSLESS, "-f", "mpegts", f"tcp://127.0.0.1:{port}?listen=1"),
        stderr=subprocess.PIPE,
    )
    try:
        wait_socket(port)
        out = tmp_path / "got.framemd5"
        rx = run_ffmpeg(ffmpeg, ["-i", f"tcp://127.0.0.1:{port}", "-f", "framemd5", str(out)])
        _, err = sender.communicate(timeout=60)
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.communicate(timeout=10)
    assert sender.returncode == 0 and rx.rc == 0, (err, rx.err)
    assert hashes(out.read_text()) == source_hashes(ffmpeg, clip["carphone"])


@pytest.mark.parametrize("more", [[], ["-f", "null", "-"]])
def test_ctrl_c_ends_a_listening_output_nobody_joins(more: list[str], clip: dict[str, str]) -> None:
    """Waiting for a peer is not for ever: SIGINT ends it (the run exits 255, as ffmpeg after Ctrl-C)."""
    port = free_port()
    proc = subprocess.Popen(
        _avdnn("-nostdin", "-i", clip["carphone"], "-f", "mpegts", f"tcp://127.0.0.1:{port}?listen=1", *more),
        stderr=subprocess.PIPE,
    )
    try:
        wait_socket(port)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 255, err.decode()
