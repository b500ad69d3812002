"""Fast by default: unset nireq and intra-op threads come from the cores this process may use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bkutil import identity_onnx

from avdnn._util import cores as _util_cores
from avdnn.dnn import DnnConfig, interface, load_model, tasks


def test_usable_cores_is_the_affinity_mask() -> None:
    assert _util_cores.usable_cores() == len(os.sched_getaffinity(0))


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
