"""A served source's files across its runs and across restarts of the service: ``NAME.N.EXT``, one N for
all of a run's files (the video and the files its filters write), nothing ever written over."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from serve_util import source, wait_for

from avdnn import api
from avdnn.cli.serve import jobs_from_argv
from avdnn.serve.config import ServeConfig
from avdnn.serve.segments import segment
from avdnn.serve.service import Service
from avdnn.serve.specs import TemplatePipeline

TESTSRC = "testsrc=s=64x64:r=25:d=0.4"  # 10 frames, then the source has ended


def test_the_sink_files_move_with_the_output_under_one_n(tmp_path: Path) -> None:
    out, m, ev = tmp_path / "cam.mkv", tmp_path / "cam.jsonl", tmp_path / "ev-cam.jsonl"
    chain = f"metadata_jsonl=file={m},events=file={ev}:frames=1"
    job = api.Job("in.mp4", chain, output=str(out))
    assert segment(job, 0) is job  # nothing there yet: as given
    m.write_text("run 0\n")  # only a sink file is there: every file of the run moves
    moved = segment(job, 1)
    assert moved.output == str(tmp_path / "cam.1.mkv")
    assert moved.filters == f"metadata_jsonl=file={tmp_path}/cam.1.jsonl,events=file={tmp_path}/ev-cam.1.jsonl:frames=1"
    (tmp_path / "ev-cam.2.jsonl").write_text("someone's\n")  # N = 2 is taken for one of them: 3 for all
    for name in ("cam.1.mkv", "cam.1.jsonl"):
        (tmp_path / name).write_text("run 1\n")
    assert segment(job, 2).output == str(tmp_path / "cam.3.mkv") and "cam.3.jsonl" in segment(job, 2).filters
    assert "ev-cam.3.jsonl" in segment(job, 2).filters
    # a -filter_complex graph's and another video stream's chain move too; /dev/null and '-' stay
    graph = f"[0:v]metadata_jsonl=file={m}[v]"
    job = api.Job("in.mp4", output="/dev/null", filter_complex=graph, map=["[v]"], format="null")
    assert segment(job, 1).options["filter_complex"] == f"[0:v]metadata_jsonl=file={tmp_path}/cam.2.jsonl[v]"
    out.write_text("run 0\n")
    argv = ["-i", "in.mp4", "-map", "0:v", "-map", "0:v", "-filter:v:1", f"events=file={ev}", str(out)]
    (job,) = jobs_from_argv(argv)
    moved = segment(job, 1)
    assert moved.output == str(tmp_path / "cam.3.mkv")  # above cam.1.mkv and ev-cam.2.jsonl
    assert moved.options["stream_options"].per_stream[("filter", "v:1")] == f"events=file={tmp_path}/ev-cam.3.jsonl"
    kept = api.Job("in.mp4", "metadata_jsonl=file=-,events=file=/dev/null", output=str(out))
    assert segment(kept, 1).filters == kept.filters


def _run_once(state: Path, out: Path, spec: TemplatePipeline | None) -> dict[str, Any]:
    """A service on ``state`` (the pipeline made, or restored from the state); its source's row once its run ended."""
    service = Service(ServeConfig(state=state, retry_interval=60.0, media_root=out), jobs_from_argv)
    service.start()
    try:
        if spec is not None:
            service.create(spec, pid="cams")
        pipeline = service.get("cams")
        row: dict[str, Any] = wait_for(
            "the run ended", lambda: (r := source(pipeline.status(), "cam")) and r["state"] == "ended" and r
        )
        return row
    finally:
        service.close()


def test_a_restored_pipeline_goes_on_numbering_and_keeps_every_earlier_file(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    out.mkdir()
    spec = TemplatePipeline(
        name="cams",
        chain=f"metadata_jsonl=file={out}/{{source}}.jsonl,events=file={out}/ev-{{source}}.jsonl:frames=1",
        output=["-c:v", "ffv1", f"{out}/{{source}}.mkv"],
        input_options=["-f", "lavfi"],
        sources=[{"id": "cam", "url": TESTSRC}],
    )
    first = _run_once(state, out, spec)
    assert first["outputs"] == [str(out / "cam.mkv")]
    files = {"cam.mkv", "cam.jsonl", "ev-cam.jsonl"}
    assert {p.name for p in out.iterdir()} == files
    before = {name: (out / name).read_bytes() for name in files}
    second = _run_once(state, out, None)  # the service restarted: the pipeline comes back from --state
    assert second["outputs"] == [str(out / "cam.1.mkv")]
    (out / "ev-cam.2.jsonl").write_text("not the service's\n")
    third = _run_once(state, out, None)
    assert third["outputs"] == [str(out / "cam.3.mkv")]
    assert {p.name for p in out.iterdir()} == files | {
        "cam.1.mkv",
        "cam.1.jsonl",
        "ev-cam.1.jsonl",
        "ev-cam.2.jsonl",
        "cam.3.mkv",
        "cam.3.jsonl",
        "ev-cam.3.jsonl",
    }
    assert {name: (out / name).read_bytes() for name in files} == before  # never written over
    for n in ("", ".1", ".3"):
        frames = [json.loads(line) for line in (out / f"cam{n}.jsonl").read_text().splitlines()]
        assert [r["n"] for r in frames if r["type"] == "frame"] == list(range(10))
        assert len((out / f"ev-cam{n}.jsonl").read_text().splitlines()) == 10
