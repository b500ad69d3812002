"""Fast by default: unset nireq and intra-op threads come from the cores this process may use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bkutil import identity_onnx
from spine_util import fewer_cores, missing, run_pinned

from avdnn.dnn import DnnConfig, interface, load_model, tasks
from avdnn.dnn import backends as registry

#: run pinned to fewer cores than the machine has: what avdnn counted, and what each backend got
PINNED = """
import json, os, sys
from avdnn._util.cores import usable_cores
from avdnn.dnn import DnnConfig, load_model

got = {"usable": usable_cores(), "machine": os.cpu_count()}
for name, config in (
    ("auto", DnnConfig(model=sys.argv[1], backend="onnx")),
    ("one", DnnConfig(model=sys.argv[1], backend="onnx", nireq=1)),
):
    dnn = load_model(config)
    got[name] = [dnn.engine.nireq, dnn.backend._session.get_session_options().intra_op_num_threads]
    dnn.close()
dnn = load_model(DnnConfig(model=sys.argv[1], backend="openvino", nireq=1))
got["openvino"] = int(dnn.backend._compiled.get_property("INFERENCE_NUM_THREADS"))
dnn.close()
print(json.dumps(got))
"""


def test_the_cores_counted_are_the_affinity_mask_not_the_machine(tmp_path: Path) -> None:
    """In a child pinned to fewer CPUs than os.cpu_count(): nireq and threads divide the pinned ones."""
    if not registry.is_installed("openvino"):
        missing("extras", "the openvino backend is not installed: pip install 'avdnn[openvino]'")
    cpus = fewer_cores()
    model = identity_onnx(tmp_path)
    got = json.loads(run_pinned(cpus, PINNED, model))
    n = len(cpus)
    assert got["machine"] > n and got["usable"] == n
    assert got["auto"] == [n // 2 + 1, max(1, n // (n // 2 + 1))]  # FFmpeg's nireq over the pinned cores
    assert got["one"] == [1, n]  # one request: every pinned core, no more
    assert got["openvino"] == n  # OpenVINO's threads, as compiled


@pytest.mark.parametrize(("cores", "nireq", "threads"), [(2, 2, 1), (8, 5, 1), (1, 1, 1)])
def test_defaults_divide_the_cores(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cores: int, nireq: int, threads: int
) -> None:
    monkeypatch.setattr(tasks, "usable_cores", lambda: cores)
    monkeypatch.setattr(interface, "usable_cores", lambda: cores)
    assert tasks.auto_nireq() == nireq  # FFmpeg's cores / 2 + 1
    dnn = load_model(DnnConfig(model=identity_onnx(tmp_path), backend="onnx"))
    try:
        assert dnn.engine.nireq == nireq
        assert dnn.backend._session.get_session_options().intra_op_num_threads == threads  # type: ignore[attr-defined]
    finally:
        dnn.close()


def test_sync_gets_every_core_and_explicit_options_win(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(interface, "usable_cores", lambda: 4)
    path = identity_onnx(tmp_path)
    sync = load_model(DnnConfig(model=path, backend="onnx", async_mode=False))
    given = load_model(DnnConfig(model=path, backend="onnx", nireq=3, backend_options={"threads_per_operation": 3}))
    try:
        assert sync.backend._session.get_session_options().intra_op_num_threads == 4  # type: ignore[attr-defined]
        assert given.engine.nireq == 3
        assert given.backend._session.get_session_options().intra_op_num_threads == 3  # type: ignore[attr-defined]
    finally:
        sync.close()
        given.close()
