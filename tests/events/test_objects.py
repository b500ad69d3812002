"""Object life-cycle events: new, update, end, their order on a frame, and every event valid by the schema."""

from __future__ import annotations

import base64
import io
import re
from typing import Any

import numpy as np
import pytest
from ev_util import Obj, det_at
from spine_util import need_module

from avdnn.errors import InvalidDataError
from avdnn.events.objects import ObjectEvents
from avdnn.events.schema import event_schema, validate_event
from avdnn.media.frame import Frame

need_module("jsonschema", "pip install 'avdnn[test]'")


def frame(n: int, size: tuple[int, int] = (64, 64)) -> Frame:
    w, h = size
    y = np.full((h, w), 16 + 40 * n % 200, np.uint8)
    uv = np.full((h // 2, w // 2), 128, np.uint8)
    from fractions import Fraction

    return Frame.from_planes([y, uv, uv.copy()], "yuv420p", pts=n, time_base=Fraction(1, 25))


def run(objs: list[Obj], frames: int, **kw: Any) -> list[dict[str, Any]]:
    alive = kw.pop("alive", None)
    membership = kw.pop("membership", None)
    life = ObjectEvents("cam1", **kw)
    out = []
    for n in range(frames):
        out += life.update(
            det_at(objs, n),
            frame(n),
            n / 25,
            n,
            alive=alive[n] if alive else None,
            membership=membership[n] if membership else None,
        )
    return out + life.finish()


def test_new_then_end_with_the_common_fields() -> None:
    obj = Obj(3, "car", {n: (10.0 + n, 20.0) for n in range(1, 6)})
    events = run([obj], 8, lost=0.05)
    assert [(e["type"], e["frame"]) for e in events] == [("new", 1), ("end", 7)]
    new, end = events
    assert new["version"] == 1 and new["stream"] == "cam1" and [e["seq"] for e in events] == [0, 1]
    assert (new["track_id"], new["label"], new["pts"], new["time"]) == (3, "car", 1, 0.04)
    assert new["box"] == [11.0, 20.0, 19.0, 30.0] and new["score"] == pytest.approx(0.9) and new["zones"] == []
    assert (
        end["reason"] == "lost" and end["duration"] == pytest.approx(4 / 25) and end["box"] == [15.0, 20.0, 23.0, 30.0]
    )
    for e in events:
        validate_event(e)


def test_end_comes_from_the_trackers_drop_and_eos_ends_the_rest() -> None:
    a = Obj(1, "car", dict.fromkeys(range(3), (10.0, 10.0)))
    b = Obj(2, "person", dict.fromkeys(range(10), (30.0, 30.0)))
    alive = [frozenset({1, 2})] * 6 + [frozenset({2})] * 4  # a unseen on 3..5 but kept, dropped on 6
    events = run([a, b], 10, alive=alive)
    assert [(e["type"], e["track_id"], e["frame"], e.get("reason")) for e in events] == [
        ("new", 1, 0, None),
        ("new", 2, 0, None),
        ("end", 1, 6, "lost"),
        ("end", 2, 9, "eos"),
    ]


def test_ids_minus_one_are_not_objects() -> None:
    assert run([Obj(-1, "car", dict.fromkeys(range(5), (10.0, 10.0)))], 5) == []


def test_update_on_label_by_vote_and_on_zones() -> None:
    labels = ["person", "bicycle", "bicycle", "bicycle", "bicycle"]
    objs = [Obj(1, lb, {n: (10.0, 10.0)}) for n, lb in enumerate(labels)]
    membership = [{}, {}, {1: ("bay",)}, {1: ("bay",)}, {}]
    events = run(objs, 5, membership=membership, stationary=0)
    got = [(e["type"], e["frame"], e.get("changes"), e.get("previous")) for e in events]
    assert got == [
        ("new", 0, None, None),
        # frame 1: person 1, bicycle 1, the first seen wins the tie; frame 2: bicycle 2 to 1
        ("update", 2, ["label", "zones"], {"label": "person", "zones": []}),
        ("update", 4, ["zones"], {"zones": ["bay"]}),
        ("end", 4, None, None),
    ]
    assert events[1]["label"] == "bicycle" and events[1]["zones"] == ["bay"] and events[2]["zones"] == []
    for e in events:
        validate_event(e)


def test_stationary_after_seconds_still_and_moving_again() -> None:
    path = dict.fromkeys(range(40), (10.0, 10.0)) | {n: (10.0 + 3 * (n - 40), 10.0) for n in range(40, 50)}
    events = run([Obj(1, "car", path)], 50, stationary=1.0)
    updates = [(e["frame"], e["changes"], e["previous"], e["stationary"]) for e in events if e["type"] == "update"]
    # still from 0: stationary 1 s later; then 3 px on an 8 px wide box is an IoU of 0.45 < 0.6: moving
    assert updates == [
        (25, ["stationary"], {"stationary": False}, True),
        (41, ["stationary"], {"stationary": True}, False),
    ]


def test_zone_and_line_events_are_completed_and_come_between_new_and_updates() -> None:
    life = ObjectEvents("cam1", stationary=0)
    obj = Obj(5, "car", {0: (10.0, 10.0)})
    upstream = [
        {
            "type": "enter",
            "track_id": 5,
            "label": "car",
            "class_id": 0,
            "score": 0.9,
            "box": [10.0, 10.0, 18.0, 20.0],
            "predicted": False,
            "zone": "bay",
            "since": 0.0,
        }
    ]
    events = life.update(det_at([obj], 0), frame(0), 0.0, 0, membership={5: ("bay",)}, upstream=upstream)
    assert [e["type"] for e in events] == ["new", "enter"]
    assert events[1]["zones"] == ["bay"] and events[1]["seq"] == 1 and events[1]["first_time"] == 0.0
    validate_event(events[1])


def test_snapshot_is_the_best_scored_view_as_jpeg() -> None:
    import av

    scores = [0.5, 0.9, 0.7, 0.6]
    objs = [Obj(1, "car", {n: (8.0 * n, 10.0)}, size=(16, 20), score=s) for n, s in enumerate(scores)]
    events = run(objs, 4, snapshot=True, stationary=0)
    new, end = events
    assert new["snapshot"]["score"] == pytest.approx(0.5) and end["snapshot"]["score"] == pytest.approx(0.9)
    assert end["snapshot"]["pts"] == 1
    picture = next(av.open(io.BytesIO(base64.b64decode(end["snapshot"]["data"]))).decode(video=0))
    assert (picture.width, picture.height) == (end["snapshot"]["width"], end["snapshot"]["height"]) == (20, 24)
    luma = picture.to_ndarray(format="gray")
    assert abs(luma.mean() - 40 * 255 / 219) <= 3  # frame 1's grey (16 + 40), in JPEG's full range
    validate_event(end)


def test_the_schema_refuses_what_it_does_not_describe() -> None:
    event = run([Obj(1, "car", {0: (1.0, 1.0)})], 1)[0]
    validate_event(event)
    for broken, where in [
        ({**event, "type": "appeared"}, "type"),
        ({**event, "box": [1, 2, 3]}, "box"),
        ({**event, "surprise": 1}, "(the event)"),
        ({k: v for k, v in event.items() if k != "stream"}, "(the event)"),
        ({**event, "type": "cross"}, "(the event)"),  # a cross needs its line and direction
    ]:
        with pytest.raises(InvalidDataError, match=re.escape(f"event-v1.schema.json: {where}")):
            validate_event(broken)
    assert event_schema()["properties"]["version"] == {"const": 1}


def test_a_zone_event_after_the_objects_end_is_still_complete() -> None:
    """A zone with a longer ``lost`` than the events stage's: its exit comes after the object's end."""
    life = ObjectEvents("cam1", stationary=0, lost=0.1)
    obj = Obj(4, "car", {0: (10.0, 10.0)})
    events = life.update(det_at([obj], 0), frame(0), 0.0, 0)
    events += life.update(det_at([], 1), frame(1), 0.5, 1)  # gone for the events stage
    late = {"type": "exit", "track_id": 4, "label": "car", "class_id": 0, "score": 0.9, "box": [10.0, 10.0, 18.0, 20.0]}
    late.update(predicted=False, zone="bay", dwell=0.0, reason="lost")
    events += life.update(det_at([], 2), frame(2), 1.0, 2, upstream=[late])
    assert [e["type"] for e in events] == ["new", "end", "exit"]
    assert events[2]["first_time"] == 0.0 and events[2]["top_score"] == pytest.approx(0.9)
    for e in events:
        validate_event(e)
    unknown = life.update(det_at([], 3), frame(3), 1.1, 3, upstream=[{**late, "track_id": 99}])
    validate_event(unknown[0])
