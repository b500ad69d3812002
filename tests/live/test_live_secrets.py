"""No secret printed where a URL really connects (issue 21, item 3): a real ffmpeg serves on loopback.

The input URL carries a password, signed-URL keys and a token, ``-headers`` carries a cookie, an
API key and a bearer token; avdnn reads every frame and prints none of them, through the CLI
(verbose) and through the API's logging with libav's own lines switched on.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_util import Server, free_port, tcp_listening

import avdnn

SECRET = "Qx7swordfish"
HEADERS = f"Cookie: session={SECRET}\r\nX-Api-Key: {SECRET}\r\nAuthorization: Bearer {SECRET}\r\n"
QUERY = (
    f"token={SECRET}&X-Amz-Credential={SECRET}&X-Amz-Signature={SECRET}&auth_key={SECRET}"
    f"&access_key={SECRET}&sig={SECRET}&signature={SECRET}"
)


def _http_server(ffmpeg: str, clip: Path) -> tuple[Server, int]:
    """The oracle as a one-client HTTP server of an MPEG-TS clip (``-listen 1``)."""
    port = free_port()
    server = Server(ffmpeg, clip, f"http://127.0.0.1:{port}/clip.ts", extra=["-listen", "1"])
    tcp_listening(port)
    return server, port


def test_the_cli_prints_no_secret_of_a_url_that_connects(
    ffmpeg: str, served: dict[str, Path], tmp_path: Path, avdnn_subprocess: Any
) -> None:
    server, port = _http_server(ffmpeg, served["b"])
    url = f"http://eve:{SECRET}@127.0.0.1:{port}/clip.ts?{QUERY}"
    progress = tmp_path / "progress.txt"
    argv = ["-v", "verbose", "-stats", "-progress", str(progress), "-headers", HEADERS, "-i", url]
    with server:
        res = avdnn_subprocess([*argv, "-f", "null", "-"], timeout=60)
    assert res.rc == 0, res.err
    assert "frames: read 30, written 30" in res.err  # it connected and read the whole clip
    assert f"from 'http://eve:***@127.0.0.1:{port}/clip.ts?token=***&X-Amz-Credential=***" in res.err
    shown = res.err + progress.read_text()
    assert SECRET not in shown, res.err


@pytest.fixture
def libav_lines() -> Iterator[io.StringIO]:
    """What an API user's handler on the two logger trees receives, libav's lines on (verbose)."""
    import av.logging

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    loggers = [logging.getLogger(n) for n in ("avdnn", "libav")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    previous = av.logging.get_level()
    av.logging.set_level(av.logging.VERBOSE)
    try:
        yield buf
    finally:
        av.logging.set_level(previous)
        for lg, (level, propagate) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate


def test_the_api_logs_no_secret(ffmpeg: str, served: dict[str, Path], libav_lines: io.StringIO) -> None:
    server, port = _http_server(ffmpeg, served["b"])
    url = f"http://eve:{SECRET}@127.0.0.1:{port}/clip.ts?{QUERY}"
    with server:
        stats = avdnn.run(
            url, "", output="-", format="null", input_options={"headers": HEADERS}, source_options={"live_drop": "none"}
        )
    assert stats.frames_read == stats.frames_written == 30
    # libavformat's own line for a refused connection names the whole URL: redacted at the logger
    dead = f"tcp://eve:{SECRET}@127.0.0.1:{free_port()}?token={SECRET}"
    with pytest.raises(avdnn.AvdnnError) as info:
        avdnn.run(dead, "", output="-", format="null", source_options={"reconnect_attempts": 0})
    text = libav_lines.getvalue()
    assert "libav.tcp: Connection to tcp://eve:***@127.0.0.1:" in text, text
    assert "Successfully connected to 127.0.0.1" in text  # the http input's lines came through too
    assert SECRET not in text + str(info.value), text
