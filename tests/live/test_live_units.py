"""The pieces of live inputs on their own: redaction, options, the drop queue, latency, the timeline."""

from __future__ import annotations

import logging
import threading

import pytest

import avdnn
from avdnn._util.redact import RedactFilter, redact_text, redact_url
from avdnn.errors import AvdnnError, InvalidArgumentError, NotFoundError
from avdnn.media.input.live import LiveOptions, continue_timeline, is_network
from avdnn.run.latency import Latency
from avdnn.run.livequeue import DropQueue, queue_policy
from avdnn.run.threads import prefetch


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("rtsp://admin:secret@10.0.0.5:554/h264?channel=1", "rtsp://admin:***@10.0.0.5:554/h264?channel=1"),
        ("rtsp://admin:p@ss@cam/x", "rtsp://admin:***@cam/x"),  # the last @ ends the user info, as av_url_split
        ("https://TOKEN@host/a.m3u8", "https://***@host/a.m3u8"),
        ("srt://h:9000?mode=caller&passphrase=0123456789", "srt://h:9000?mode=caller&passphrase=***"),
        ("https://cdn/x.ts?X-Amz-Signature=ab&token=cd&n=1#t", "https://cdn/x.ts?X-Amz-Signature=***&token=***&n=1#t"),
        ("udp://127.0.0.1:1234?pkt_size=1316", "udp://127.0.0.1:1234?pkt_size=1316"),
        ("/data/in.mp4", "/data/in.mp4"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_errors_and_log_lines_are_redacted() -> None:
    err = NotFoundError("Connection refused by rtsp://u:pw@h/x", file="rtsp://u:pw@h/x")
    assert "pw" not in str(err) and err.file == "rtsp://u:***@h/x"
    later = AvdnnError("boom").with_context(file="http://u:pw@h/")
    assert "pw" not in later.oneline()
    record = logging.LogRecord("libav.http", logging.ERROR, "", 0, "Opening '%s'", ("http://u:pw@h/s.ts",), None)
    assert RedactFilter().filter(record) and record.getMessage() == "Opening 'http://u:***@h/s.ts'"
    assert (
        redact_text("GET / HTTP/1.1\r\nAuthorization: Basic dTpwdw==\r\n") == "GET / HTTP/1.1\r\nAuthorization: ***\r\n"
    )


def test_live_options_are_checked() -> None:
    assert LiveOptions().live_timeout == 5.0
    for bad in ({"live_drop": "middle"}, {"live_queue": 0}, {"reconnect_attempts": -2}, {"live_timeout": -1}):
        with pytest.raises(InvalidArgumentError):
            LiveOptions(**bad)  # type: ignore[arg-type]
    assert is_network("rtsp://cam/x", None) and is_network("x.sdp", "sdp") and not is_network("in.mp4", None)


class _Src:
    def __init__(self, live: bool, **opts: object) -> None:
        self.live = live
        self.live_options = LiveOptions(**opts)  # type: ignore[arg-type]


def test_queue_policy_defaults() -> None:
    assert queue_policy(_Src(True), 4) == ("oldest", 8)
    assert queue_policy(_Src(True, live_drop="none", live_queue=3), 4) == ("none", 3)
    assert queue_policy(_Src(False), 4) is None  # a file: the plain lossless channel
    assert queue_policy(_Src(False, live_queue=16), 4) == ("none", 16)
    assert queue_policy(_Src(False, live_drop="newest"), 4) == ("newest", 4)


@pytest.mark.parametrize(("policy", "kept"), [("oldest", [7, 8, 9]), ("newest", [0, 1, 2])])
def test_drop_queue_keeps_the_policy(policy: str, kept: list[int]) -> None:
    q: DropQueue[int] = DropQueue(3, policy)
    for i in range(10):
        q.put(i)
    q.end()
    assert [q.get() for _ in range(3)] == kept and q.dropped == 7


def test_drop_queue_none_blocks_instead() -> None:
    """Through prefetch, as the pipeline uses it: a slow consumer loses nothing."""
    q: DropQueue[int] = DropQueue(2, "none")
    got = []
    for item in prefetch(iter(range(20)), 2, name="test", channel=q):
        got.append(item)
        threading.Event().wait(0.001)  # a consumer slower than the producer
    assert got == list(range(20)) and q.dropped == 0


def test_latency_percentiles_are_close_and_bounded() -> None:
    lat = Latency()
    for ms in range(1, 1001):
        lat.add(ms / 1000)
    assert lat.count == 1000 and lat.max == 1.0
    assert lat.percentile(50) == pytest.approx(0.5, rel=0.03)
    assert lat.percentile(95) == pytest.approx(0.95, rel=0.03)
    assert lat.current == pytest.approx(0.985, abs=0.01)  # the recent median
    assert len(lat._bins) < 400  # bins, not samples


def test_continue_timeline() -> None:
    # the sender restarted at its start: placed right after the last packet, the hole unknown
    assert continue_timeline(end=5_000, shift=0, start=1_400, threshold=10_000) == (3_600, None)
    # a clock that kept running: kept, and the hole is known
    assert continue_timeline(end=5_000, shift=0, start=6_000, threshold=10_000) == (0, 1_000)
    # too far ahead (a discontinuity): placed right after
    assert continue_timeline(end=5_000, shift=0, start=50_000, threshold=10_000) == (-45_000, None)


def test_a_failed_open_leaves_no_credentials_in_the_traceback() -> None:
    """The chained PyAV error (``__cause__``) is redacted too: ``log.exception`` shows no password."""
    import traceback

    secret = "s3" + "cret"  # never literally in a source line the traceback prints
    url = f"tcp://admin:{secret}@127.0.0.1:9/x?passphrase={secret}2"
    import av.logging

    level = av.logging.get_level()
    av.logging.set_level(av.logging.VERBOSE)  # PyAV then keeps libav's last error line (the raw URL) too
    try:
        with pytest.raises(avdnn.AvdnnError) as info:
            avdnn.run(url, "", output="-", format="null", source_options={"reconnect_attempts": 0})
    finally:
        av.logging.set_level(level)
    text = "".join(traceback.format_exception(info.value))
    assert info.value.__cause__ is not None and "Connection refused" in text
    assert secret not in text, text
