"""Events through a real mosquitto on loopback: equal to the JSONL, across a restart, a broker that dies, credentials.

The script: twelve objects, one every 8 frames, each crossing the line and then leaving, so that
events (new, cross, end) keep coming over the whole run and a broker stopped on frame 30 misses
some of them whatever the timing.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ev_util import Broker, Subscriber, horizontal, jsonl_events, need_mosquitto, script_filter
from spine_util import need_installed

import avdnn
from avdnn.errors import BackendUnavailableError
from avdnn.events import SINKS
from avdnn.events.sinks.base import Message, SinkOptions, SinkStats
from avdnn.events.sinks.mqtt import MqttSink

SRC = "testsrc=s=64x64:r=25:d=4"  # 100 frames
OBJECTS = [horizontal(k + 1, ("car", "person", "bicycle")[k % 3], 8 * k, 14, 4, 4, y=4 * k) for k in range(12)]
LINE = "line=gate:32_ih|32_0"


@pytest.fixture
def scripted(register: Callable[[type], type]) -> str:
    need_mosquitto()
    register(script_filter(OBJECTS))
    return "script"


@pytest.fixture
def subscriber(broker: Broker) -> Iterator[Subscriber]:
    sub = Subscriber(broker.port, "avdnn/#")
    yield sub
    sub.close()


def mqtt_url(broker: Broker, auth: str = "") -> str:
    return f"mqtt://{auth}127.0.0.1:{broker.port}/avdnn/{{stream}}/events"


def sink_of(stats: avdnn.RunStats, kind: str = "mqtt") -> SinkStats:
    (sink,) = [r for r in stats.reports if isinstance(r, SinkStats) and r.kind == kind]
    return sink


def test_events_arrive_equal_in_number_content_and_order(
    scripted: str, broker: Broker, subscriber: Subscriber, tmp_path: Path
) -> None:
    out = tmp_path / "m.jsonl"
    chain = f"{scripted},{LINE},events=stream=cam1:mqtt={mqtt_url(broker)}:lost=0.2,metadata_jsonl=file={out}"
    stats = avdnn.run(SRC, chain, input_format="lavfi", output=str(tmp_path / "o.mkv"), codec="ffv1")
    written = jsonl_events(out)
    assert len(written) == 36  # new, cross, end for each of the twelve
    assert subscriber.wait_for(lambda m: len(m) >= len(written))
    got = subscriber.events()
    assert got == written  # one topic, one publisher: MQTT keeps the order
    assert {t for t, _, _ in subscriber.messages} == {"avdnn/cam1/events"}
    snap = sink_of(stats).snapshot()
    assert (snap["produced"], snap["published"], snap["buffered"], snap["dropped"]) == (36, 36, 0, {})
    assert stats.check(), stats.violations()


def test_state_topics_are_retained_and_frames_go_at_qos0(
    scripted: str, broker: Broker, subscriber: Subscriber, tmp_path: Path
) -> None:
    chain = f"{scripted},{LINE},events=stream=cam1:mqtt={mqtt_url(broker)}:qos=0:state=1:frames=1:lost=0.2"
    stats = avdnn.run(SRC, chain, input_format="lavfi", output=str(tmp_path / "o.mkv"), codec="ffv1")
    snap = sink_of(stats).snapshot()
    assert snap["messages"] == {"event": 36, "frame": 100, "state": 13}  # the first counts, then one per change
    assert snap["published"] == 149 and not snap["dropped"]
    assert subscriber.wait_for(lambda m: len(m) >= 149)
    topics = Counter(t for t, _, _ in subscriber.messages)
    assert topics == {"avdnn/cam1/events": 36, "avdnn/cam1/frames": 100, "avdnn/cam1/line/gate": 13}
    frames = [json.loads(p) for t, p, _ in subscriber.messages if t.endswith("/frames")]
    assert [f["n"] for f in frames] == list(range(100)) and frames[0]["stream"] == "cam1"
    late = Subscriber(broker.port, "avdnn/cam1/line/#")  # after the run: only retained messages arrive
    try:
        assert late.wait_for(lambda m: len(m) >= 1)
        topic, payload, retained = late.messages[0]
        state = json.loads(payload)
        assert topic == "avdnn/cam1/line/gate" and retained and len(late.messages) == 1
        assert state["type"] == "line" and state["name"] == "gate"
        assert (state["in"], state["out"]) == ({}, {"car": 4, "person": 4, "bicycle": 4})
    finally:
        late.close()


def test_qos1_events_survive_a_broker_restart_mid_run(
    scripted: str, broker: Broker, subscriber: Subscriber, tmp_path: Path
) -> None:
    out = tmp_path / "m.jsonl"
    chain = (
        f"{scripted},{LINE},events=stream=cam1:mqtt={mqtt_url(broker)}:qos=1:flush_timeout=30:lost=0.2,"
        f"metadata_jsonl=file={out}"
    )
    stream = avdnn.run(SRC, chain, input_format="lavfi")
    sink = sink_of(stream.stats)  # live counters, read while the frames go
    buffered_while_down = 0
    for n, _ in enumerate(stream):
        if n == 30:
            broker.stop()  # SIGTERM: mosquitto saves the subscriber's session
            _wait(lambda: sink.state != "connected")
        if n == 60:
            buffered_while_down = sink.buffered
            broker.start()  # same port, same persistence: the publisher and the subscriber reconnect
    stats = stream.stats
    written = jsonl_events(out)
    snap = sink_of(stats).snapshot()
    assert buffered_while_down > 0  # events made while the broker was away waited
    assert (snap["produced"], snap["published"], snap["dropped"], snap["buffered"]) == (
        len(written),
        len(written),
        {},
        0,
    )
    assert snap["reconnects"] >= 1
    assert subscriber.wait_for(lambda m: {json.loads(p)["seq"] for _, p, _ in m} >= set(range(len(written))))
    first: dict[int, dict[str, Any]] = {}
    for event in subscriber.events():
        first.setdefault(event["seq"], event)  # QoS 1 is at least once: a repeat has the same seq
    assert [first[k] for k in sorted(first)] == written
    assert stats.check(), stats.violations()


def test_a_broker_killed_mid_run_makes_counted_drops_and_no_hang(scripted: str, broker: Broker, tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    chain = (
        f"{scripted},{LINE},events=stream=cam1:mqtt={mqtt_url(broker)}:buffer=5:flush_timeout=0.5:lost=0.2,"
        f"metadata_jsonl=file={out}"
    )
    stream = avdnn.run(SRC, chain, input_format="lavfi")
    for n, _ in enumerate(stream):
        if n == 30:
            broker.kill()  # SIGKILL, and it stays down
    stats = stream.stats
    produced = len(jsonl_events(out))
    snap = sink_of(stats).snapshot()
    dropped = sum(snap["dropped"].values())
    assert snap["produced"] == produced == 36
    assert snap["published"] + dropped + snap["buffered"] == produced
    assert snap["buffered"] == 0 and snap["published"] > 0 and dropped > 0
    assert set(snap["dropped"]) <= {"buffer full", "undelivered at close"}
    assert snap["dropped"]["buffer full"] > 0  # a buffer of 5 for the rest of the run
    assert stats.check(), stats.violations()
    line = next(x for x in stats.summary().splitlines() if x.startswith("events to mqtt"))
    assert f"published {snap['published']}, dropped {dropped} (" in line and "buffered 0" in line


def _wait(test: Callable[[], bool], bound: float = 10.0) -> None:
    deadline = time.monotonic() + bound
    while not test():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


@pytest.fixture
def constant_model(tmp_path: Path) -> str:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analytics"))
    from analytics_models import constant, ssd_output

    return constant(tmp_path, "det", [ssd_output()])


def test_the_password_never_prints(
    make_broker: Callable[..., Broker], constant_model: str, tmp_path: Path, avdnn_subprocess: Callable[..., Any]
) -> None:
    need_installed("trackers", "pip install 'avdnn[track]'")
    password = "Pw-9f2c"
    broker = make_broker(users={"alice": password})
    sub = Subscriber(broker.port, "avdnn/#", user="alice", password=password)
    out = tmp_path / "m.jsonl"
    url = f"mqtt://alice:{password}@127.0.0.1:{broker.port}/avdnn/{{stream}}/events"
    argv = ["-f", "lavfi", "-i", "testsrc=s=64x64:r=25:d=0.4", "-vf"]
    chain = f"dnn_detect=model={constant_model},track,events=flush_timeout=0.5:mqtt={url},metadata_jsonl=file={out}"
    try:
        res = avdnn_subprocess([*argv, chain, "-f", "null", "-"])
        assert res.rc == 0, res.err
        assert sub.wait_for(lambda m: len(m) >= 2)  # new and end
        assert sub.events() == jsonl_events(out)
        bad = avdnn_subprocess(["-y", *argv, chain.replace(password, "Wrong-77c1"), "-f", "null", "-"])
        assert bad.rc == 0, bad.err
        debug = avdnn_subprocess(["-y", "-loglevel", "debug", *argv, chain, "-f", "null", "-"])
    finally:
        sub.close()
    shown = f"mqtt://alice:***@127.0.0.1:{broker.port}/avdnn/{{stream}}/events"
    assert f"events to mqtt '{shown}': 2 events: published 2, dropped 0, buffered 0" in res.err
    assert "broker refused the connection" in bad.err and "dropped 2 (undelivered at close 2)" in bad.err
    for text in (res.err, res.out.decode(), bad.err, bad.out.decode(), debug.err, out.read_text()):
        assert password not in text and "Wrong-77c1" not in text
    with_api = avdnn.run(
        "testsrc=s=64x64:r=25:d=0.2",
        chain.replace(str(out), str(tmp_path / "n.jsonl")),
        input_format="lavfi",
        output=str(tmp_path / "o.mkv"),
        codec="ffv1",
    )
    assert password not in json.dumps(with_api.as_dict()) and password not in with_api.summary()
    assert shown in with_api.summary()


def test_without_paho_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SINKS, "mqtt", dataclasses.replace(SINKS["mqtt"], requires="no_such_paho_module"))
    with pytest.raises(BackendUnavailableError, match=r"pip install 'avdnn\[events\]'") as err:
        list(avdnn.run("testsrc=s=32x32:d=0.04", "events=mqtt=mqtt://127.0.0.1:1/t", input_format="lavfi"))
    assert err.value.filter == "events"


def test_field_values_are_made_topic_safe_and_a_message_paho_refuses_is_dropped_alone(
    broker: Broker, subscriber: Subscriber
) -> None:
    """A label holding '+', '#', '/', NUL or nothing neither kills the delivery thread nor changes the
    topic's levels; a topic over MQTT's limit is dropped and counted, and the messages after it go."""
    labels = ["a+b", "#", "x/y", "nul\x00", "", "50%", "x" * 70000, "car"]
    url = f"mqtt://127.0.0.1:{broker.port}/avdnn/{{stream}}/{{label}}/{{type}}"
    sink = MqttSink(url, SinkOptions(stream="site/1", flush_timeout=10))
    for seq, label in enumerate(labels):
        sink.send(Message.of("event", {"type": "new", "seq": seq, "label": label, "track_id": seq}))
    sink.close()
    snap = sink.stats.snapshot()
    assert (snap["produced"], snap["published"], snap["buffered"]) == (8, 7, 0)
    assert snap["dropped"] == {"refused by paho: Publish topic is too long.": 1}
    assert subscriber.wait_for(lambda m: len(m) >= 7)
    got = [(topic, json.loads(payload)["label"]) for topic, payload, _ in subscriber.messages]
    escaped = ["a%2Bb", "%23", "x%2Fy", "nul%00", "_", "50%25", "car"]
    assert got == [
        (f"avdnn/site%2F1/{e}/new", label) for e, label in zip(escaped, labels[:6] + labels[7:], strict=True)
    ]


def test_last_error_is_cleared_by_a_reconnection(broker: Broker) -> None:
    sink = MqttSink(f"mqtt://127.0.0.1:{broker.port}/t", SinkOptions(flush_timeout=0.5))
    try:
        _wait(lambda: sink.stats.state == "connected", bound=30)
        broker.stop()
        _wait(lambda: sink.stats.last_error != "", bound=30)  # paho's reconnection fails meanwhile
        assert sink.stats.last_error == f"cannot reach the broker at 127.0.0.1:{broker.port}"
        broker.start()
        _wait(lambda: sink.stats.reconnects == 1, bound=30)
        snap = sink.stats.snapshot()
        assert (snap["state"], snap["last_error"]) == ("connected", "")
    finally:
        sink.close()
