"""Events to an HTTP webhook on loopback: equal to the JSONL, retries, refusals, an endpoint away, cooldown."""

from __future__ import annotations

import base64
import http.server
import itertools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ev_util import Hook, Obj, free_port, horizontal, jsonl_events, script_filter

import avdnn
from avdnn.events.sinks.base import Message, SinkOptions, SinkStats
from avdnn.events.sinks.webhook import WebhookSink

SRC = "testsrc=s=64x64:r=25:d=2"  # 50 frames
OBJECTS = [horizontal(k + 1, "car", 10 * k, 14, 4, 4, y=10 * k) for k in range(4)]  # 12 events


@pytest.fixture
def scripted(register: Callable[[type], type]) -> str:
    register(script_filter(OBJECTS))
    return "script"


def run(chain: str, tmp_path: Path) -> tuple[avdnn.RunStats, list[dict[str, Any]], SinkStats]:
    out = tmp_path / "m.jsonl"
    stats = avdnn.run(
        SRC, f"{chain},metadata_jsonl=file={out}", input_format="lavfi", output=str(tmp_path / "o.mkv"), codec="ffv1"
    )
    (sink,) = [r for r in stats.reports if isinstance(r, SinkStats) and r.kind == "webhook"]
    return stats, jsonl_events(out), sink


def test_each_event_is_posted_as_json_with_auth_and_headers(
    scripted: str, hook: Callable[..., Hook], tmp_path: Path
) -> None:
    h = hook()
    url = h.url.replace("http://", "http://bob:Hk-51ab@")
    chain = f"{scripted},line=gate:32_ih|32_0,events=webhook={url}:headers=X-Api-Key=Key-77e0|X-Site=north:lost=0.2"
    stats, written, sink = run(chain, tmp_path)
    assert len(written) == 12
    assert [body for _, body in h.posts] == written  # one thread, in order
    headers = h.posts[0][0]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"bob:Hk-51ab").decode()
    assert headers["X-Api-Key"] == "Key-77e0" and headers["X-Site"] == "north"
    assert headers["Content-Type"] == "application/json"
    snap = sink.snapshot()
    assert (snap["published"], snap["dropped"], snap["buffered"]) == (12, {}, 0)
    text = stats.summary() + repr(stats.as_dict())
    assert "Hk-51ab" not in text and "Key-77e0" not in text and "http://bob:***@127.0.0.1" in text


def test_server_errors_are_retried_with_back_off(scripted: str, hook: Callable[..., Hook], tmp_path: Path) -> None:
    h = hook(statuses=[500, 503])
    _, written, sink = run(f"{scripted},events=webhook={h.url}:retries=2:lost=0.2", tmp_path)
    assert [body for _, body in h.posts] == written and h.tries == len(written) + 2
    assert sink.snapshot()["published"] == len(written)


def test_a_refusal_is_not_retried_and_is_counted(scripted: str, hook: Callable[..., Hook], tmp_path: Path) -> None:
    h = hook(statuses=[400])
    stats, written, sink = run(f"{scripted},events=webhook={h.url}:lost=0.2", tmp_path)
    snap = sink.snapshot()
    assert snap["dropped"] == {"refused: HTTP 400": 1} and snap["published"] == len(written) - 1
    assert [body for _, body in h.posts] == written[1:]
    assert stats.check(), stats.violations()


def test_an_endpoint_that_is_away_makes_counted_drops(scripted: str, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/nobody"
    stats, written, sink = run(f"{scripted},events=webhook={url}:retries=1:buffer=4:flush_timeout=0.2", tmp_path)
    snap = sink.snapshot()
    dropped = sum(snap["dropped"].values())
    assert snap["produced"] == len(written) and snap["published"] == 0 and snap["buffered"] == 0
    assert dropped == len(written)
    assert set(snap["dropped"]) <= {
        "buffer full",
        "undelivered at close",
        "failed after 2 attempt(s): unreachable: ConnectionRefusedError",
    }
    assert stats.check(), stats.violations()


def test_cooldown_suppresses_all_but_the_end(scripted: str, hook: Callable[..., Hook], tmp_path: Path) -> None:
    h = hook()
    _, written, sink = run(f"{scripted},line=gate:32_ih|32_0,events=webhook={h.url}:cooldown=60:lost=0.2", tmp_path)
    posted = [(b["type"], b["track_id"]) for _, b in h.posts]
    assert posted == [(e["type"], e["track_id"]) for e in written if e["type"] != "cross"]  # new ... end per object
    assert sink.snapshot()["dropped"] == {"cooldown": 4}


def test_a_busy_object_is_posted_once_per_cooldown(
    hook: Callable[..., Hook], register: Callable[[type], type], tmp_path: Path
) -> None:
    # one object going in and out of a zone every 5 frames (0.2 s): updates and enters/exits galore
    xs = {n: (20.0 if (n // 5) % 2 else 40.0, 20.0) for n in range(50)}
    register(script_filter([Obj(1, "car", xs)], name="busy"))
    h = hook()
    _, written, sink = run(f"busy,zone=z:32_0|iw_0|iw_ih|32_ih,events=webhook={h.url}:cooldown=0.5", tmp_path)
    times = [b["time"] for _, b in h.posts if b["type"] != "end"]
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(times))
    assert h.posts[-1][1]["type"] == "end"
    snap = sink.snapshot()
    assert snap["published"] + snap["dropped"]["cooldown"] == len(written) == snap["produced"]


class _Recorder(http.server.ThreadingHTTPServer):
    """A loopback server that answers every request with ``status`` (and ``location``), recording each."""

    def __init__(self, status: int = 204, location: str = "") -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                recorder.seen.append((self.command, self.path, dict(self.headers.items())))
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_HEAD = _answer

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_refusal_and_its_target_sees_nothing(status: int) -> None:
    """urllib's default follows a 3xx to any host with the Authorization and custom headers: not here."""
    target = _Recorder()
    redirector = _Recorder(status, location=target.url("/stolen"))
    try:
        url = redirector.url("/hook").replace("http://", "http://bob:Hk-51ab@")
        sink = WebhookSink(url, SinkOptions(headers=(("X-Api-Key", "Key-77e0"),), retries=2, flush_timeout=10))
        for seq in range(3):
            sink.send(Message.of("event", {"type": "new", "seq": seq, "track_id": seq}))
        sink.close()
    finally:
        redirector.close()
        target.close()
    assert target.seen == []
    assert [(method, path) for method, path, _ in redirector.seen] == [("POST", "/hook")] * 3  # never retried
    snap = sink.stats.snapshot()
    assert (snap["produced"], snap["published"], snap["buffered"]) == (3, 0, 0)
    assert snap["dropped"] == {f"refused: HTTP {status}": 3}
