"""Stopping early cancels the inferences in flight instead of waiting for them.

When the output has its ``-frames:v`` (or fails), the writer thread tells the chain at once:
the engine's waits end with ExitRequestedError, a backend that can (ONNX Runtime through
``RunOptions.terminate``, OpenVINO through ``InferRequest.cancel``) stops the runs it has
started, and none of those frames counts as failed. ffmpeg waits for them instead (its
backends join their request threads when the filter is freed).

The mock below returns frames 0 .. free-1 at once and blocks on every later frame until it is
cancelled (30 s at most): a test passes only if the cancellation reached it. Each frame's pixels
hold its number (``geq``), so the mock knows which frame it runs whatever the order of requests.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from dnnutil import no_hang
from spine_util import lost_in

import avdnn
from avdnn.dnn import faults
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Engine, Item
from avdnn.errors import ExitRequestedError, ExternalError, IOFailureError
from avdnn.filters import dnn_common

F32 = np.dtype(np.float32)
SOURCE = "color=c=black:s=32x24:r=25:d=4"
NUMBERED = "format=rgb24,geq=r=4*N+4:g=4*N+4:b=4*N+4"  # frame n is all 4n+4


class Blocking(MockBackend):
    """Runs frames 0 .. free-1, then blocks each later one until ``cancel()``.

    ``hold_last``: frame free-1 is answered only once a later frame has started (blocked), so
    that one is surely in flight when the limit is reached (async requests run side by side).
    """

    def __init__(self, free: int) -> None:
        super().__init__(self._infer)
        self.free = free
        self.hold_last = False
        self.started: list[int] = []
        self.blocked = 0
        self.timed_out = False
        self.held_in_vain = False
        self.in_flight = threading.Event()  # a frame past ``free`` has started
        self.cancelled = threading.Event()
        self._count = threading.Lock()

    def _infer(self, batch: np.ndarray) -> np.ndarray:
        if not batch.any():  # dnn_processing's blank output-size probe
            return batch
        frame = round(float(batch[0].mean()) * 255 / 4) - 1
        with self._count:
            self.started.append(frame)
        if frame == self.free - 1 and self.hold_last and not self.in_flight.wait(10):
            self.held_in_vain = True
        if frame >= self.free:
            with self._count:
                self.blocked += 1
            self.in_flight.set()
            if not self.cancelled.wait(30):
                self.timed_out = True
            raise ExternalError("cancelled")  # what a backend's seam maps its runtime's error to
        return 1.0 - batch

    def cancel(self) -> None:
        self.cancelled.set()


@pytest.fixture
def blocking(monkeypatch: pytest.MonkeyPatch) -> Blocking:
    mock = Blocking(free=5)
    real = dnn_common.load_model
    monkeypatch.setattr(dnn_common, "load_model", lambda *a, **kw: real(*a, backend=mock.as_backend(), **kw))
    return mock


def _hold_the_last_write(monkeypatch: pytest.MonkeyPatch, blocking: Blocking, frames: int) -> list[bool]:
    """The writer writes its last frame only once a later one is in the model (the chain's thread
    runs ahead of it); the list says whether it waited in vain."""
    from avdnn.media.output.sink import Sink

    real_write = Sink.write
    count: list[int] = []
    in_vain: list[bool] = []

    def write(self: Sink, frame: object, rate: object = None) -> None:
        count.append(1)
        if len(count) == frames:
            in_vain.append(not blocking.in_flight.wait(10))
        real_write(self, frame, rate)

    monkeypatch.setattr(Sink, "write", write)
    return in_vain


@pytest.mark.parametrize(
    ("threads", "async_", "nireq", "ahead"),
    [
        # async: the model answers the last frame once a later one runs beside it
        ("1", 1, 2, "model"),
        ("1", 1, 4, "model"),
        ("0", 1, 2, "model"),
        ("0", 1, 4, "model"),
        # sync, the chain on a thread of its own: the writer writes the last frame once the chain
        # has started the next one
        ("1", 0, 1, "writer"),
        # sync on one thread: the stop comes between two frames, none runs past the limit
        ("0", 0, 1, None),
    ],
)
def test_frames_limit_cancels_the_runs_in_flight(
    blocking: Blocking, monkeypatch: pytest.MonkeyPatch, threads: str, async_: int, nireq: int, ahead: str | None
) -> None:
    monkeypatch.setenv("AVDNN_THREADS", threads)
    blocking.hold_last = ahead == "model"
    in_vain = _hold_the_last_write(monkeypatch, blocking, 5) if ahead == "writer" else []
    chain = f"{NUMBERED},dnn_processing=model=blocking:async={async_}:nireq={nireq}"
    stats = no_hang(
        lambda: avdnn.run(SOURCE, chain, input_format="lavfi", output="-", format="null", frames=5), limit=25
    )
    assert stats.frames_written == 5 and stats.error is None and stats.stopped_early
    assert stats.frames_failed == 0
    assert stats.check(), stats.summary()  # in = out + failed + declared drops + in flight, per stage
    assert not blocking.timed_out  # no run was waited for
    if ahead is None:
        assert sorted(blocking.started) == [0, 1, 2, 3, 4] and not blocking.blocked
    else:  # a run beyond the limit had started: it was cancelled, not waited for
        assert not blocking.held_in_vain and in_vain in ([], [False]), "no frame past the limit was in flight"
        assert blocking.blocked >= 1 and blocking.cancelled.is_set()


@pytest.mark.parametrize("threads", ["1", "0"])
@pytest.mark.parametrize(("async_", "nireq"), [(1, 2), (0, 1)])
def test_frames_limit_with_a_lossy_stage_before_the_model_fails_the_check(
    blocking: Blocking, monkeypatch: pytest.MonkeyPatch, lossy: str, threads: str, async_: int, nireq: int
) -> None:
    """The twin: the model's tasks in flight are what it may hold, not what another stage lost."""
    monkeypatch.setenv("AVDNN_THREADS", threads)
    chain = f"{NUMBERED},{lossy},dnn_processing=model=blocking:async={async_}:nireq={nireq}"
    blocking.free = 4  # the loss takes frame 2: 0, 1 and 3 reach the output, 4 and later block until cancelled
    stats = no_hang(
        lambda: avdnn.run(SOURCE, chain, input_format="lavfi", output="-", format="null", frames=3), limit=25
    )
    assert stats.frames_written == 3 and stats.stopped_early
    assert not stats.check() and lost_in(stats.violations()), stats.summary()
    assert not any("dnn_processing" in v for v in stats.violations()), stats.violations()


def test_a_failing_output_still_reports_its_own_error(blocking: Blocking, monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupt that follows an output error must not hide it behind AVERROR_EXIT."""
    from avdnn.media.output.sink import Sink

    real_write = Sink.write
    written: list[int] = []

    def write(self: Sink, frame: object, rate: object = None) -> None:
        if len(written) == 2:
            raise IOFailureError("No space left on device")
        written.append(1)
        real_write(self, frame, rate)

    monkeypatch.setattr(Sink, "write", write)
    blocking.free = 4  # frames 4.. are in flight when the third write fails
    with pytest.raises(IOFailureError, match="No space left"):
        no_hang(
            lambda: avdnn.run(
                SOURCE,
                f"{NUMBERED},dnn_processing=model=blocking:nireq=2",
                input_format="lavfi",
                output="-",
                format="null",
            ),
            limit=25,
        )
    assert blocking.cancelled.is_set() and not blocking.timed_out


def _item(value: float) -> Item:
    return Item((1, 2, 2), F32, lambda dst: dst.fill(value), lambda outs: float(outs[0].mean()))


def test_interrupt_ends_a_waiting_get_result() -> None:
    gate = threading.Event()
    mock = MockBackend(lambda b: (gate.wait(30), b)[1])
    e = Engine(mock.run, nireq=1, faults=faults.FaultPlan())
    e.submit("a", [_item(1.0)])
    threading.Timer(0.05, e.interrupt).start()
    with pytest.raises(ExitRequestedError):
        no_hang(lambda: e.get_result(wait=True))
    gate.set()
    assert no_hang(e.close)


def test_interrupt_ends_a_submit_waiting_for_a_request() -> None:
    gate = threading.Event()
    mock = MockBackend(lambda b: (gate.wait(30), b)[1])
    e = Engine(mock.run, nireq=1, faults=faults.FaultPlan())
    e.submit("a", [_item(1.0)])  # takes the only request
    threading.Timer(0.05, e.interrupt).start()
    with pytest.raises(ExitRequestedError):
        no_hang(lambda: e.submit("b", [_item(2.0)]))
    gate.set()
    assert no_hang(e.close)


def test_a_start_refused_because_of_the_stop_is_the_stop(caplog: pytest.LogCaptureFixture) -> None:
    """The interrupt lands between taking a request and starting it: the backend's refusal
    ("cancelled") is the stop itself, neither a failure nor an error line."""
    import logging

    engine: Engine

    def start(batch: np.ndarray, done: object) -> None:
        engine.interrupt()
        raise ExternalError("inference: cancelled")

    engine = Engine(lambda b: [b], nireq=1, start_async=start, faults=faults.FaultPlan())
    with caplog.at_level(logging.ERROR, logger="avdnn"), pytest.raises(ExitRequestedError):
        engine.submit("a", [_item(1.0)])
    assert "cancelled" not in caplog.text
    assert no_hang(engine.close)


# -- the runtimes' own cancellation --------------------------------------------------------


def _slow_model(folder: Path, layers: int = 150) -> str:
    """``layers`` 16-channel 3x3 convolutions: long enough that a cancel lands mid-run."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        inits.append(numpy_helper.from_array(rng.uniform(-0.1, 0.1, (16, 16, 3, 3)).astype(np.float32), f"w{i}"))
        out = "y" if i == layers - 1 else f"c{i}"
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [out], pads=[1, 1, 1, 1]))
        prev = out
    shape = [1, 16, "H", "W"]
    graph = helper.make_graph(
        nodes,
        "slow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    path = folder / "slow.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return str(path)


def test_onnxruntime_cancel_terminates_a_running_session(tmp_path: Path) -> None:
    from avdnn.dnn.backends.onnxruntime import OnnxRuntimeBackend
    from avdnn.dnn.interface import ModelConfig

    model = OnnxRuntimeBackend.load(ModelConfig(path=_slow_model(tmp_path)))
    x = np.zeros((1, 16, 256, 256), np.float32)
    box: dict[str, BaseException] = {}

    def run() -> None:
        try:
            model.run(x)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    while not model._running and thread.is_alive():
        threading.Event().wait(0.001)
    model.cancel()
    thread.join(30)
    assert isinstance(box.get("error"), ExternalError) and "terminate" in box["error"].message
    with pytest.raises(ExternalError, match="cancelled"):
        model.run(x)  # after cancel(), at once


def test_openvino_cancel_stops_a_started_request(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    from avdnn.dnn.backends.openvino import OpenVINOBackend
    from avdnn.dnn.interface import ModelConfig

    model = OpenVINOBackend.load(ModelConfig(path=_slow_model(tmp_path), options={"precision": "f32"}))
    x = np.zeros((1, 256, 256, 16), np.uint8)  # what avdnn feeds OpenVINO: packed uint8, converted in the graph
    done = threading.Event()
    box: dict[str, object] = {}

    def finished(outputs: object, exc: BaseException | None) -> None:
        box["outputs"], box["error"] = outputs, exc
        done.set()

    model.run_async(x, finished)  # started under the lock cancel() takes: it cannot slip past
    model.cancel()
    assert done.wait(30)
    assert box["outputs"] is None and isinstance(box["error"], ExternalError)
    with pytest.raises(ExternalError, match="cancelled"):
        model.run(x)
    model.close()
