"""No secret printed, anywhere (issue 21, item 3): URLs, query keys, headers, in every place avdnn writes.

The CLI's lines that bypass logging (the failure line, the multi-output summary, a bug's traceback
and its "internal error" line), the API's log records whoever handles them, ``as_dict()`` and the
errors themselves. Network cases with a real server on loopback are in tests/live/test_live_secrets.py.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Sequence

import pytest
from spine_util import run_cli

import avdnn
from avdnn._util.redact import (
    MASK,
    RedactingStream,
    is_secret_name,
    redact_text,
    redact_url,
)
from avdnn._util.redact_args import redact_argv, redact_chain
from avdnn.errors import AvdnnError, IOFailureError, NotFoundError
from avdnn.filters.base import Filter
from avdnn.media.frame import Frame

SECRET = "Zq9hunter2"
SRC = ["-f", "lavfi", "-i", "testsrc=s=64x48:d=1"]


@pytest.mark.parametrize(
    "text",
    [
        f"https://cdn.example/a.m3u8?auth_key={SECRET}&n=1",
        f"https://cdn.example/a.m3u8?access_key={SECRET}",
        f"https://cdn.example/a.m3u8?sig={SECRET}",
        f"https://cdn.example/a.m3u8?signature={SECRET}",
        f"https://b.s3.amazonaws.com/k.mp4?X-Amz-Credential={SECRET}%2F2024&X-Amz-Signature={SECRET}",
        f"https://b.s3.amazonaws.com/k.mp4?X-Amz-Security-Token={SECRET}",
        f"https://h/live.m3u8?token={SECRET}",
        f"srt://h:9000?mode=caller&passphrase={SECRET}",
        f"srt://h:9000?streamid=#!::r=live/cam,s={SECRET},m=request",
        f"srt://h:9000?mode=caller&streamid=#!::s={SECRET}&latency=200",
        f"rtmp://eve:{SECRET}@127.0.0.1:1/y",
        f"rtsp://{SECRET}@cam/stream",
        f"GET /x.ts?token={SECRET} HTTP/1.1",  # libavformat's http request line (debug level)
        f"Cookie: session={SECRET}\r\nX-Api-Key: {SECRET}\r\nAuthorization: Bearer {SECRET}\r\n",
        repr(f"Cookie: a={SECRET}\r\nX-Api-Key: {SECRET}\r\n"),  # a -headers value as an error shows it
        f"Proxy-Authorization: Basic {SECRET}",
        f"option passphrase={SECRET} token={SECRET}",
    ],
)
def test_every_kind_of_secret_is_masked(text: str) -> None:
    shown = redact_text(text)
    assert SECRET not in shown and MASK in shown, shown


@pytest.mark.parametrize(
    "text",
    [
        "testsrc=s=64x48:d=1,colorkey=0x3BBD1E:0.3,scale=w=32:h=-2",
        "udp://127.0.0.1:1234?pkt_size=1316&fifo_size=100",
        "srt://h:9000?mode=listener&latency=200&streamid=live/cam1",
        "avdnn: 'a.mp4': Invalid data found when processing input",
        "option 'passphrase': Invalid passphrase: too short",
        "frames: read 25, written 25, failed 0",
    ],
)
def test_what_is_no_secret_is_shown_as_is(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    "option",
    ["-decryption_key", "-decryption_key:v", "-cenc_decryption_key", "-encryption_key", "-key", "-cryptokey",
     "-passphrase", "-password", "-ftp-password", "-headers", "-cookies", "-srtp_in_params", "-srtp_out_params",
     "-auth_type", "-rtmp_conn", "-authorization", "-secret", "-private_key", "-activation_bytes", "-key_pem"],
)  # fmt: skip
def test_the_value_after_a_secret_option_is_masked_in_an_argv_and_in_text(option: str) -> None:
    argv = ["-f", "lavfi", option, SECRET, "-i", "testsrc", "-y", "out.mp4"]
    assert redact_argv(argv) == ["-f", "lavfi", option, MASK, "-i", "testsrc", "-y", "out.mp4"]
    for text in (" ".join(argv), repr(argv)):
        assert SECRET not in redact_text(text), text


def test_an_argv_keeps_what_is_no_secret_and_redacts_its_urls_and_chains() -> None:
    argv = ["-i", f"rtsp://u:{SECRET}@cam/s", "-vf", f"events=headers=X-Api-Key={SECRET}", "-streamid"]
    argv += [f"#!::r=live,s={SECRET}", "-c:v", "libx264", "-metadata", "title=yard", "out.mkv"]
    shown = ["-i", "rtsp://u:***@cam/s", "-vf", "events=headers=***", "-streamid"]
    shown += ["#!::r=live,s=***", "-c:v", "libx264", "-metadata", "title=yard", "out.mkv"]
    assert redact_argv(argv) == shown


@pytest.mark.parametrize(
    ("chain", "shown"),
    [
        (f"events=webhook=http\\://h\\:9/x:headers=X-Api-Key={SECRET}|Authorization=Bearer {SECRET}:stream=a",
         "events=webhook=http\\://h\\:9/x:headers=***:stream=a"),
        (f"hflip,events=headers='X-Api-Key={SECRET}':stream=a[out]", "hflip,events=headers=***:stream=a[out]"),
        (f"events=headers=X-Api-Key\\={SECRET},hflip", "events=headers=***,hflip"),
        (f"[in]events=stream=a:mqtt=mqtt://u:{SECRET}@h:1883/t;[a]hflip", "[in]events=stream=a:mqtt=mqtt://u:***@h:1883/t;[a]hflip"),
        (f"events=mqtt=mqtt\\://u\\:{SECRET}@h", "events=mqtt=mqtt\\://u\\:***@h"),
        (f"zmq=bind_address=x:token={SECRET}:password={SECRET}", "zmq=bind_address=x:token=***:password=***"),
        ("scale=w=32:h=-2,colorkey=0x3BBD1E:0.3,drawtext=text=hello\\, world", None),
        ("x=1,,,;;[[[", None),
    ],
)  # fmt: skip
def test_a_secret_filter_option_is_masked_however_it_is_quoted(chain: str, shown: str | None) -> None:
    assert redact_chain(chain) == (chain if shown is None else shown)


def test_secret_names() -> None:
    for name in ("auth_key", "access_key", "X-Amz-Date", "x-api-key", "token", "passphrase", "sig", "Signature"):
        assert is_secret_name(name), name
    for name in ("channel", "pkt_size", "mode", "colorkey", "keyint", "streamid", "s"):
        assert not is_secret_name(name), name


def test_a_message_changed_after_construction_is_one_message_everywhere() -> None:
    """``err.message += ...`` (media.input.live does it) once left args, repr and pickling on the old
    text, and the new text unredacted."""
    import pickle
    import traceback

    err = IOFailureError("Connection refused", file="a.ts")
    err.message += f" by rtsp://u:{SECRET}@h/x (after 3 attempts)"
    assert str(err) == err.oneline() == f"'a.ts': {err.message}"
    assert SECRET not in err.oneline() and "(after 3 attempts)" in err.oneline()
    assert err.args == (err.message,) and SECRET not in repr(err)
    assert traceback.format_exception_only(err)[-1].rstrip().endswith(err.oneline())
    again = pickle.loads(pickle.dumps(err))
    assert again.message == err.message and str(again) == str(err)
    err.file = f"http://u:{SECRET}@h/"
    assert SECRET not in err.oneline() and err.file == "http://u:***@h/"


def test_api_log_records_are_redacted_whoever_handles_them() -> None:
    """No CLI: a handler an API user adds to any logger of the two trees sees the redacted text,
    a traceback's included (the CLI's handler filter once was the only redaction)."""
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    loggers = [logging.getLogger(n) for n in ("avdnn.dnn", "libav.http", "avdnn", "libav")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    try:
        loggers[0].info("loading %s", f"https://h/m.onnx?token={SECRET}")
        loggers[1].debug("request: GET /x.ts?sig=%s HTTP/1.1\r\nCookie: c=%s\r\n", SECRET, SECRET)
        try:
            raise RuntimeError(f"cannot reach rtsp://admin:{SECRET}@cam/")
        except RuntimeError:
            loggers[2].exception("bug")
        loggers[3].error("Connection to tcp://eve:%s@127.0.0.1:1 failed", SECRET)
    finally:
        for lg, (level, propagate) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate
    text = buf.getvalue()
    assert SECRET not in text, text
    assert text.count(MASK) >= 6 and "RuntimeError: cannot reach rtsp://admin:***@cam/" in text


def test_other_loggers_records_are_left_alone() -> None:
    record = logging.getLogRecordFactory()("someone.else", logging.INFO, "", 0, "token=%s", (SECRET,), None)
    assert record.getMessage() == f"token={SECRET}"


def test_redacting_stream_passes_the_rest_through() -> None:
    out = io.StringIO()
    stream = RedactingStream(out)
    assert stream.write(f"rtmp://eve:{SECRET}@h/y\n") == len(f"rtmp://eve:{SECRET}@h/y\n")
    assert out.getvalue() == "rtmp://eve:***@h/y\n" and not stream.isatty()


def test_output_url_is_redacted_in_the_failure_line_and_the_summary() -> None:
    """The issue's command: ``-f null - -f flv rtmp://eve:pw@127.0.0.1:1/y``."""
    url = f"rtmp://eve:{SECRET}@127.0.0.1:1/y?passphrase={SECRET}"
    res = run_cli(["-hide_banner", *SRC, "-f", "null", "-", "-f", "flv", url])
    assert res.rc != 0
    assert SECRET not in res.err, res.err
    assert "output #1 'rtmp://eve:***@127.0.0.1:1/y?passphrase=***'" in res.err  # the failure line and summary
    assert res.err.count("rtmp://eve:***@") >= 2 and "frames: read 25, written 25" in res.err


def test_multi_output_report_and_as_dict_are_redacted(tmp_path: object) -> None:
    url = f"rtmp://eve:{SECRET}@127.0.0.1:1/y"
    with pytest.raises(avdnn.OutputsFailedError) as info:
        avdnn.run_many(
            [
                avdnn.Job("testsrc=s=64x48:d=1", "", output="-", input_format="lavfi", format="null"),
                avdnn.Job("testsrc=s=64x48:d=1", "", output=url, input_format="lavfi", format="flv"),
            ]
        )
    report = info.value.stats
    shown = json.dumps(report.as_dict()) + report.summary() + str(info.value)
    shown += "".join(o.name + o.describe_inputs() for o in report.outputs)
    assert SECRET not in shown, shown
    assert report.as_dict()["outputs"][1]["output"] == "rtmp://eve:***@127.0.0.1:1/y"  # type: ignore[index]


class _Leaky(Filter):
    """A bug whose message names a URL with its password."""

    name = "avdnn_test_leaky_bug"
    description = "Raises a RuntimeError naming a URL with credentials."

    def filter(self, frame: Frame) -> Sequence[Frame]:
        raise RuntimeError(f"cannot reach rtsp://admin:{SECRET}@10.0.0.5/cam?token={SECRET}")


def test_a_bugs_traceback_and_internal_error_line_are_redacted(register) -> None:  # type: ignore[no-untyped-def]
    register(_Leaky)
    res = run_cli(["-hide_banner", *SRC, "-vf", "avdnn_test_leaky_bug", "-f", "null", "-"])
    assert res.rc == 190 and "Traceback (most recent call last)" in res.err
    assert "internal error: RuntimeError: cannot reach rtsp://admin:***@10.0.0.5/cam?token=***" in res.err
    assert SECRET not in res.err, res.err


def test_an_error_line_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error built from a foreign message (a protocol PyAV's FFmpeg lacks: srt) keeps no secret."""
    url = f"srt://127.0.0.1:1?passphrase={SECRET}&streamid=#!::r=live,s={SECRET}"
    res = run_cli(["-hide_banner", "-i", url, "-f", "null", "-"])
    assert res.rc != 0 and res.err.startswith("avdnn: ")
    assert SECRET not in res.err and "passphrase=***" in res.err, res.err


def test_errors_of_every_origin_are_redacted() -> None:
    assert SECRET not in str(NotFoundError(f"no rtmp://a:{SECRET}@h/x", file=f"rtmp://a:{SECRET}@h/x"))
    later = AvdnnError("boom").with_context(file=f"http://u:{SECRET}@h/")
    assert SECRET not in later.oneline()
    assert redact_url(f"http://u:{SECRET}@h/") == "http://u:***@h/"
    assert sys.stderr is not None
