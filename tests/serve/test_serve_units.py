"""The service's parts on their own: template fields filled as escaped values, the API's OutputSet,
the accounting over runs, file outputs beside the earlier ones, the state's files, the histograms."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest
from serve_util import wait_for

import avdnn
from avdnn import api
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.graph.parse import parse_chain, split_options
from avdnn.run.latency import Latency
from avdnn.serve.accounting import LATENCY_EDGES, RunView, Totals
from avdnn.serve.config import ServeConfig, load_config
from avdnn.serve.pipeline import _segment
from avdnn.serve.state import StateDir


@pytest.mark.parametrize("value", ["cam1", "a:b", "x,hflip", "[out];[in]", "it's", "back\\slash", "k=v", " pad "])
def test_a_field_is_filled_as_one_escaped_value(value: str) -> None:
    chain = api.fill_fields(
        "hflip,drawtext=text={source}:x=2,dnn_detect=model=zoo:blazeface:model_instance=m", {"source": value}
    ).chain
    specs = parse_chain(chain)
    assert [s.name for s in specs] == ["hflip", "drawtext", "dnn_detect"]  # nothing added, nothing split
    assert split_options(specs[1].args or "") == [("text", value), ("x", "2")]


def test_plain_arguments_take_the_field_as_it_is() -> None:
    assert api.fill_text("out/{source}/{source}.mkv", {"source": "c1"}) == "out/c1/c1.mkv"
    assert api.fill_text("rtmp://host/live/{source}?x={other}", {"source": "c1"}) == "rtmp://host/live/c1?x={other}"


def test_chains_are_checked_before_anything_opens() -> None:
    api.check_chain("scale=64:64,hflip,dnn_detect=model=nosuchfile.onnx:model_instance=x")  # no model is loaded
    with pytest.raises(avdnn.FilterNotFoundError, match="No such filter: 'hflipp'"):
        api.check_chain("hflipp")
    with pytest.raises(avdnn.OptionNotFoundError):
        api.check_chain("scale=wdth=2")


def test_outputs_start_and_stop_one_by_one_in_one_set(tmp_path: Path) -> None:
    def job(name: str) -> api.Job:
        return api.Job(
            "testsrc2=size=64x48:rate=25",
            "hflip",
            output=str(tmp_path / name),
            input_format="lavfi",
            source_options={"realtime": True},
            codec="mpeg4",
        )

    with api.OutputSet() as outputs:
        a = outputs.start(job("a.mkv"), label="a")
        b = outputs.start(job("b.mkv"), label="b")
        assert sorted(o.label for o in outputs.outputs()) == ["a", "b"]
        wait_for("5 frames written", lambda: (a.snapshot() or {}).get("frames_written", 0) >= 5)
        a.stop()
        assert a.wait(30) and not a.running
        assert a.result.interrupted and a.result.error is None and a.bug is None
        assert a.result.stats is not None and a.result.stats.check(), a.result.stats.violations()
        assert b.running and [o.label for o in outputs.outputs()] == ["b"]
        left = outputs.close(30)
    assert left == [] and b.result.interrupted and not b.running
    with avdnn.run(str(tmp_path / "a.mkv")) as frames:
        assert sum(1 for _ in frames) == a.result.stats.frames_written


def test_totals_add_runs_and_a_live_one() -> None:
    totals = Totals()
    totals.add(RunView(read=10, written=8, dropped={"q": 2}, reconnects=1, latency_count=8, latency_sum=0.4))
    totals.add(RunView(read=5, written=4, failed={"f: x": 1}, latency_count=4, latency_sum=0.1))
    now = totals.plus(RunView(read=3, written=3, latency_count=3))
    assert (totals.runs, totals.read, totals.written, totals.dropped, totals.failed) == (
        2,
        15,
        12,
        {"q": 2},
        {"f: x": 1},
    )
    assert (now.runs, now.read, now.written, now.latency_count) == (3, 18, 15, 15)
    assert totals.read == 15  # plus() leaves the totals as they were
    shown = now.as_dict()
    assert shown["frames"] == {"read": 18, "written": 15, "failed": 1, "dropped": 2, "unfinished": 0, "added": 0}
    assert shown["balanced"] and shown["reconnects"] == 1


def test_a_file_output_already_there_is_written_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "cam.mkv"
    job = api.Job("in.mp4", output=str(out))
    assert _segment(job, 0).output == str(out)  # new: as given
    out.write_bytes(b"x")
    assert _segment(job, 0).output == str(tmp_path / "cam.1.mkv")
    (tmp_path / "cam.1.mkv").write_bytes(b"x")
    assert _segment(job, 1).output == str(tmp_path / "cam.2.mkv")
    assert _segment(api.Job("in.mp4", output=str(out), overwrite=True), 0).output == str(out)  # -y
    for kept in ("-", "/dev/null", "rtmp://host/live/cam", "udp://127.0.0.1:5000"):
        assert _segment(api.Job("in.mp4", output=kept), 3).output == kept


def test_the_state_is_written_atomically_and_privately(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = StateDir(tmp_path / "st")
    state.save("b", 1, {"args": ["-i", "x", "y"]})
    state.save("a", 0, {"chain": ""})
    state.save("b", 1, {"args": ["-i", "x", "z"]})
    assert [(e.id, e.order, e.spec) for e in state.load()] == [
        ("a", 0, {"chain": ""}),
        ("b", 1, {"args": ["-i", "x", "z"]}),
    ]
    assert sorted(p.name for p in state.dir.iterdir()) == ["a.json", "b.json"]  # no temporary left
    assert stat.S_IMODE(state.dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((state.dir / "a.json").stat().st_mode) == 0o600
    kept = (state.dir / "b.json").read_bytes()
    for step in ("fsync", "replace"):  # a full disk at the sync, then at the rename: the old spec survives
        real = getattr(os, step)

        def full(*args: object, real: object = real, step: str = step) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, step, full)
        with pytest.raises(AvdnnError, match="No space left on device") as caught:
            state.save("b", 1, {"args": ["-i", "x", "NEW"]})
        monkeypatch.setattr(os, step, real)
        assert caught.value.code == -errno.ENOSPC
        assert (state.dir / "b.json").read_bytes() == kept
        assert sorted(p.name for p in state.dir.iterdir()) == ["a.json", "b.json"]
    state.remove("a")
    state.remove("a")
    assert [e.id for e in state.load()] == ["b"]


def test_bad_state_files_are_entries_with_a_cause_never_an_error(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "st")
    state.save("good", 0, {"chain": ""})
    (state.dir / "junk.json").write_text("{not json")
    (state.dir / "up.json").write_text(json.dumps({"id": "../../x", "order": 1, "spec": {}}))
    (state.dir / "other.json").write_text(json.dumps({"id": "good", "order": 2, "spec": {}}))
    (state.dir / "nospec.json").write_text(json.dumps({"id": "nospec", "order": 3}))
    entries = state.load()
    assert [(e.id, e.path.name) for e in entries] == [
        ("good", "good.json"),
        (None, "junk.json"),
        (None, "nospec.json"),
        (None, "other.json"),
        (None, "up.json"),
    ]
    causes = [e.cause or "" for e in entries[1:]]
    assert causes[2].endswith("its id is not its file's name") and "not a pipeline id" in causes[3]
    assert all(c.startswith("its state file is not a pipeline spec: ") for c in causes)


def test_the_config_file_and_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"port": 9000, "max_sources": 4, "pipelines": [{"args": ["-i", "a", "b"]}]}))
    config = load_config(path, port=9100, host=None)
    assert (config.port, config.max_sources, config.host) == (9100, 4, "127.0.0.1")  # a flag wins over the file
    assert config.pipelines == [{"args": ["-i", "a", "b"]}]
    path.write_text(json.dumps({"prot": 1}))
    with pytest.raises(InvalidArgumentError, match="unknown setting"):
        load_config(path)
    with pytest.raises(InvalidArgumentError, match="Invalid retry_interval"):
        ServeConfig(retry_interval=0)


def test_latency_and_inference_times_as_histograms() -> None:
    lat = Latency()
    for s in (0.002, 0.002, 0.03, 0.4, 7.0):
        lat.add(s)
    assert lat.buckets(LATENCY_EDGES) == [2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5]
    assert lat.total == pytest.approx(7.434)
    times = api.RunTimes()
    for s in (0.0005, 0.02, 20.0):
        times.add(s)
    cumulative = times.cumulative()
    assert len(cumulative) == len(api.RUN_TIME_EDGES) + 1 and cumulative[0] == 1 and cumulative[-1] == 3
    assert cumulative[-2] == 2 and times.total == pytest.approx(20.0205)


def test_a_windows_latency_percentile_is_of_the_samples_since_its_snapshot() -> None:
    """The history's p95 is of the frames written since the sample before, not of the whole run."""
    latency = Latency()
    for _ in range(100):
        latency.add(0.010)
    assert latency.percentile_since(None, 95) == pytest.approx(0.010, rel=0.02)
    mark = latency.snapshot()
    assert latency.percentile_since(mark, 95) is None  # nothing written since
    for _ in range(10):
        latency.add(0.500)
    assert latency.percentile_since(mark, 95) == pytest.approx(0.500, rel=0.02)
    assert latency.percentile(95) == pytest.approx(0.500, rel=0.02)  # 10 of 110: the run's p95 too
    mark = latency.snapshot()
    for _ in range(50):
        latency.add(0.020)
    assert latency.percentile_since(mark, 95) == pytest.approx(0.020, rel=0.02)
    assert latency.percentile(95) == pytest.approx(0.500, rel=0.02)  # the run's still sees the slow ones
