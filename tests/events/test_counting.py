"""Zone and line counts on synthetic tracks whose crossings are known.

Boxes are 8 x 10 px, so the bottom-centre anchor of a box at (x, y) is (x + 4, y + 10). The
frames are 25 per second (time = n / 25).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from ev_util import Obj, det_at, horizontal

from avdnn.events.geometry import Points
from avdnn.events.lines import LineCounter
from avdnn.events.zones import ZoneCounter

SIZE = (64, 64)


def feed(
    counter: Any, objs: Sequence[Obj], frames: int, alive: list[frozenset[int] | None] | None = None
) -> list[dict]:
    out = []
    for n in range(frames):
        events = counter.update(det_at(objs, n), SIZE, n / 25, n, alive[n] if alive else None)
        out += [{**e, "n": n} for e in events]
    return out


def vertical_line(**kw: Any) -> LineCounter:
    """x = 32 from the bottom to the top: walking up, the left (in) side is x < 32."""
    return LineCounter("gate", Points.parse("32_64|32_0", at_least=2, at_most=2), **kw)


# -- lines ---------------------------------------------------------------------------------------


def test_crossings_in_and_out_by_direction_and_class() -> None:
    objs = [
        horizontal(1, "car", 0, 20, 0, 3),  # anchor 4 -> 61: left to right: out
        horizontal(2, "person", 0, 20, 56, -3),  # anchor 60 -> 3: right to left: in
        horizontal(3, "car", 5, 20, 52, -2),  # in
        horizontal(4, "car", 0, 10, 0, 1),  # stays left of the line: nothing
    ]
    line = vertical_line()
    events = feed(line, objs, 30)
    assert sorted((e["track_id"], e["direction"]) for e in events) == [(1, "out"), (2, "in"), (3, "in")]
    assert dict(line.crossed_in) == {"person": 1, "car": 1} and dict(line.crossed_out) == {"car": 1}
    first = next(e for e in events if e["track_id"] == 1)
    assert first["n"] == 10 and first["label"] == "car" and first["box"] == [30.0, 20.0, 38.0, 30.0]  # 28+4 < 32 < 34
    assert line.summary_lines() == ["line gate: in 2, out 1", "  car: in 1, out 1", "  person: in 1, out 0"]


def test_unconfirmed_ids_never_count() -> None:
    """Ten objects without a confirmed track (-1) cross: supervision #2578 made them one phantom track."""
    objs = [horizontal(-1, "car", k, 20, 0, 3, y=2 + 5 * k) for k in range(10)]
    line = vertical_line()
    assert feed(line, objs, 30) == []
    assert not line.crossed_in and not line.crossed_out and not line.book.tracks


def test_a_box_sitting_on_the_line_counts_only_when_it_leaves_on_the_other_side() -> None:
    # anchor x: 20, 26, then 32 (on the line) for 10 frames, then back to 26: no crossing
    back = Obj(1, "car", {n: (x - 4, 20) for n, x in enumerate([20, 26, *[32] * 10, 26, 20])})
    # the same, but it leaves to the right: one crossing, on the frame it leaves
    over = Obj(2, "car", {n: (x - 4, 40) for n, x in enumerate([20, 26, *[32] * 10, 38, 44])})
    line = vertical_line()
    events = feed(line, [back, over], 14)
    assert [(e["track_id"], e["direction"], e["n"]) for e in events] == [(2, "out", 12)]


def test_crossing_back_counts_once_per_direction() -> None:
    xs = [20, 40, 20, 40, 20, 40, 20]  # out, in, out, in, out, in: at most one of each
    obj = Obj(1, "car", {n: (x - 4, 20) for n, x in enumerate(xs)})
    line = vertical_line()
    events = feed(line, [obj], len(xs))
    assert [(e["direction"], e["n"]) for e in events] == [("out", 1), ("in", 2)]
    assert (sum(line.crossed_in.values()), sum(line.crossed_out.values())) == (1, 1)


def test_going_round_the_end_of_the_line_is_no_crossing() -> None:
    short = LineCounter("short", Points.parse("32_40|32_64", at_least=2, at_most=2))  # the lower part only
    above = horizontal(1, "car", 0, 20, 0, 3, y=5)  # anchor y 15: passes above the end of the line
    below = horizontal(2, "car", 0, 20, 0, 3, y=40)  # anchor y 50: through it
    events = feed(short, [above, below], 20)
    assert [(e["track_id"], e["direction"]) for e in events] == [(2, "in")]  # walking down, x > 32 is left


def test_margin_makes_a_band_that_counts_as_on_the_line() -> None:
    obj = Obj(1, "car", {n: (x - 4, 20) for n, x in enumerate([20, 30, 34, 30, 40])})
    assert [e["n"] for e in feed(vertical_line(), [obj], 5)] == [2, 3]  # out, in (out again on 4: counted already)
    assert [e["n"] for e in feed(vertical_line(margin=3), [obj], 5)] == [4]  # 30 and 34 are within 3 px


def test_predicted_boxes_count_as_the_trackers_estimate() -> None:
    path = {n: (n * 4.0, 20.0) for n in range(12)}
    obj = Obj(1, "car", path, predicted=frozenset(n for n in range(12) if n % 3))
    events = feed(vertical_line(), [obj], 12)
    assert [(e["n"], e["predicted"]) for e in events] == [(8, True)]  # anchor 36 on a predicted frame


def test_classes_count_by_the_objects_label_by_vote() -> None:
    # an SSD flickers: car, car, truck, car... the object is a car; only trucks are counted
    labels = ["car", "car", "truck", "car", "car", "truck", "car", "car"]
    objs = [Obj(1, lb, {n: (n * 8.0, 20.0)}) for n, lb in enumerate(labels)]
    dets = [det_at(objs, n) for n in range(8)]
    trucks = vertical_line(classes=("truck",))
    cars = vertical_line(classes=("car",))
    for n, det in enumerate(dets):
        trucks.update(det, SIZE, n / 25, n)
        cars.update(det, SIZE, n / 25, n)
    assert not trucks.crossed_out and dict(cars.crossed_out) == {"car": 1}


def test_a_gone_track_is_forgotten_by_the_trackers_word_or_a_timeout() -> None:
    obj = horizontal(1, "car", 0, 3, 0, 1)
    line = vertical_line()
    feed(line, [obj], 5, alive=[frozenset({1})] * 3 + [frozenset()] * 2)
    assert not line.book.tracks  # the tracker dropped it on frame 3
    timed = vertical_line(lost=0.1)
    feed(timed, [obj], 3)
    assert 1 in timed.book.tracks
    timed.update(det_at([], 0), SIZE, 3 / 25 + 0.2, 10)
    assert not timed.book.tracks


def test_boxes_of_another_frame_size_are_scaled_to_the_lines_frame() -> None:
    """Boxes refer to the frame the detector saw (here half the size): the line is in this frame's pixels."""
    obj = Obj(1, "car", {n: (n * 1.5, 10.0) for n in range(20)})
    line = vertical_line()
    events = []
    for n in range(20):
        det = det_at([obj], n, frame_size=(32, 32))
        events += line.update(det, SIZE, n / 25, n)
    assert len(events) == 1 and events[0]["box"][0] == pytest.approx(13.5)  # (13.5 + 4) * 2 = 35 > 32


# -- zones -------------------------------------------------------------------------------------


def right_half(**kw: Any) -> ZoneCounter:
    return ZoneCounter("right", Points.parse("32_0|iw_0|iw_ih|32_ih", at_least=3), **kw)


def test_enter_exit_dwell_and_visits() -> None:
    # anchor x = 4 + 3n: inside (>= 32) from n = 10; then back, x = 61 - 3k, out again (31) at n = 29
    xs = [4 + 3 * n for n in range(20)] + [61 - 3 * k for k in range(1, 12)]
    obj = Obj(7, "person", {n: (x - 4, 20) for n, x in enumerate(xs)})
    zone = right_half()
    events = feed(zone, [obj], len(xs))
    assert [(e["type"], e["n"]) for e in events] == [("enter", 10), ("exit", 29)]
    enter, leave = events
    assert enter["since"] == pytest.approx(10 / 25) and leave["dwell"] == pytest.approx(19 / 25)
    assert zone.dwell_by_object == {7: pytest.approx(19 / 25)}
    assert dict(zone.entered) == {"person": 1} and dict(zone.exited) == {"person": 1}


def test_inertia_needs_consecutive_frames_and_dates_the_visit_from_the_first() -> None:
    xs = [20, 40, 20, 40, 40, 40, 40, 20, 40, 20, 20, 20]
    obj = Obj(1, "car", {n: (x - 4, 20) for n, x in enumerate(xs)})
    events = feed(right_half(inertia=3), [obj], len(xs))
    assert [(e["type"], e["n"]) for e in events] == [("enter", 5), ("exit", 11)]
    assert events[0]["since"] == pytest.approx(3 / 25) and events[1]["dwell"] == pytest.approx((9 - 3) / 25)


def test_re_entry_is_a_second_visit_of_the_same_object() -> None:
    xs = [20, 40, 20, 40, 20]
    zone = right_half()
    feed(zone, [Obj(1, "car", {n: (x - 4, 20) for n, x in enumerate(xs)})], len(xs))
    assert zone.entered["car"] == 2 and zone.exited["car"] == 2 and zone.as_dict()["objects"] == {"car": 1}


def test_zone_ignores_unconfirmed_ids_and_counts_the_edge_as_inside() -> None:
    objs = [horizontal(-1, "car", 0, 20, 0, 3), Obj(2, "car", dict.fromkeys(range(5), (28.0, 30.0)))]  # anchor x 32
    zone = right_half()
    events = feed(zone, objs, 20)
    assert [(e["type"], e["track_id"]) for e in events] == [("enter", 2)]
    assert zone.inside() == {2: "car"}


def test_loiter_once_per_visit() -> None:
    obj = Obj(1, "car", dict.fromkeys(range(60), (40.0, 20.0)))
    events = feed(right_half(loiter=1.0), [obj], 60)
    assert [(e["type"], e["n"]) for e in events] == [("enter", 0), ("loiter", 25)]
    assert events[1]["dwell"] == pytest.approx(1.0)


def test_an_object_lost_inside_exits_with_reason_lost() -> None:
    obj = Obj(1, "car", dict.fromkeys(range(5), (40.0, 20.0)))
    alive = [frozenset({1})] * 8 + [frozenset()]
    zone = right_half()
    events = feed(zone, [obj], 8, alive=alive)  # unseen on 5..7 but still tracked
    assert [e["type"] for e in events] == ["enter"] and zone.inside() == {1: "car"}
    events = zone.update(det_at([], 8), SIZE, 8 / 25, 8, alive[8])  # dropped by the tracker on 8
    assert [(e["type"], e.get("reason")) for e in events] == [("exit", "lost")]
    assert events[0]["dwell"] == pytest.approx(4 / 25) and events[0]["box"] == [40.0, 20.0, 48.0, 30.0]
    assert zone.inside() == {} and zone.exited["car"] == 1


def test_summary_and_dict_per_class() -> None:
    objs = [horizontal(1, "car", 0, 20, 0, 3), horizontal(2, "person", 0, 20, 0, 3, y=40)]
    zone = right_half()
    feed(zone, objs, 20)
    lines = zone.summary_lines()
    assert lines[0] == "zone right: inside 2, entered 2 (2 objects), exited 0"
    assert lines[1].startswith("  car: inside 1, entered 1, exited 0, dwell mean 0.4 s")
    d = zone.as_dict()
    assert d["points"] == "32_0|64_0|64_64|32_64" and d["inside"] == [1, 2]
    assert d["dwell"]["car"]["visits"] == 1 and np.isclose(d["dwell"]["car"]["mean"], 9 / 25)


def test_a_long_run_of_distinct_objects_keeps_the_zone_state_bounded_and_the_counts_right() -> None:
    """600 objects, two at a time, each inside for 4 frames then dropped by the tracker: the counts are
    every object's, the state per object id is the ``kept`` most recent, the older ones forgotten, counted."""
    kept, n_objects = 50, 600
    zone = right_half(kept=kept)
    events: list[dict[str, Any]] = []
    for n in range(n_objects // 2 * 5):
        pair, step = divmod(n, 5)
        objs = (
            []
            if step == 4
            else [  # frame 4 of 5: both gone, the tracker drops them
                Obj(2 * pair + k, ("car", "person")[k], {n: (40.0, 10.0 + 30 * k)}) for k in range(2)
            ]
        )
        alive = frozenset(o.track_id for o in objs)
        events += zone.update(det_at(objs, n), SIZE, n / 25, n, alive)
    assert len(zone._visits) == 0 and len(zone.book.tracks) == 0  # every object left
    assert len(zone._kept) == kept and sorted(zone.dwell_by_object) == list(range(n_objects - kept, n_objects))
    assert zone.forgotten == n_objects - kept
    assert [e["type"] for e in events] == ["enter", "enter", "exit", "exit"] * (n_objects // 2)
    d = zone.as_dict()
    assert d["entered"] == d["exited"] == d["objects"] == {"car": 300, "person": 300}
    assert d["dwell"]["car"] == {"visits": 300, "mean": pytest.approx(3 / 25), "max": pytest.approx(3 / 25)}
    assert d["forgotten"] == n_objects - kept and len(d["dwell_by_object"]) == kept
    assert zone.summary_lines()[0] == "zone right: inside 0, entered 600 (600 objects), exited 600"
    # an object forgotten by the bound that comes back is a new object; one still kept is not
    for tid, label, n in ((0, "car", 2000), (n_objects - 1, "person", 2002)):
        zone.update(det_at([Obj(tid, label, {n: (40.0, 10.0)})], n), SIZE, n / 25, n, frozenset({tid}))
    assert zone.as_dict()["objects"] == {"car": 301, "person": 300}
