"""Errors at the backend seam: the runtime's own exceptions mapped with their code, bugs kept as raised."""

from __future__ import annotations

import errno

import numpy as np
import onnx_models as models
import pytest
from dnnutil import lavfi_frames, make_filter, no_hang, run_filter

from avdnn.dnn import DnnConfig, Item, load_model
from avdnn.dnn.backends._common import map_errors, raised_in
from avdnn.dnn.interface import DNNAsyncStatusType
from avdnn.errors import AVERROR, InvalidArgumentError, OutOfMemoryError


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return models.conv3x3(tmp_path_factory.mktemp("seam"), 3)


@pytest.fixture(scope="module")
def clip() -> list:
    return lavfi_frames("rgb24", 40, 24, 6)


@pytest.mark.parametrize("async_mode", [False, True])
def test_a_real_onnxruntime_error_keeps_its_code(tmp_path, async_mode: bool) -> None:  # type: ignore[no-untyped-def]
    """5x5 into a model fixed at 8x8: ONNX Runtime's INVALID_ARGUMENT comes back as the task's
    AVERROR(EINVAL), caused by onnxruntime's own exception."""
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    dnn = load_model(DnnConfig(model=models.fixed_pool2(tmp_path, 8, 8), async_mode=async_mode, nireq=1))
    dnn.execute("bad", [Item((3, 5, 5), np.dtype(np.float32), lambda dst: dst.fill(0), lambda outs: outs)])
    dnn.flush()
    r = no_hang(lambda: dnn.get_result(wait=True, timeout=10))
    dnn.close()
    assert r.status == DNNAsyncStatusType.FAIL and isinstance(r.error, InvalidArgumentError)
    assert r.error.code == AVERROR(errno.EINVAL)
    assert isinstance(r.error.__cause__, InvalidArgument)


@pytest.mark.parametrize("async_", [0, 1])
def test_a_bug_inside_the_backend_run_stays_a_bug(conv_model: str, clip: list, async_: int) -> None:
    """An AttributeError in the backend's run (here: a session that was dropped) is not a failed frame."""
    f = make_filter("dnn_processing", model=conv_model, **{"async": async_}, nireq=2)
    assert f.model is not None
    f.model.backend._session = None  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'run'"):
        no_hang(lambda: run_filter(f, clip))
    assert f.failed == {}  # nothing was counted as a failed frame


def test_keyboard_interrupt_in_a_sync_run_propagates(conv_model: str, clip: list) -> None:
    f = make_filter("dnn_processing", model=conv_model, **{"async": 0})
    assert f.model is not None

    class Interrupting:
        def run(self, *args: object) -> list:
            raise KeyboardInterrupt

    f.model.backend._session = Interrupting()  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt):
        f.push(clip[0])
    f.close()


def test_builtin_rows_match_only_what_the_runtime_raised() -> None:
    """A (ValueError, EINVAL, 'numpy') row maps numpy's ValueError, never one raised by avdnn's code."""
    table = lambda: [(ValueError, InvalidArgumentError, "numpy")]  # noqa: E731
    with pytest.raises(InvalidArgumentError) as info, map_errors("reshape", "m.onnx", table):
        np.reshape(np.zeros(3), (2,))
    assert isinstance(info.value.__cause__, ValueError) and raised_in(info.value.__cause__, "numpy")
    with pytest.raises(ValueError, match="ours") as raw, map_errors("ours", "m.onnx", table):
        raise ValueError("ours")
    assert not isinstance(raw.value, InvalidArgumentError)
    with pytest.raises(OutOfMemoryError), map_errors("alloc", "m.onnx"):
        raise MemoryError
