"""zone, line, events and drawzones in chains: options, side data, JSONL, showinfo, the summary and as_dict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ev_util import horizontal, jsonl, jsonl_events, script_filter
from spine_util import need_installed

import avdnn
from avdnn.errors import InvalidArgumentError
from avdnn.events import SINKS, listen, validate_event
from avdnn.events.sinks import file as file_sink
from avdnn.events.sinks.base import Message, Sink
from avdnn.events.sinks.file import FileSink
from avdnn.filters.events import EventsFilter
from avdnn.filters.options import bind_options
from avdnn.graph.parse import split_options

SRC = "testsrc=s=64x64:r=25:d=1.6"  # 40 frames
ZONE = "zone=right:32_0|iw_0|iw_ih|32_ih"
LINE = "line=gate:32_ih|32_0"  # walking up the picture: in is right to left

OBJECTS = [
    horizontal(1, "car", 0, 20, 0, 3),  # left to right: out on frame 10, enters the zone on 10
    horizontal(2, "person", 5, 20, 56, -3, y=40),  # right to left: in, inside the zone from its first frame
    horizontal(-1, "car", 0, 30, 0, 2, y=5),  # never confirmed: never counts
]


@pytest.fixture
def scripted(register: Callable[[type], type]) -> str:
    register(script_filter(OBJECTS))
    return "script"


def run(chain: str, tmp_path: Path, **kw: Any) -> avdnn.RunStats:
    return avdnn.run(SRC, chain, input_format="lavfi", output=str(tmp_path / "o.mkv"), codec="ffv1", **kw)


def test_counts_reach_the_summary_as_dict_and_jsonl(scripted: str, tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    stats = run(f"{scripted},{ZONE},{LINE},events=stream=cam1:stationary=0,metadata_jsonl=file={out}", tmp_path)
    assert stats.check(), stats.violations()
    summary = stats.summary().splitlines()
    assert summary[-6:] == [
        "zone right: inside 1, entered 2 (2 objects), exited 1",  # the car stays in; the person leaves on 15
        "  car: inside 1, entered 1, exited 0, dwell mean 0.4 s, max 0.4 s",
        "  person: inside 0, entered 1, exited 1, dwell mean 0.4 s, max 0.4 s",
        "line gate: in 1, out 1",
        "  car: in 0, out 1",
        "  person: in 1, out 0",
    ]
    assert "events of stream 'cam1': produced 11 (cross 2, end 2, enter 2, exit 1, new 2, update 2)" in summary
    d = stats.as_dict()
    assert d["lines"] == [
        {"name": "gate", "points": "32_64|32_0", "anchor": "bottom_center", "in": {"person": 1}, "out": {"car": 1}}
    ]
    assert d["zones"][0]["entered"] == {"car": 1, "person": 1} and d["events"][0]["produced"] == 11
    recs = jsonl(out)
    frames = [r for r in recs if r["type"] == "frame"]
    assert frames[12]["analytics"]["lines"]["gate"] == {"in": {}, "out": {"car": 1}}
    assert frames[12]["analytics"]["zones"]["right"]["inside"] == [1, 2]
    kinds = [r["type"] if r["type"] != "event" else r["event"]["type"] for r in recs]
    assert kinds[:4] == ["frame", "new", "frame", "frame"]  # car 1 is new on frame 0, right after its line
    assert kinds[-5:] == [
        "frame",
        "end",
        "end",
        "track",
        "track",
    ]  # at the end: after the last frame, before the tracks
    events = jsonl_events(out)
    assert [e["seq"] for e in events] == list(range(11))
    assert [(e["type"], e["track_id"], e["frame"]) for e in events][2:6] == [
        ("enter", 2, 5),  # new and enter on the person's first frame: new says its zones already
        ("enter", 1, 10),
        ("cross", 1, 10),
        ("update", 1, 10),  # its zones changed
    ]


def test_the_same_events_reach_jsonl_the_file_sink_and_a_listener(scripted: str, tmp_path: Path) -> None:
    m, f = tmp_path / "m.jsonl", tmp_path / "e.jsonl"
    with listen() as sub:
        stats = run(f"{scripted},{ZONE},{LINE},events=file={f}:snapshot=1,metadata_jsonl=file={m}", tmp_path)
    from_jsonl = jsonl_events(m)
    assert from_jsonl == jsonl(f) == sub.drain()
    assert len(from_jsonl) == 11
    for event in from_jsonl:
        validate_event(event)
    sinks = {s["kind"]: s for s in stats.as_dict()["sinks"]}
    assert sinks["file"]["published"] == sinks["listener"]["published"] == 11
    assert all(s["buffered"] == 0 and not s["dropped"] for s in sinks.values())


def test_options_by_position_instance_names_and_expressions(scripted: str, tmp_path: Path) -> None:
    chain = f"{scripted},zone@bay=points=iw/2_0|iw_0|iw_ih|iw/2_ih,line=gate:points=iw/2_ih|iw/2_0:anchor=center,events"
    stats = run(chain, tmp_path)
    d = stats.as_dict()
    assert d["zones"][0]["name"] == "bay" and d["zones"][0]["points"] == "32_0|64_0|64_64|32_64"
    assert d["lines"][0]["anchor"] == "center" and d["events"][0]["stream"] == "default"


@pytest.mark.parametrize(
    ("chain", "why"),
    [
        ("zone=name=z", "zone: option 'points': no points given"),
        ("zone=z:0_0|1_1", "expected at least 3 points"),
        ("line=l:0_0|1_1|2_2", "expected 2 points"),
        ("line=l:5_5|5_5", "its two points are the same"),
        ("zone=z:0_0|a_1|2_2", "'a' is not a coordinate"),
        ("zone=z:0_0|1_1|2_2:anchor=middle", 'Unable to parse option value "middle"'),
        ("events=mqtt=http://x", "is not an MQTT URL"),
        ("events=webhook=ftp://x/y", "is not an http:// or https:// URL"),
        ("events=mqtt=mqtt://h/a/{camera}", "a template of {stream}"),
        ("events=headers=Authorization", "headers: expected Name=value"),
    ],
)
def test_bad_options_name_the_filter_and_the_reason(scripted: str, tmp_path: Path, chain: str, why: str) -> None:
    if "mqtt=" in chain:
        pytest.importorskip("paho.mqtt")
    with pytest.raises(InvalidArgumentError) as err:
        list(avdnn.run(SRC, f"{scripted},{chain}", input_format="lavfi"))
    assert why in str(err.value)


def test_a_url_needs_no_escaping_in_the_events_options() -> None:
    args = (
        "stream=cam1:mqtt=mqtt://alice:s3cr%3Dt@broker.lan:1883/site/{stream}/{type}:qos=0:webhook=https://h:8443/x?a=1"
    )
    values = bind_options(EventsFilter.options, split_options(args, EventsFilter.joins), filter_name="events")
    assert values["mqtt"] == "mqtt://alice:s3cr%3Dt@broker.lan:1883/site/{stream}/{type}"
    assert values["webhook"] == "https://h:8443/x?a=1" and values["qos"] == 0 and values["stream"] == "cam1"
    with pytest.raises(InvalidArgumentError, match="No option name near 'b'"):
        split_options("file=a:b", EventsFilter.joins)  # only URL options join


def test_showinfo_prints_the_zones_lines_and_events(scripted: str, avdnn_cli: Callable[..., Any]) -> None:
    argv = ["-f", "lavfi", "-i", "testsrc=s=64x64:r=25:d=0.48", "-vf", f"{scripted},{ZONE},{LINE},events,showinfo"]
    res = avdnn_cli([*argv, "-f", "null", "-"])
    assert res.rc == 0, res.err
    assert res.err.count("side data - avdnn zones, lines and events:") == 12
    assert "zone: right, inside: 2 [1, 2], entered: 2, exited: 0." in res.err  # frames 10 and 11
    assert res.err.count("line: gate, in: 0, out: 1.") == 2
    assert res.err.count("event: cross, track: 1, label: car, line: gate, direction: out.") == 1
    assert res.err.count("event: enter, track: 1, label: car, zone: right.") == 1


def test_drawzones_draws_the_line_and_zone_and_nothing_else(scripted: str) -> None:
    pytest.importorskip("PIL")
    chain = f"{scripted},line=gate:32_ih|32_0,format=rgb24"
    plain = [f.to_ndarray().copy() for f in avdnn.run(SRC, chain, input_format="lavfi", frames=2)]
    drawn = [
        f.to_ndarray().copy()
        for f in avdnn.run(SRC, chain + ",drawzones=color=red:text=0:thickness=2", input_format="lavfi", frames=2)
    ]
    changed = np.argwhere((plain[1] != drawn[1]).any(axis=2))
    assert len(changed)
    assert set(changed[:, 1].tolist()) <= set(range(13, 35))  # the line (x 31..33) and its arrow to the left
    assert (drawn[1][5:60, 32] == [255, 0, 0]).all()  # red along the line (rgb24 in and out)
    with_text = next(iter(avdnn.run(SRC, chain + ",drawzones", input_format="lavfi", frames=1))).to_ndarray()
    assert (with_text != plain[0]).any(axis=2).sum() > len(changed) // 2  # the counts' label too


def test_a_tracked_constant_box_is_new_once_and_ends_at_eos(tmp_path: Path) -> None:
    need_installed("trackers", "pip install 'avdnn[track]'")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analytics"))
    from analytics_models import constant, ssd_output

    model = constant(tmp_path, "det", [ssd_output()])
    out = tmp_path / "m.jsonl"
    run(f"dnn_detect=model={model},track,events,metadata_jsonl=file={out}", tmp_path)
    events = jsonl_events(out)
    assert [(e["type"], e["frame"], e.get("reason", None)) for e in events] == [
        ("new", 1, None),  # bytetrack confirms on the 2nd sighting
        ("end", 39, "eos"),
    ]


class _LosingFileSink(FileSink):
    """A file sink with a bug: the fourth message it is given is neither written nor counted dropped."""

    def send(self, message: Message) -> None:
        if self.stats.produced == 3:
            with self.lock:
                self._given(message)
            return
        super().send(message)


class _UnflushedFileSink(FileSink):
    """A file sink with another bug: it closes without writing the lines it buffered."""

    def close(self) -> None:
        with self.lock:
            out, self._out = self._out, None
            if out is not None:
                out.close()
        Sink.close(self)


@pytest.mark.parametrize(
    ("sink", "violation", "shown"),
    [
        (_LosingFileSink, "was given 11 message(s) but accounts for 10", "published 10, dropped 0, buffered 0"),
        (_UnflushedFileSink, "still holds 11 message(s) after close", "published 0, dropped 0, buffered 11"),
    ],
)
def test_a_sink_that_loses_a_message_is_an_accounting_violation(
    scripted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sink: type, violation: str, shown: str
) -> None:
    """A real events stage, run and accounting, through a file sink that loses what it was given."""
    monkeypatch.setattr(file_sink, "FileSink", sink)  # what the sink table loads for file=
    f = tmp_path / "e.jsonl"
    stats = run(f"{scripted},{ZONE},{LINE},events=file={f}", tmp_path)
    assert stats.violations() == [f"events sink file '{f}' {violation}"]
    assert not stats.check()
    assert f"events to file '{f}': 11 events: {shown}" in stats.summary()
    assert len(f.read_text().splitlines()) == int(shown.split()[1].rstrip(","))  # what it says it wrote


def test_the_sink_table_and_help(avdnn_cli: Callable[..., Any]) -> None:
    assert list(SINKS) == ["file", "mqtt", "webhook", "listener"]
    assert all(spec.option == (kind in [o.name for o in EventsFilter.options]) for kind, spec in SINKS.items())
    res = avdnn_cli(["-h", "filter=events"])
    assert res.rc == 0 and b"mqtt" in res.out and b"flush_timeout" in res.out
    res = avdnn_cli(["-h", "filter=zone"])
    assert b"bottom_center" in res.out and b"inertia" in res.out


def test_events_json_is_what_the_schema_file_says(tmp_path: Path, scripted: str) -> None:
    f = tmp_path / "e.jsonl"
    run(f"{scripted},{ZONE},{LINE},events=file={f}:frames=1", tmp_path)
    recs = [json.loads(line) for line in f.read_text().splitlines()]
    frames = [r for r in recs if r["type"] == "frame"]
    events = [r for r in recs if r["type"] != "frame"]
    assert len(frames) == 40 and frames[0]["stream"] == "default" and "analytics" in frames[0]
    for event in events:
        validate_event(event)


def test_drawtext_names_the_zones_a_box_is_in(scripted: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("PIL")
    from avdnn.filters import _textdraw, overlay_bboxes

    drawn: list[list[str]] = []
    monkeypatch.setattr(overlay_bboxes, "has_lavfi", lambda name: False)  # the Pillow renderer, whatever the build
    monkeypatch.setattr(
        _textdraw.TextRenderer, "draw", lambda self, frame, texts: drawn.append([t for t, _, _ in texts]) or frame
    )
    chain = f"{scripted},{ZONE},drawtext=text_source=side_data_detection_bboxes"
    list(avdnn.run(SRC, chain, input_format="lavfi", frames=12))
    assert drawn[0] == ["#1 car", "car"]  # the -1 box has no id
    assert drawn[11] == ["#1 car [right]", "#2 person [right]", "car"]
