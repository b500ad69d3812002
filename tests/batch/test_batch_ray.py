"""avdnn batch on a real local Ray: outputs equal one-file runs, a bad file fails alone, resume, dead workers.

The session's Ray (conftest ``ray_local``) has 2 CPUs; each batch run here uses it as it is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from batch_util import CORPUS, attempt_files, clips, make_corpus, partials
from spine_util import run_cli
from test_batch_plan import invert_model

import avdnn
from avdnn.batch import BatchReport
from avdnn.errors import AVERROR_EXTERNAL, AVERROR_INVALIDDATA

pytestmark = pytest.mark.usefixtures("ray_local")


def cli_args(corpus: Path, out: Path, report: Path, *extra: str) -> list[str]:
    """The command of the issue: --workers 2 --report R -f framemd5 -o 'out/{stem}.framemd5'."""
    return [
        "batch",
        "--workers",
        "2",
        "--report",
        str(report),
        *extra,
        "-i",
        str(corpus / "*.mp4"),
        "-f",
        "framemd5",
        "-o",
        str(out / "{stem}.framemd5"),
    ]


def by_stem(report: Path) -> dict[str, dict[str, Any]]:
    return {Path(f["input"]).stem: f for f in json.loads(report.read_text())["files"]}


def test_corpus_equals_one_file_runs_bad_file_fails_alone_then_resume(
    corpus: Path, tmp_path: Path, oracle: dict[str, bytes]
) -> None:
    out, report = tmp_path / "out", tmp_path / "r.json"
    res = run_cli(cli_args(corpus, out, report))
    assert res.rc == AVERROR_INVALIDDATA & 0xFF, res.err  # non-zero: ffmpeg's status for the bad file
    files = by_stem(report)
    assert sorted(files) == sorted([*CORPUS, "bad"])
    bad = files["bad"]
    assert bad["status"] == "failed" and bad["error"]["code"] == AVERROR_INVALIDDATA and bad["attempts"] == 1
    assert "Invalid data found" in bad["error"]["message"]
    assert not (out / "bad.framemd5").exists()
    for stem, clip in CORPUS.items():
        assert files[stem]["status"] == "ok", files[stem]
        assert (out / f"{stem}.framemd5").read_bytes() == oracle[clip], stem
        assert files[stem]["frames_written"] == files[stem]["frames_read"] > 0
    assert len({f["pid"] for f in files.values()}) == 2  # two workers shared the corpus
    assert partials(out) == []
    assert "failed: " in res.err and "bad.mp4" in res.err

    # the same seven again with --resume: all skipped, nothing rewritten, exit 0
    (corpus / "bad.mp4").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.framemd5")}
    res = run_cli(cli_args(corpus, out, report, "--resume"))
    assert res.rc == 0, res.err
    assert {k: f["status"] for k, f in by_stem(report).items()} == dict.fromkeys(CORPUS, "skipped")
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.framemd5")} == before

    # exactly the inputs that changed are redone (the others stay skipped)
    os.utime(corpus / "c2.mp4", ns=(1, 1))
    res = run_cli(cli_args(corpus, out, report, "--resume", "-y"))
    assert res.rc == 0, res.err
    statuses = {k: f["status"] for k, f in by_stem(report).items()}
    assert statuses == {**dict.fromkeys(CORPUS, "skipped"), "c2": "ok"}
    assert (out / "c2.framemd5").read_bytes() == oracle["carphone_distorted"]

    # without --resume and without -y, existing outputs are ffmpeg's error, left alone
    res = run_cli(cli_args(corpus, out, report))
    assert res.rc == 239 and "already exists" in res.err
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.framemd5") if p.name != "c2.framemd5"} == {
        k: v for k, v in before.items() if k != "c2.framemd5"
    }


def test_models_are_loaded_once_per_worker(tmp_path: Path) -> None:
    model = invert_model(tmp_path)
    chain = f"format=rgb24,dnn_processing=dnn_backend=onnx:model={model}:input=x:output=y"
    src = clips()["carphone_distorted"]
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(6):
        os.symlink(src, folder / f"v{i}.mp4")
    # -frames:v stops each run early while inferences are in flight: the kept models survive it
    avdnn.run(src, chain, output=str(tmp_path / "ref.framemd5"), format="framemd5", frames=40)
    rep = avdnn.batch(
        str(folder / "*.mp4"),
        chain,
        output=str(tmp_path / "out/{stem}.framemd5"),
        workers=2,
        format="framemd5",
        frames=40,
        progress_bar=False,
    )
    assert rep.ok and len(rep.files) == 6 and {f.frames_written for f in rep.files} == {40}
    pids = {f.pid for f in rep.files}
    # each worker process loaded the model for its first file only
    assert sum(f.models_loaded for f in rep.files) == len(pids) < len(rep.files)
    for pid in pids:
        mine = [f for f in rep.files if f.pid == pid]
        assert [f.models_loaded for f in mine].count(1) == 1
    ref = (tmp_path / "ref.framemd5").read_bytes()
    assert all(Path(f.output).read_bytes() == ref for f in rep.files)


def _kill_first_writer(out: Path, done: threading.Event, killed: list[tuple[str, int]]) -> None:
    """SIGKILL the worker process named in the first temporary output that appears (it is mid-file)."""
    while not done.is_set():
        for tmp, pid in attempt_files(out):
            os.kill(pid, signal.SIGKILL)
            killed.append((tmp.name.split(".")[0], pid))
            return
        time.sleep(0.005)


def test_a_worker_killed_mid_file_is_retried_and_outputs_equal(tmp_path: Path) -> None:
    src = clips()["bikes"]
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        os.symlink(src, folder / f"b{i}.mp4")
    chain = "scale=960:408"  # ~1 s a file here: long enough to be killed in the middle
    avdnn.run(src, chain, output=str(tmp_path / "ref.framemd5"), format="framemd5")
    out, report = tmp_path / "out", tmp_path / "r.json"
    done = threading.Event()
    killed: list[tuple[str, int]] = []
    killer = threading.Thread(target=_kill_first_writer, args=(out, done, killed))
    killer.start()
    try:
        res = run_cli(
            [
                "batch",
                "--workers",
                "2",
                "--retries",
                "2",
                "--report",
                str(report),
                "-i",
                str(folder / "*.mp4"),
                "-vf",
                chain,
                "-f",
                "framemd5",
                "-o",
                str(out / "{stem}.framemd5"),
            ]
        )
    finally:
        done.set()
        killer.join()
    assert killed, "no worker was killed"
    stem, pid = killed[0]
    assert res.rc == 0, res.err
    files = by_stem(report)
    assert [f["status"] for f in files.values()] == ["ok"] * 3
    assert files[stem]["attempts"] == 2 and files[stem]["pid"] != pid
    assert json.loads(report.read_text())["totals"]["retries"] >= 1
    ref = (tmp_path / "ref.framemd5").read_bytes()
    assert all((out / f"b{i}.framemd5").read_bytes() == ref for i in range(3))
    assert partials(out) == []  # the killed attempt's temporary file was cleaned by the retry


def test_a_file_whose_worker_keeps_dying_fails_after_its_retries(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    os.symlink(clips()["bikes"], folder / "b.mp4")
    out = tmp_path / "out"
    done = threading.Event()
    killed: list[tuple[str, int]] = []
    killer = threading.Thread(target=_kill_first_writer, args=(out, done, killed))
    killer.start()
    try:
        rep = avdnn.batch(
            str(folder / "b.mp4"),
            "scale=960:408",
            output=str(out / "{stem}.framemd5"),
            workers=1,
            retries=0,
            format="framemd5",
            progress_bar=False,
        )
    finally:
        done.set()
        killer.join()
    assert killed
    [f] = rep.files
    assert f.status == "failed" and f.attempts == 1 and f.error is not None
    assert f.error["code"] == AVERROR_EXTERNAL and "worker process died 1 time(s)" in f.error["message"]
    assert not (out / "b.framemd5").exists() and partials(out) == []


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


def test_a_killed_run_is_resumed(tmp_path: Path, oracle: dict[str, bytes]) -> None:
    corpus = make_corpus(tmp_path, bad=False)
    out, report = tmp_path / "out", tmp_path / "r.json"
    # its own local Ray in a process group of its own, so the whole run can be killed at once
    proc = subprocess.Popen(
        [sys.executable, "-m", "avdnn", *cli_args(corpus, out, report, "--workers", "1")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # never read (a pipe left open is a ResourceWarning, an error here)
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        # the finished outputs, not the ledger: a task's entry is written before its output is moved
        # into place, and a kill between the two would leave one finished output for two entries
        if len(list(out.glob("*.framemd5"))) >= 2:
            break
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for _ in range(100):
        if not _pgid_alive(proc.pid):
            break
        time.sleep(0.05)
    assert not _pgid_alive(proc.pid)
    finished = {p.name for p in out.glob("*.framemd5")}
    assert 2 <= len(finished) < len(CORPUS), "the run was not killed in the middle"
    for name in finished:  # whatever has its final name is complete
        assert (out / name).read_bytes() == oracle[CORPUS[name.split(".")[0]]]

    res = run_cli(cli_args(corpus, out, report, "--resume"))
    assert res.rc == 0, res.err
    statuses = {k: f["status"] for k, f in by_stem(report).items()}
    assert {k for k, v in statuses.items() if v == "skipped"} == {n.split(".")[0] for n in finished}
    assert {k for k, v in statuses.items() if v == "ok"} == set(CORPUS) - {n.split(".")[0] for n in finished}
    for stem, clip in CORPUS.items():
        assert (out / f"{stem}.framemd5").read_bytes() == oracle[clip]
    assert partials(out) == []


def test_a_chain_error_stops_the_run_with_its_code(corpus: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    res = run_cli(
        [
            "batch",
            "--report",
            str(report),
            "-i",
            str(corpus / "c1.mp4"),
            str(corpus / "c2.mp4"),
            "-vf",
            "scale=8:8,nosuchfilter",
            "-f",
            "framemd5",
            "-o",
            str(tmp_path / "o/{stem}.md5"),
        ]
    )
    assert res.rc == 8 and "nosuchfilter" in res.err and "Traceback" not in res.err
    rep = json.loads(report.read_text())
    assert [f["status"] for f in rep["files"]] == ["failed", "failed"]


def test_api_returns_the_report(
    corpus: Path, tmp_path: Path, oracle: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    rep = avdnn.batch(
        [str(corpus / "c2.mp4"), str(corpus / "c5.mp4")],
        "",
        output=str(tmp_path / "{name}.fmd5"),
        workers=1,
        format="framemd5",
        progress_bar=True,
    )
    bar = capsys.readouterr().err
    assert "avdnn batch" in bar and "2/2" in bar and "ok=2 failed=0" in bar  # the corpus's one progress display
    assert isinstance(rep, BatchReport) and rep.ok and rep.workers == 1
    assert [Path(f.output).name for f in rep.files] == ["c2.mp4.fmd5", "c5.mp4.fmd5"]
    assert all(Path(f.output).read_bytes() == oracle["carphone_distorted"] for f in rep.files)
    assert rep.files[0].node and rep.files[0].host and rep.files[0].node_ip == "127.0.0.1"


def test_without_address_a_local_ray_on_loopback_is_started_and_stopped(
    corpus: Path, tmp_path: Path, oracle: dict[str, bytes]
) -> None:
    report = tmp_path / "r.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "avdnn",
            "batch",
            "--num-cpus",
            "0.5",
            "--report",
            str(report),
            "-i",
            str(corpus / "c2.mp4"),
            str(corpus / "c5.mp4"),
            "-f",
            "framemd5",
            "-o",
            str(tmp_path / "o/{stem}.framemd5"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    files = by_stem(report)
    assert {f["node_ip"] for f in files.values()} == {"127.0.0.1"}  # Ray binds loopback only for this address
    assert len({f["pid"] for f in files.values()}) == 2  # two half-CPU workers
    assert all((tmp_path / f"o/{s}.framemd5").read_bytes() == oracle["carphone_distorted"] for s in ("c2", "c5"))
    for _ in range(100):  # the run's Ray is stopped with it: nothing of its process group is left
        if not _pgid_alive(proc.pid):
            break
        time.sleep(0.05)
    assert not _pgid_alive(proc.pid)


def test_jsonl_sinks_in_the_chain_and_null_outputs(corpus: Path, tmp_path: Path) -> None:
    jl = tmp_path / "jl"
    jl.mkdir()
    src = clips()["carphone_distorted"]
    avdnn.run(src, f"metadata_jsonl=file={tmp_path / 'ref.jsonl'}", output=str(tmp_path / "ref.nut"), format="null")
    inputs = [str(corpus / "c2.mp4"), str(corpus / "c5.mp4")]
    kwargs: dict[str, Any] = {
        "output": str(tmp_path / "null/{stem}.nut"),
        "workers": 2,
        "format": "null",
        "progress_bar": False,
    }
    rep = avdnn.batch(inputs, f"metadata_jsonl=file={jl}/{{stem}}.jsonl", **kwargs)
    assert rep.ok and [f.frames_written for f in rep.files] == [120, 120]
    ref = (tmp_path / "ref.jsonl").read_text()
    assert len(ref.splitlines()) == 120
    assert (jl / "c2.jsonl").read_text() == ref and (jl / "c5.jsonl").read_text() == ref
    assert not list((tmp_path / "null").glob("*.nut"))  # the null muxer writes no file...
    again = avdnn.batch(inputs, f"metadata_jsonl=file={jl}/{{stem}}.jsonl", resume=True, **kwargs)
    assert [f.status for f in again.files] == ["skipped", "skipped"]  # ...and its ledger entries still count


def test_workers_are_capped_to_what_the_cluster_holds(
    corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    inputs = [str(corpus / f"c{i}.mp4") for i in (2, 5)]
    rep = avdnn.batch(
        inputs, "", output=str(tmp_path / "{stem}.fmd5"), workers=3, format="framemd5", progress_bar=False
    )  # 3 one-CPU workers on 2 CPUs: 2 run, none waits forever
    assert rep.ok and len({f.pid for f in rep.files}) <= 2
    assert "only 2 of the 3 workers fit" in caplog.text
    with pytest.raises(avdnn.InvalidArgumentError, match="each needs 1 GPU, the cluster has 0"):
        avdnn.batch(
            inputs, "", output=str(tmp_path / "g{stem}.fmd5"), num_gpus=1, format="framemd5", progress_bar=False
        )
