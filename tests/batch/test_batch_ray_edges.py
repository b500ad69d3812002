"""avdnn batch on a real local Ray at its edges: hostile and sibling names, the files filters write,
existing outputs, a bug in one file, a slow restart after a kill, closing the workers, Ctrl-C.

The session's Ray (conftest ``ray_local``) has 2 CPUs. Worker classes made here (a subclass of
ChainWorker defined inside a test) travel to Ray by value, so a test can change what a worker
does without any switch in avdnn itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from batch_util import CORPUS, attempt_files, clips, make_corpus, partials
from onnx import TensorProto, helper, numpy_helper
from spine_util import run_cli

import avdnn
from avdnn.batch import driver
from avdnn.batch.plan import FileTask
from avdnn.batch.worker import ChainWorker
from avdnn.errors import AVERROR_BUG

pytestmark = pytest.mark.usefixtures("ray_local")

#: The issue's names: three siblings whose names extend each other, and names that are filtergraph syntax.
NAMES = ("clip", "clip.v2", "clip.v2.v3", "a,vflip:b", "a,hflip", "it's [x];y=z")


def test_sibling_and_syntax_names_each_get_their_complete_output_and_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = clips()["carphone"]
    folder = tmp_path / "in"
    folder.mkdir()
    for name in NAMES:
        shutil.copy(src, folder / f"{name}.mp4")
    avdnn.run(
        src,
        f"scale=64:48,metadata_jsonl=file={tmp_path / 'ref.jsonl'}",
        output=str(tmp_path / "ref.fmd5"),
        format="framemd5",
    )
    ref, ref_jsonl = (tmp_path / "ref.fmd5").read_bytes(), (tmp_path / "ref.jsonl").read_text()
    assert len(ref_jsonl.splitlines()) == 120
    monkeypatch.chdir(tmp_path)  # relative names, as typed: they mean the driver's folder, not a worker's
    args = [
        "batch",
        "--workers",
        "2",
        "--report",
        "r.json",
        "-i",
        *[str(folder / f"{n}.mp4") for n in NAMES],
        "-vf",
        "scale=64:48,metadata_jsonl=file=out/{stem}.jsonl",
        "-f",
        "framemd5",
        "-o",
        "out/{stem}.framemd5",
    ]
    res = run_cli(args)
    assert res.rc == 0, res.err
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".avdnn-ledger", *(f"{n}.framemd5" for n in NAMES), *(f"{n}.jsonl" for n in NAMES)]
    )
    for name in NAMES:
        assert (out / f"{name}.framemd5").read_bytes() == ref, name
        assert (out / f"{name}.jsonl").read_text() == ref_jsonl, name
    assert partials(out) == []
    res = run_cli([*args[:5], "--resume", *args[5:]])
    assert res.rc == 0, res.err
    assert [f["status"] for f in json.loads((tmp_path / "r.json").read_text())["files"]] == ["skipped"] * len(NAMES)


def fixed_size_model(tmp: Path, width: int, height: int) -> str:
    """y = 1 - x for frames of exactly width x height (any other size is an error of the chain)."""
    one = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")
    shape: list[str | int | None] = [1, 3, height, width]
    graph = helper.make_graph(
        [helper.make_node("Sub", ["one", "x"], ["y"])],
        "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        initializer=[one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp / "fixed.onnx"
    onnx.save(model, str(path))
    return str(path)


def test_a_failed_file_leaves_neither_its_output_nor_its_jsonl(tmp_path: Path) -> None:
    model = fixed_size_model(tmp_path, 176, 144)  # carphone's size; bikes (640x272) fails at its first frame
    src = clips()
    jl, out = tmp_path / "jl", tmp_path / "out"
    chain = f"metadata_jsonl=file={jl}/{{stem}}.jsonl,format=rgb24,dnn_processing=dnn_backend=onnx:model={model}"
    rep = avdnn.batch(
        [src["carphone"], src["bikes"]],
        chain,
        output=str(out / "{stem}.framemd5"),
        workers=1,
        format="framemd5",
        progress_bar=False,
    )
    good, bad = rep.files
    assert good.status == "ok" and bad.status == "failed" and bad.error is not None
    assert "needs 176x144 frames" in bad.error["message"]
    assert len((jl / "carphone_pristine.jsonl").read_text().splitlines()) == 120
    assert sorted(p.name for p in jl.iterdir()) == ["carphone_pristine.jsonl"]  # no bikes.jsonl, not even empty
    assert not (out / "bikes.framemd5").exists()
    assert partials(jl) == [] and partials(out) == []


def test_existing_files_are_refused_unless_overwrite(tmp_path: Path) -> None:
    src = clips()["carphone_distorted"]
    inputs = [str(tmp_path / f"{s}.mp4") for s in ("a", "b")]
    for path in inputs:
        os.symlink(src, path)
    kwargs: dict[str, Any] = {"output": str(tmp_path / "o/{stem}.fmd5"), "workers": 1, "progress_bar": False}
    chain = f"metadata_jsonl=file={tmp_path}/j/{{stem}}.jsonl"
    assert avdnn.batch(inputs, chain, format="framemd5", **kwargs).ok
    written = sorted([*(tmp_path / "o").glob("*.fmd5"), *(tmp_path / "j").glob("*.jsonl")])
    before = {p: p.stat().st_mtime_ns for p in written}
    again = avdnn.batch(inputs, chain, format="framemd5", **kwargs)  # avdnn.run's default: refuse, as ffmpeg
    assert [f.status for f in again.files] == ["failed", "failed"]
    assert all(f.error and f.error["code"] == -17 and "Use -y to overwrite" in f.error["message"] for f in again.files)
    (tmp_path / "o" / "a.fmd5").unlink()  # a's JSONL is still there: a is refused all the same
    again = avdnn.batch(inputs, chain, format="framemd5", overwrite=False, **kwargs)
    assert [f.status for f in again.files] == ["failed", "failed"]
    assert again.files[0].error and "a.jsonl' already exists. Exiting." in again.files[0].error["message"]
    assert {p: p.stat().st_mtime_ns for p in written if p.exists()} == {p: t for p, t in before.items() if p.exists()}
    forced = avdnn.batch(inputs, chain, format="framemd5", overwrite=True, **kwargs)
    assert forced.ok and (tmp_path / "o" / "a.fmd5").exists()


def test_a_bug_in_one_file_fails_that_file_alone_with_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Buggy(ChainWorker):
        def _run(self, task: FileTask, *, replace_own: bool) -> Any:
            if os.path.basename(task.input) == "bug.mp4":
                raise ZeroDivisionError("boom")
            return super()._run(task, replace_own=replace_own)

    monkeypatch.setattr(driver, "ChainWorker", Buggy)
    src = clips()["carphone_distorted"]
    inputs = [str(tmp_path / f"{s}.mp4") for s in ("ok1", "bug", "ok2")]
    for path in inputs:
        os.symlink(src, path)
    report = tmp_path / "r.json"
    rep = avdnn.batch(
        inputs, "", output=str(tmp_path / "o/{stem}.fmd5"), workers=1, report=str(report), format="framemd5"
    )
    assert [f.status for f in rep.files] == ["ok", "failed", "ok"]
    err = rep.files[1].error
    assert err is not None and err["code"] == AVERROR_BUG and "ZeroDivisionError: boom" in err["message"]
    assert "Traceback" in err["traceback"] and "_run" in err["traceback"]
    assert json.loads(report.read_text())["files"][1]["error"] == err


def test_every_worker_is_closed_before_it_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marks = tmp_path / "closed"
    marks.mkdir()

    class Closing(ChainWorker):
        def close(self) -> None:
            super().close()
            (marks / str(os.getpid())).write_text("closed")

    monkeypatch.setattr(driver, "ChainWorker", Closing)
    src = clips()["carphone_distorted"]
    inputs = [str(tmp_path / f"v{i}.mp4") for i in range(4)]
    for path in inputs:
        os.symlink(src, path)
    rep = avdnn.batch(inputs, "", output=str(tmp_path / "o/{stem}.fmd5"), workers=2, format="framemd5")
    assert rep.ok
    assert {int(p.name) for p in marks.iterdir()} == {f.pid for f in rep.files}


def _kill_first_writer(out: Path, done: threading.Event, killed: list[tuple[str, int]]) -> None:
    while not done.is_set():
        for tmp, pid in attempt_files(out):
            os.kill(pid, signal.SIGKILL)
            killed.append((tmp.name.split(".")[0], pid))
            return
        time.sleep(0.005)


def test_a_worker_that_restarts_slowly_costs_its_file_one_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray fails a call made while it restarts an actor; the file must not be charged for it."""

    class SlowRestart(ChainWorker):
        def __init__(self, job: str, run_options: dict[str, Any]) -> None:
            import ray

            if ray.get_runtime_context().was_current_actor_reconstructed:
                time.sleep(3)  # a restart that loads big models, on a busy node
            super().__init__(job, run_options)

    monkeypatch.setattr(driver, "ChainWorker", SlowRestart)
    src = clips()["bikes"]
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        os.symlink(src, folder / f"b{i}.mp4")
    out = tmp_path / "out"
    done = threading.Event()
    killed: list[tuple[str, int]] = []
    killer = threading.Thread(target=_kill_first_writer, args=(out, done, killed))
    killer.start()
    try:
        rep = avdnn.batch(
            str(folder / "*.mp4"),
            "scale=960:408",
            output=str(out / "{stem}.framemd5"),
            workers=1,
            retries=2,
            format="framemd5",
            progress_bar=False,
        )
    finally:
        done.set()
        killer.join()
    assert len(killed) == 1
    stem, pid = killed[0]
    by_stem = {Path(f.input).stem: f for f in rep.files}
    assert [f.status for f in rep.files] == ["ok"] * 3, [f.error for f in rep.files]
    assert {s: f.attempts for s, f in by_stem.items()} == {f"b{i}": 2 if f"b{i}" == stem else 1 for i in range(3)}
    assert rep.totals["retries"] == 1 and by_stem[stem].pid != pid
    assert partials(out) == []


def _pgid_alive(pgid: int) -> list[int]:
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    alive.append(int(entry))
            except ProcessLookupError:
                pass
    return alive


def test_ctrl_c_writes_the_report_with_the_unfinished_files(tmp_path: Path, oracle: dict[str, bytes]) -> None:
    corpus = make_corpus(tmp_path, bad=False)
    out, report = tmp_path / "out", tmp_path / "r.json"
    argv = ["batch", "--workers", "1", "--report", str(report), "-i", str(corpus / "*.mp4"), "-f", "framemd5"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "avdnn", *argv, "-o", str(out / "{stem}.framemd5")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    ledger = out / ".avdnn-ledger"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if ledger.is_dir() and len(list(ledger.glob("*.json"))) >= 2:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGINT)  # Ctrl-C, to the driver
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 255, err.decode()[-3000:]
    assert b"interrupted" in err
    files = {Path(f["input"]).stem: f for f in json.loads(report.read_text())["files"]}
    assert sorted(files) == sorted(CORPUS)
    done = {s for s, f in files.items() if f["status"] == "ok"}
    unfinished = {s for s, f in files.items() if f["status"] == "unfinished"}
    assert done | unfinished == set(CORPUS) and done and unfinished, files
    assert all("interrupted" in files[s]["error"]["message"] for s in unfinished)
    for stem in done:
        assert (out / f"{stem}.framemd5").read_bytes() == oracle[CORPUS[stem]]
    for _ in range(100):  # its Ray went down with it
        if not _pgid_alive(proc.pid):
            break
        time.sleep(0.05)
    assert not _pgid_alive(proc.pid)
    res = run_cli([*argv, "--resume", "-o", str(out / "{stem}.framemd5")])
    assert res.rc == 0, res.err
    statuses = {Path(f["input"]).stem: f["status"] for f in json.loads(report.read_text())["files"]}
    assert {s for s in done if statuses[s] == "skipped"} == done
    # an unfinished file whose output was complete before the Ctrl-C is skipped; the others run now
    assert {s for s in unfinished if statuses[s] == "ok"}
    for stem, clip in CORPUS.items():
        assert (out / f"{stem}.framemd5").read_bytes() == oracle[clip]
    assert partials(out) == []
