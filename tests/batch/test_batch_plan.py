"""The parts of a batch run that need no Ray: plan, template, ledger, report, flags, kept models."""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from spine_util import run_cli

import avdnn
from avdnn.batch import ledger
from avdnn.batch.plan import expand_inputs, fields, job_hash, plan
from avdnn.batch.report import BatchReport, FileReport
from avdnn.cli.batch import split_argv
from avdnn.errors import AVERROR_EXTERNAL, BackendUnavailableError, InvalidArgumentError, NotFoundError


def invert_model(tmp: Path) -> str:
    """y = 1 - x, NCHW float with dynamic dims."""
    one = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")
    shape: list[str | int | None] = ["N", 3, "H", "W"]
    graph = helper.make_graph(
        [helper.make_node("Sub", ["one", "x"], ["y"])],
        "invert",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        initializer=[one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp / "invert.onnx"
    onnx.save(model, str(path))
    return str(path)


# --------------------------------------------------------------------------- plan and template


def test_fields_and_template(tmp_path: Path) -> None:
    a = tmp_path / "cams" / "a.b.mp4"
    a.parent.mkdir()
    a.write_bytes(b"x")
    assert fields(str(a), 3) == {"stem": "a.b", "name": "a.b.mp4", "parent": "cams", "index": 3}
    tasks = plan([str(a)], str(tmp_path / "out/{parent}/{stem}-{index:03d}.mkv"), "scale=8:8,x=file={stem}.jsonl")
    assert tasks[0].output == str(tmp_path / "out/cams/a.b-000.mkv")
    assert tasks[0].chain == "scale=8:8,x=file=a.b.jsonl"  # fields in the chain are filled per file


def test_template_errors(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "a.mp4", tmp_path / "y" / "a.mp4"
    with pytest.raises(InvalidArgumentError, match=r"unknown field \{bogus\}"):
        plan([str(a)], "out/{bogus}.mkv", "")
    with pytest.raises(InvalidArgumentError, match="would both write"):
        plan([str(a), str(b)], str(tmp_path / "{stem}.mkv"), "")
    assert len(plan([str(a), str(b)], str(tmp_path / "{parent}_{stem}.mkv"), "")) == 2
    with pytest.raises(InvalidArgumentError, match="stdout"):
        plan([str(a)], "-", "")


def test_expand_inputs(tmp_path: Path) -> None:
    for name in ("b.mp4", "a.mp4", "sub/c.mp4"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    got = expand_inputs([str(tmp_path / "*.mp4"), str(tmp_path / "a.mp4"), str(tmp_path / "missing.mp4")])
    assert got == [str(tmp_path / "a.mp4"), str(tmp_path / "b.mp4"), str(tmp_path / "missing.mp4")]
    assert expand_inputs(str(tmp_path / "**/*.mp4"))[-1] == str(tmp_path / "sub/c.mp4")
    with pytest.raises(NotFoundError, match="no file matches"):
        expand_inputs(str(tmp_path / "*.mkv"))


def test_job_hash_ignores_options_that_change_no_byte() -> None:
    base = job_hash("scale=8:8", {"format": "framemd5", "overwrite": None})
    assert base == job_hash("scale=8:8", {"format": "framemd5", "overwrite": True})
    assert base != job_hash("scale=8:9", {"format": "framemd5"})
    assert base != job_hash("scale=8:8", {"format": "framemd5", "frames": 3})


# --------------------------------------------------------------------------- ledger


def test_ledger_entry_is_exact(tmp_path: Path) -> None:
    src, out = tmp_path / "a.mp4", tmp_path / "out" / "a.mkv"
    src.write_bytes(b"abc")
    out.parent.mkdir()
    out.write_bytes(b"o")
    assert not ledger.finished(str(src), "job1", str(out))
    ledger.record(ledger.Entry.of(str(src), "job1", str(out)))
    assert (tmp_path / "out" / ".avdnn-ledger" / "a.mkv.json").exists()
    assert ledger.finished(str(src), "job1", str(out))
    assert not ledger.finished(str(src), "job2", str(out))  # another job
    os.utime(src, ns=(0, 12345))
    assert not ledger.finished(str(src), "job1", str(out))  # the input changed
    ledger.record(ledger.Entry.of(str(src), "job1", str(out)))
    out.unlink()
    assert not ledger.finished(str(src), "job1", str(out))  # the output is gone


# --------------------------------------------------------------------------- report and flags


def test_report_schema(tmp_path: Path) -> None:
    files = [
        FileReport("/a", "/o/a", "ok", frames_read=3, frames_written=3, attempts=2, models_loaded=1),
        FileReport(
            "/b",
            "/o/b",
            "failed",
            frames_read=2,
            frames_failed={"dnn: x": 1},
            attempts=1,
            error={"message": "'/b': bad", "code": AVERROR_EXTERNAL},
        ),
        FileReport("/c", "/o/c", "skipped"),
    ]
    rep = BatchReport(files, job="j", chain="c", output="/o/{stem}", workers=2)
    assert not rep.ok and [f.input for f in rep.failed] == ["/b"]
    rep.write(str(tmp_path / "r.json"))
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["totals"] == {
        "files": 3,
        "ok": 1,
        "failed": 1,
        "skipped": 1,
        "unfinished": 0,
        "frames_read": 5,
        "frames_written": 3,
        "frames_failed": 1,
        "retries": 1,
        "models_loaded": 1,
    }
    assert data["files"][1]["error"] == {"message": "'/b': bad", "code": AVERROR_EXTERNAL}
    assert set(data["files"][0]) >= {
        "input",
        "status",
        "frames_read",
        "frames_written",
        "frames_failed",
        "error",
        "seconds",
        "node",
    }
    assert "failed: '/b': bad" in rep.summary()


def test_batch_flags() -> None:
    flags, rest = split_argv(
        [
            "--workers",
            "3",
            "--resume",
            "-i",
            "a.mp4",
            "b.mp4",
            "-vf",
            "scale=8:8",
            "-i",
            "c/*.mp4",
            "--num-gpus",
            "0.5",
            "-f",
            "null",
            "-o",
            "out/{stem}.nut",
        ]
    )
    assert (flags.workers, flags.resume, flags.num_gpus, flags.output) == (3, True, 0.5, "out/{stem}.nut")
    assert flags.inputs == ["a.mp4", "b.mp4", "c/*.mp4"]
    assert rest == ["-vf", "scale=8:8", "-f", "null"]
    with pytest.raises(InvalidArgumentError, match="--bogus"):
        split_argv(["--bogus", "-i", "a", "-o", "b"])
    with pytest.raises(InvalidArgumentError, match="-o TEMPLATE"):
        split_argv(["-i", "a"])
    with pytest.raises(InvalidArgumentError, match="--workers"):
        split_argv(["--workers", "two", "-i", "a", "-o", "b"])


def test_cli_help() -> None:
    res = run_cli(["batch", "-h"])
    assert res.rc == 0 and b"usage: avdnn batch" in res.out and b"--num-gpus" in res.out


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    res = run_cli(["batch", "-i", str(tmp_path / "a.mp4"), "-vf", "scale=8:8", "stray", "-o", "x/{stem}.nut"])
    assert res.rc != 0 and "Unexpected argument 'stray'" in res.err and "Traceback" not in res.err
    res = run_cli(["batch", "-i", str(tmp_path / "a.mp4"), "-bogus", "1", "-o", "x/{stem}.nut"])
    assert res.rc == 8 and "Unrecognized option 'bogus'" in res.err
    res = run_cli(["batch", "-i", str(tmp_path / "a.mp4"), "-o", "x/{nope}.nut"])
    assert res.rc == 234 and "unknown field {nope}" in res.err


def test_a_dead_cluster_address_fails_at_once(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    (tmp_path / "a.mp4").write_bytes(b"x")
    res = run_cli(
        [
            "batch",
            "--address",
            f"127.0.0.1:{port}",
            "-i",
            str(tmp_path / "a.mp4"),
            "-f",
            "null",
            "-o",
            str(tmp_path / "o/{stem}.nut"),
        ]
    )
    assert res.rc == (-errno.ECONNREFUSED) & 0xFF and "cannot reach the Ray cluster" in res.err
    assert "Traceback" not in res.err


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    (tmp_path / "a.mp4").write_bytes(b"x")
    with pytest.raises(BackendUnavailableError, match=r"pip install 'avdnn\[ray\]'"):
        avdnn.batch(str(tmp_path / "a.mp4"), "", output=str(tmp_path / "o/{stem}.nut"), progress_bar=False)


def test_batch_stays_callable_after_its_package_is_imported() -> None:
    import avdnn.batch.runner  # binds the package to avdnn.batch

    assert callable(avdnn.batch)


# --------------------------------------------------------------------------- models kept loaded


def test_keep_models_loads_a_model_once_across_runs(tmp_path: Path) -> None:
    model = invert_model(tmp_path)
    chain = f"format=rgb24,dnn_processing=dnn_backend=onnx:model={model}:input=x:output=y"
    src = "testsrc2=s=32x24:d=0.2"
    fresh = avdnn.run(src, chain, input_format="lavfi", output=str(tmp_path / "f.framemd5"), format="framemd5")
    with avdnn.keep_models() as kept:
        for i in range(3):
            avdnn.run(src, chain, input_format="lavfi", output=str(tmp_path / f"{i}.framemd5"), format="framemd5")
        assert (kept.loads, kept.reuses) == (1, 2)
        with pytest.raises(InvalidArgumentError, match="already being kept"):
            avdnn.keep_models()
    assert fresh.frames_written == 5
    ref = (tmp_path / "f.framemd5").read_bytes()
    assert all((tmp_path / f"{i}.framemd5").read_bytes() == ref for i in range(3))  # a reused model, same bytes


def test_a_kept_model_survives_an_early_stop(tmp_path: Path) -> None:
    from avdnn.dnn import DnnConfig, load_model

    config = DnnConfig(model=invert_model(tmp_path), backend="onnx", input="x", outputs=("y",))
    with avdnn.keep_models() as kept:
        first = load_model(config)
        first.interrupt()  # -frames:v reached: a kept model is not cancelled (it would refuse later runs)
        first.close()
        second = load_model(config)
        assert second.backend is first.backend
        assert second.backend.run(np.zeros((1, 3, 2, 2), np.float32))[0].tolist() == [[[[1.0] * 2] * 2] * 3]
        second.close()
        assert (kept.loads, kept.reuses) == (1, 1)
    outside = load_model(config)  # without a keeper an early stop still cancels the inferences
    outside.interrupt()
    with pytest.raises(avdnn.ExternalError, match="cancelled"):
        outside.backend.run(np.zeros((1, 3, 2, 2), np.float32))
    outside.close()
