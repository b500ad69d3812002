"""``GET /api/events``: every pipeline's zone and object events as Server-Sent Events, from real runs
over live ffmpeg cameras (a tiny detector, ``track``, a zone, ``events`` with no sink option), read
with httpx streaming; filters, ``Last-Event-ID``, keep-alives, the bounded queue of a slow client,
and the counts in ``/metrics``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from serve_util import Camera, EventStream, Served, source, wait_for
from test_serve_check import metric_values

from avdnn.events import validate_event
from avdnn.serve.eventbus import EventBus

#: a box on every frame (the tiny detector), tracked, inside a zone covering the frame: new and enter
#: events at the first frames of a source, end when it stops
EVENTS_CHAIN = (
    "dnn_detect=model=MODEL:model_instance=det:batch_size=2:batch_timeout=0.05:confidence=0.5,track,"
    "zone=all:0_0|iw_0|iw_ih|0_ih,events=stream={source}"
)


def events_chain(model: str) -> str:
    return EVENTS_CHAIN.replace("MODEL", model)


def events_pipeline(name: str, model: str, *cams: tuple[str, Camera]) -> dict[str, Any]:
    return {
        "name": name,
        "chain": events_chain(model),
        "output": ["-f", "null", "-"],
        "sources": [{"id": sid, "url": cam.url} for sid, cam in cams],
    }


@pytest.fixture
def keepalive(monkeypatch: pytest.MonkeyPatch) -> float:
    """FastAPI's SSE keep-alive comment every 0.3 s instead of 15 (the readers stop at a line)."""
    import fastapi.routing

    monkeypatch.setattr(fastapi.routing, "_PING_INTERVAL", 0.3)
    return 0.3


def _of(stream: EventStream, sid: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in stream.events if e["data"]["source"] == sid and e["event"] == kind]


def test_sse_delivers_every_sources_events_filtered_and_counted(
    serve: Any, ffmpeg: str, detector: str, keepalive: float
) -> None:
    served: Served = serve()
    with Camera(ffmpeg) as cam1, Camera(ffmpeg) as cam2, EventStream(served) as every:
        assert every.status == 200 and every.content_type.startswith("text/event-stream")
        assert every.comments[0] == "avdnn events"
        with EventStream(served, {"source": "cam2"}) as only_cam2, EventStream(served, {"pipeline": "other"}) as none:
            r = served.client.post(
                "/api/pipelines", json=events_pipeline("gate", detector, ("cam1", cam1), ("cam2", cam2))
            )
            assert r.status_code == 201, r.text
            wait_for(
                "new and enter events of both",
                lambda: all(_of(every, s, k) for s in ("cam1", "cam2") for k in ("new", "enter")),
            )
            final = served.client.delete("/api/pipelines/gate").json()  # the objects' end events come at the stop
            wait_for("the end events", lambda: _of(every, "cam1", "end") and _of(every, "cam2", "end"))
            wait_for("cam2's end on the filtered stream", lambda: any(e["event"] == "end" for e in only_cam2.events))
            assert final["state"] == "ended"
            # the pings of an idle stream: FastAPI's keep-alive comment
            wait_for("a keep-alive", lambda: "ping" in none.comments)
            assert none.events == []
        got = list(every.events)
        cam2_only = list(only_cam2.events)
    ids = [e["id"] for e in got]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for e in got:
        assert e["data"]["pipeline"] == "gate" and e["data"]["source"] in ("cam1", "cam2")
        assert e["event"] == e["data"]["event"]["type"]
        validate_event(e["data"]["event"])  # the event as event-v1.schema.json says, whatever the sink
        assert e["data"]["event"]["stream"] == e["data"]["source"]  # events=stream={source}
    assert [e["id"] for e in cam2_only] == [e["id"] for e in got if e["data"]["source"] == "cam2"]
    # each source's seq counts 0, 1, 2... with no gap: nothing was lost on the way
    for sid in ("cam1", "cam2"):
        seqs = [e["data"]["event"]["seq"] for e in got if e["data"]["source"] == sid]
        assert seqs == list(range(len(seqs))), (sid, seqs)

    # /metrics: the runs' listener sinks took every event, the clients were handed them all
    values = metric_values(served.client.get("/metrics").text)
    listener = values[("avdnn_events_published_total", (("sink", "listener"),))]
    assert listener == len(got)
    assert values[("avdnn_events_dropped_total", (("sink", "listener"),))] == 0
    assert values[("avdnn_events_published_total", (("sink", "sse"),))] == len(got) + len(cam2_only)
    assert values[("avdnn_events_dropped_total", (("sink", "sse"),))] == 0

    # a client reconnecting with Last-Event-ID gets what came after it, from the recent ones kept;
    # one asking for a backlog gets the last ones its filters keep (Last-Event-ID wins over it)
    with (
        EventStream(served, headers={"Last-Event-ID": str(ids[0])}) as again,
        EventStream(served, {"backlog": "2", "source": "cam1"}) as backlog,
        EventStream(served, {"backlog": "2"}, headers={"Last-Event-ID": str(ids[-1])}) as caught_up,
    ):
        wait_for("the replay", lambda: len(again.events) == len(got) - 1)
        assert [e["id"] for e in again.events] == ids[1:]
        wait_for("the backlog", lambda: len(backlog.events) == 2)
        assert [e["id"] for e in backlog.events] == [e["id"] for e in got if e["data"]["source"] == "cam1"][-2:]
        wait_for("a keep-alive", lambda: "ping" in caught_up.comments)
        assert caught_up.events == []


def test_a_run_restarted_keeps_publishing(serve: Any, ffmpeg: str, detector: str, keepalive: float) -> None:
    """A camera that goes away and comes back: the source's next run is attached to the bus too."""
    served: Served = serve(retry_interval=0.5, stall_after=1.0)
    cam = Camera(ffmpeg).start()
    try:
        with EventStream(served, {"pipeline": "door"}) as stream:
            r = served.client.post("/api/pipelines", json=events_pipeline("door", detector, ("cam", cam)))
            assert r.status_code == 201, r.text
            wait_for("the first run's new", lambda: _of(stream, "cam", "new"))
            cam.kill()
            wait_for("the source restarted", lambda: source(served.status("door"), "cam")["state"] == "offline")
            cam = Camera(ffmpeg, cam.port).start()
            wait_for("the second run's new", lambda: len(_of(stream, "cam", "new")) >= 2, deadline=90)
            runs = source(served.status("door"), "cam")["runs"]
            assert runs >= 2
    finally:
        cam.kill()


def test_a_slow_client_loses_the_oldest_never_the_pipeline() -> None:
    """The per-client queue is bounded: publishing never waits; the oldest events go, counted for ``sse``."""
    bus = EventBus(limit=3)

    async def scenario() -> tuple[list[int], list[int]]:
        loop = asyncio.get_running_loop()
        slow = bus.open(loop)
        other = bus.open(loop, source="b")
        for n in range(10):  # the stages' side, while the client reads nothing
            bus.publish("p", "a" if n % 2 else "b", {"type": "new", "seq": n})
        first = [e.id for e in await slow.next(1.0)]
        theirs = [e.id for e in await other.next(1.0)]
        bus.close(slow)
        bus.close(other)
        return first, theirs

    first, theirs = asyncio.run(scenario())
    assert first == [8, 9, 10]  # the three newest of ten
    assert theirs == [5, 7, 9]  # source b's events (even n: ids 1, 3, 5, 7, 9): its newest three
    assert bus.dropped == 7 + 2 and bus.clients() == 0
    assert ("sse", 0, 9) in list(bus.event_counts())
    # a client whose loop is gone does not stop the publishing (its wake cannot be scheduled)
    loop = asyncio.new_event_loop()
    gone = bus.open(loop)
    loop.close()
    bus.publish("p", "a", {"type": "end"})
    assert gone.closed and len(gone.queue) == 1


def test_events_of_a_file_pipeline_reach_the_bus(serve: Any, detector: str, tmp_path: Path, keepalive: float) -> None:
    """A command-line pipeline's sources (``out0``...) publish too: the bus is hooked where every source starts."""
    served: Served = serve()
    with EventStream(served) as stream:
        args = [
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=10:duration=1",
            "-vf",
            events_chain(detector).replace("{source}", "clip"),
        ]
        r = served.client.post("/api/pipelines", json={"name": "clip", "args": [*args, "-f", "null", "-"]})
        assert r.status_code == 201, r.text
        wait_for("the clip's end event", lambda: _of(stream, "out0", "end"))
        kinds = [e["event"] for e in stream.events]
    assert kinds[:2] == ["new", "enter"] and kinds[-1] == "end"
    assert stream.events[-1]["data"]["event"]["reason"] == "eos"
