"""Live inputs read from a real ffmpeg on loopback: TCP, UDP, a server restarted mid-run, a dead address.

The server is the oracle ffmpeg sending a clip at its native rate (``-re``); what avdnn
writes is compared frame by frame (md5 of the decoded pictures) with the oracle's decode of
the very clip served. These runs use ``-live_drop none`` (lossless): on a loaded machine the
default policy may rightly drop frames, which test_live_drop.py is about. No RTSP server installs
from PyPI or Debian here, so the RTSP test has avdnn listen (``-rtsp_flags listen``, libavformat's
own RTSP server side) while ffmpeg publishes to it.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from live_util import Server, frame_hashes, framemd5_rows, free_port, tcp_listening, udp_bound
from spine_util import run_ffmpeg

import avdnn


def _serve_tcp(ffmpeg: str, clip: Path) -> tuple[Server, str]:
    port = free_port()
    server = Server(ffmpeg, clip, f"tcp://127.0.0.1:{port}?listen=1")
    tcp_listening(port)
    return server, f"tcp://127.0.0.1:{port}"


def _receiver(options: list[str], url: str, out: Path) -> subprocess.Popen[str]:
    """avdnn reading ``url`` (after its input ``options``) to a framemd5 file, in a subprocess."""
    return subprocess.Popen(
        [sys.executable, "-m", "avdnn", "-hide_banner", "-nostats", *options, "-i", url, "-f", "framemd5", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_tcp_stream_at_native_rate_is_read_whole(ffmpeg: str, served: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "tcp.framemd5"
    server, url = _serve_tcp(ffmpeg, served["b"])
    with server:
        stats = avdnn.run(
            url, "", output=str(out), format="framemd5", source_options={"reconnect_attempts": 0, "live_drop": "none"}
        )
    assert [h for _, h in framemd5_rows(out)] == frame_hashes(ffmpeg, served["b"])
    assert stats.input_live and stats.frames_written == stats.frames_read == 30
    assert stats.input_dropped == {} and stats.check(), stats.violations()
    assert stats.latency.count == 30 and stats.latency.percentile(95) is not None
    assert "latency (input to output): p50" in stats.summary()


#: a 4 MiB receive buffer: loopback drops datagrams a full default buffer cannot take while a busy
#: machine deschedules the receiver (a scheduler artefact these tests do not measure)
ROOMY = "buffer_size=4194304"


def test_udp_stream_is_read_whole_and_its_silence_ends_the_run(
    ffmpeg: str, served: dict[str, Path], tmp_path: Path
) -> None:
    """UDP has no end of stream: the sender's silence is a stall, -live_timeout ends it (one line, non-zero)."""
    port = free_port(socket.SOCK_DGRAM)
    out = tmp_path / "udp.framemd5"
    options = ["-live_timeout", "2", "-reconnect_attempts", "0", "-live_drop", "none"]
    proc = _receiver(options, f"udp://127.0.0.1:{port}?{ROOMY}", out)
    try:
        udp_bound(port)
        with Server(ffmpeg, served["a"], f"udp://127.0.0.1:{port}?pkt_size=1316") as server:
            assert server.wait() == 0
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert f"udp://127.0.0.1:{port}" in err and "no data for 2 s (-live_timeout)" in err
    assert "Traceback" not in err
    assert [h for _, h in framemd5_rows(out)] == frame_hashes(ffmpeg, served["a"])  # finished cleanly, whole


def test_a_udp_receiver_started_long_before_its_sender_waits_for_it(
    ffmpeg: str, served: dict[str, Path], tmp_path: Path
) -> None:
    """The first open of a UDP receiver waits for its sender as ffmpeg's does: -live_timeout (and its
    retries) bound the reads and the reopenings, not that wait. With the bounds made small here the
    receiver used to give up after 1 s x 2 attempts + 0.1 s (with the defaults: 23 s). -live_timeout
    also bounds the reads once data flows: 1 s, so a -re sender descheduled for a moment on a busy
    machine is not taken for a stall."""
    port = free_port(socket.SOCK_DGRAM)
    out = tmp_path / "late.framemd5"
    options = ["-live_timeout", "1", "-reconnect_attempts", "1", "-reconnect_delay", "0.1", "-live_drop", "none"]
    proc = _receiver(options, f"udp://127.0.0.1:{port}?{ROOMY}", out)
    try:
        udp_bound(port)
        time.sleep(3.0)  # the sender starts well after the old give-up point (the scenario, not a measure)
        assert proc.poll() is None, proc.communicate()[1]  # still waiting for its sender
        with Server(ffmpeg, served["a"], f"udp://127.0.0.1:{port}?pkt_size=1316") as server:
            assert server.wait() == 0
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert "no data for 1 s (-live_timeout)" in err and "Traceback" not in err  # the sender's end: a stall
    assert [h for _, h in framemd5_rows(out)] == frame_hashes(ffmpeg, served["a"])  # every frame it sent


def test_a_second_input_that_is_live_is_refused_by_name(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """A live input feeding only streams around another input's chain would be read without the
    live input's reopening and drop queue: refused, naming it, before anything is written."""
    audio = tmp_path / "tone.ts"
    made = run_ffmpeg(ffmpeg, ["-f", "lavfi", "-i", "sine=d=4", "-c:a", "aac", "-f", "mpegts", str(audio)])
    assert made.rc == 0, made.err
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    with Server(ffmpeg, audio, f"{url}?listen=1"):
        tcp_listening(port)
        with pytest.raises(avdnn.NotSupportedError) as info:
            avdnn.run(
                clip["carphone"],
                output=str(tmp_path / "o.mkv"),
                codec="ffv1",
                more_inputs=[(url, None, {})],
                more_source_options={1: {"reconnect_attempts": 0}},
                map=["0:v", "1:a"],
            )
    assert f"input #1 '{url}' is live but does not drive the output" in str(info.value)
    assert not (tmp_path / "o.mkv").exists() or (tmp_path / "o.mkv").stat().st_size == 0


def test_tcp_server_restarted_mid_run_is_reopened(ffmpeg: str, served: dict[str, Path], tmp_path: Path) -> None:
    """Killed after some frames, a new server on the same port: one run, both sessions, time going on."""
    out = tmp_path / "restart.framemd5"
    started = threading.Event()
    result: dict[str, Any] = {}

    def progress(stats: Any, frame: Any) -> None:
        if stats.frames_written >= 10:
            started.set()

    def run(url: str) -> None:
        try:
            result["stats"] = avdnn.run(
                url,
                "",
                output=str(out),
                format="framemd5",
                # attempts for up to 10 s while the second server starts (a loaded machine is slow)
                source_options={"reconnect_attempts": 40, "reconnect_delay": 0.25, "live_drop": "none"},
                progress=progress,
            )
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            result["error"] = exc

    first, url = _serve_tcp(ffmpeg, served["a"])
    port = int(url.rsplit(":", 1)[1])
    thread = threading.Thread(target=run, args=(url,))
    with first:
        thread.start()
        assert started.wait(30), result
    with Server(ffmpeg, served["b"], f"tcp://127.0.0.1:{port}?listen=1"):
        thread.join(60)
    if "error" in result:
        raise result["error"]
    stats = result["stats"]
    rows = framemd5_rows(out)
    pts = [p for p, _ in rows]
    assert pts == sorted(set(pts)), "timestamps went back after the reconnect"
    a, b = frame_hashes(ffmpeg, served["a"]), frame_hashes(ffmpeg, served["b"])
    got = [h for _, h in rows]
    assert got[-len(b) :] == b  # the second session whole
    head = got[: -len(b)]
    assert 10 <= len(head) < len(a) and head[:-1] == a[: len(head) - 1]  # the first one up to the kill
    assert stats.input_counters["reconnects"] == 1 and stats.input_counters["gap_ms"] > 0
    assert stats.frames_written == stats.frames_read == len(got) and stats.check(), stats.violations()
    assert "input: reopened 1 time(s)" in stats.summary()


def test_stalled_sender_is_reopened_and_a_running_clock_counts_the_lost_frames(
    ffmpeg: str, served: dict[str, Path], tmp_path: Path
) -> None:
    """The sender stops sending (SIGSTOP: the connection stays open): -live_timeout sees the stall.

    The second sender's clock runs on from the first one's (``-output_ts_offset 2``: where the
    first clip would have ended), so its timestamps are kept and the frames in the hole counted.
    """
    out = tmp_path / "stall.framemd5"
    started = threading.Event()
    result: dict[str, Any] = {}

    def run(url: str) -> None:
        try:
            result["stats"] = avdnn.run(
                url,
                "",
                output=str(out),
                format="framemd5",
                fps_mode="passthrough",
                source_options={
                    "live_timeout": 1,
                    "reconnect_attempts": 8,
                    "reconnect_delay": 0.25,
                    "live_drop": "none",
                },
                progress=lambda stats, frame: started.set() if stats.frames_written >= 10 else None,
            )
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            result["error"] = exc

    first, url = _serve_tcp(ffmpeg, served["a"])
    port = int(url.rsplit(":", 1)[1])
    thread = threading.Thread(target=run, args=(url,))
    with first:
        thread.start()
        assert started.wait(30), result
        first.proc.send_signal(signal.SIGSTOP)
        second = Server(ffmpeg, served["b"], f"tcp://127.0.0.1:{port}?listen=1", extra=["-output_ts_offset", "2"])
        with second:
            thread.join(60)
        first.proc.send_signal(signal.SIGCONT)
    if "error" in result:
        raise result["error"]
    stats = result["stats"]
    b = frame_hashes(ffmpeg, served["b"])
    rows = framemd5_rows(out)
    assert [h for _, h in rows[-len(b) :]] == b
    head = rows[: -len(b)]
    assert 10 <= len(head) < 60
    counters = stats.input_counters
    assert counters["reconnects"] == 1 and counters["gap_ms"] >= 1000  # at least the stall's second
    assert counters["frames_lost"] == 60 - len(head)  # the rest of the first clip, by its timestamps
    assert abs(rows[-len(b)][0] - 60) <= 1  # the second session at 2 s on the first one's clock
    pts = [p for p, _ in rows]
    assert pts == sorted(set(pts)) and stats.check(), stats.violations()
    assert "no data for 1 s (-live_timeout)" not in stats.summary()  # reopened: not an error


def test_dead_address_ends_with_one_line(avdnn_subprocess: Any) -> None:
    """The issue's check: nothing listening, default options: one line, non-zero, well within 30 s."""
    res = avdnn_subprocess(["-hide_banner", "-i", "tcp://127.0.0.1:9", "-f", "null", "-"], timeout=30)
    assert res.rc != 0
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "tcp://127.0.0.1:9" in lines[0] and "Connection refused" in lines[0], res.err


def test_credentials_never_shown(ffmpeg: str, served: dict[str, Path], tmp_path: Path, avdnn_subprocess: Any) -> None:
    """A URL with a password and a passphrase: banner, progress, logs, errors, JSONL and -progress redacted."""
    server, url = _serve_tcp(ffmpeg, served["b"])
    secret_url = url.replace("tcp://", "tcp://admin:s3cret@") + "?passphrase=hunter22"
    jsonl, progress = tmp_path / "out.jsonl", tmp_path / "progress.txt"
    argv = ["-v", "verbose", "-stats", "-progress", str(progress), "-reconnect_attempts", "0", "-i", secret_url]
    with server:
        res = avdnn_subprocess([*argv, "-vf", f"metadata_jsonl=file={jsonl}", "-f", "null", "-"], timeout=60)
    assert res.rc == 0, res.err
    shown = res.err + jsonl.read_text() + progress.read_text()
    assert "s3cret" not in shown and "hunter22" not in shown
    assert f"from '{url.replace('tcp://', 'tcp://admin:***@')}?passphrase=***'" in res.err  # the banner
    dead = f"rtsp://admin:s3cret@127.0.0.1:{free_port()}/stream"
    res = avdnn_subprocess(["-v", "debug", "-reconnect_delay", "0", "-i", dead, "-f", "null", "-"], timeout=30)
    assert res.rc != 0 and "s3cret" not in res.err and "rtsp://admin:***@127.0.0.1" in res.err


@pytest.mark.parametrize(
    ("flag", "value"),
    [("-listen", "1"), ("-timeout", "1000000"), ("-rw_timeout", "500000"), ("-rtsp_transport", "tcp")],
)
def test_protocol_options_still_reach_the_protocol(flag: str, value: str) -> None:
    """avdnn's live options take none of the protocols' AVOption names (http's -reconnect* neither)."""
    from avdnn.cli.parser import parse_args

    argv = [flag, value, "-reconnect_streamed", "1", "-live_timeout", "3", "-live_drop", "none", "-i", "tcp://h:1"]
    args = parse_args([*argv, "-f", "null", "-"])
    assert args.input_options == {flag[1:]: value, "reconnect_streamed": "1"}
    assert args.source_options == {"live_timeout": 3.0, "live_drop": "none"}


def test_rtsp_published_by_ffmpeg_to_avdnn_listening(ffmpeg: str, served: dict[str, Path], tmp_path: Path) -> None:
    """No RTSP server installs here, so avdnn is the RTSP listener (-rtsp_flags listen) and ffmpeg publishes."""
    port = free_port()
    out = tmp_path / "rtsp.framemd5"
    url = f"rtsp://admin:s3cret@127.0.0.1:{port}/live"
    argv = [
        "-stats",
        "-rtsp_flags",
        "listen",
        "-listen_timeout",
        "20",
        "-reconnect_attempts",
        "0",
        "-live_drop",
        "none",
    ]
    proc = _receiver(argv, url, out)
    try:
        tcp_listening(port, deadline=20)
        publish = [
            ffmpeg,
            "-hide_banner",
            "-loglevel",
            "error",
            "-nostdin",
            "-re",
            "-i",
            str(served["b"]),
            "-c",
            "copy",
        ]
        res = subprocess.run(
            [*publish, "-f", "rtsp", "-rtsp_transport", "tcp", f"rtsp://127.0.0.1:{port}/live"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert res.returncode == 0, res.stderr
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [h for _, h in framemd5_rows(out)] == frame_hashes(ffmpeg, served["b"])
    assert "s3cret" not in err and f"from 'rtsp://admin:***@127.0.0.1:{port}/live'" in err


def test_avdnn_listening_on_tcp_waits_for_its_sender(ffmpeg: str, served: dict[str, Path], tmp_path: Path) -> None:
    """``?listen=1`` passes through to tcp, and a listening input waits past -live_timeout for its peer."""
    port = free_port()
    out = tmp_path / "listen.framemd5"
    options = ["-live_timeout", "1", "-reconnect_attempts", "0", "-live_drop", "none"]
    proc = _receiver(options, f"tcp://127.0.0.1:{port}?listen=1", out)
    try:
        tcp_listening(port)
        threading.Event().wait(1.5)  # longer than -live_timeout: the open must not give up meanwhile
        send = [ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-i", str(served["b"]), "-c", "copy"]
        res = subprocess.run([*send, "-f", "mpegts", f"tcp://127.0.0.1:{port}"], capture_output=True, timeout=30)
        assert res.returncode == 0, res.stderr
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [h for _, h in framemd5_rows(out)] == frame_hashes(ffmpeg, served["b"])


def test_a_server_ending_every_session_at_once_uses_up_the_reopenings(served: dict[str, Path], tmp_path: Path) -> None:
    """Each connection gets the whole 1 s clip at once and is closed: every session is shorter than
    -reconnect_delay, so the reopenings in a row (3 by default) end the input instead of replaying
    the clip for ever, and each after a short session waits -reconnect_delay (no tight loop)."""
    import time

    data = served["b"].read_bytes()
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        sessions: list[int] = []

        def serve() -> None:
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = listener.accept()
                    sessions.append(1)
                    with conn:
                        conn.sendall(data)

        threading.Thread(target=serve, daemon=True).start()
        start = time.monotonic()
        stats = avdnn.run(
            f"tcp://127.0.0.1:{port}",
            "",
            output=str(tmp_path / "o.md5"),
            format="framemd5",
            source_options={"live_drop": "none", "reconnect_delay": 1.0},
        )
        took = time.monotonic() - start
    # the first session delivered (a loss after it is reopened at once), then 3 short ones in a row;
    # a session is short when it ends within -reconnect_delay of its reopening: 1 s, so that a
    # session of 30 small frames slowed by a busy machine (tens of ms here) is never taken for a healthy one
    assert stats.input_counters["reconnects"] == 4 == len(sessions) - 1
    assert stats.frames_written == 5 * 30 and stats.check(), stats.violations()
    assert 3 * 1.0 <= took < 30, took  # waited between the reopenings, and ended


def test_a_listening_input_ends_when_its_sender_finishes(ffmpeg: str, served: dict[str, Path], tmp_path: Path) -> None:
    """avdnn listens (default options); ffmpeg sends the clip and exits: the input ends, as ffmpeg's
    does (listening again would wait for ever)."""
    port = free_port()
    out = tmp_path / "l.md5"
    result: dict[str, Any] = {}

    def receive() -> None:
        result["stats"] = avdnn.run(
            f"tcp://127.0.0.1:{port}?listen=1",
            "",
            output=str(out),
            format="framemd5",
            source_options={"live_drop": "none"},
        )

    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    tcp_listening(port)
    sender = subprocess.run(
        [ffmpeg, "-v", "error", "-re", "-i", str(served["b"]), "-c", "copy", "-f", "mpegts", f"tcp://127.0.0.1:{port}"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert sender.returncode == 0, sender.stderr
    thread.join(20)
    assert not thread.is_alive(), "the listening input waited for a second sender"
    assert result["stats"].frames_written == 30 and result["stats"].input_counters["reconnects"] == 0
