"""The shared engine on a MockBackend: order, statuses, batching, backpressure, faults, close."""

from __future__ import annotations

import errno
import logging
import threading

import numpy as np
import pytest
from dnnutil import no_hang
from spine_util import fewer_cores, run_pinned

from avdnn.dnn import faults
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Engine, Item, auto_nireq
from avdnn.dnn.interface import DNNAsyncStatusType as S
from avdnn.errors import (
    AVERROR,
    AVERROR_EXTERNAL,
    AvdnnError,
    ExternalError,
    InvalidArgumentError,
    InvalidDataError,
)

F32 = np.dtype(np.float32)


def item(value: float, shape: tuple[int, ...] = (1, 2, 2)) -> Item:
    """An inference whose input is filled with ``value`` and whose result is the output's mean."""
    return Item(shape, F32, lambda dst: dst.fill(value), lambda outs: float(outs[0].mean()))


def engine(fn=lambda b: b * 2, **kw) -> tuple[Engine, MockBackend]:
    mock = MockBackend(fn)
    kw.setdefault("faults", faults.FaultPlan())
    return Engine(mock.run, **kw), mock


def drain(e: Engine) -> list:
    out = []
    while (r := e.get_result(wait=True, timeout=HANG)).status != S.EMPTY_QUEUE:
        assert r.status != S.NOT_READY, "a submitted task never completed"
        out.append(r)
    return out


HANG = 5.0


@pytest.mark.parametrize("async_mode", [False, True])
@pytest.mark.parametrize("nireq,batch", [(1, 1), (2, 3), (4, 7)])
def test_results_in_order_and_same_either_way(async_mode: bool, nireq: int, batch: int) -> None:
    e, mock = engine(nireq=nireq, batch_size=batch, async_mode=async_mode)
    for i in range(10):
        e.submit(i, [item(i)])
    e.flush()
    res = no_hang(lambda: drain(e))
    assert [r.status for r in res] == [S.SUCCESS] * 10
    assert [r.payload for r in res] == list(range(10))
    assert [r.results[0] for r in res] == [2.0 * i for i in range(10)]
    full, rest = divmod(10, batch)
    # requests start on their own workers: the order in which runs begin is not defined
    assert sorted(mock.batch_sizes, reverse=True) == [batch] * full + ([rest] if rest else [])
    assert e.close()


def test_statuses_empty_not_ready_success() -> None:
    gate = threading.Event()
    e, _ = engine(lambda b: (gate.wait(HANG), b)[1], nireq=1, async_mode=True)
    assert e.get_result().status == S.EMPTY_QUEUE
    e.submit("a", [item(1)])
    assert e.get_result().status == S.NOT_READY
    assert e.get_result(wait=True, timeout=0.01).status == S.NOT_READY
    gate.set()
    r = no_hang(lambda: e.get_result(wait=True))
    assert (r.status, r.payload, r.results) == (S.SUCCESS, "a", (1.0,))
    assert e.get_result().status == S.EMPTY_QUEUE
    e.close()


def test_out_of_order_completion_leaves_in_order() -> None:
    """Requests finish last-first; results still leave in submission order."""
    gates = [threading.Event() for _ in range(3)]

    def fn(b: np.ndarray) -> np.ndarray:
        gates[int(b.flat[0])].wait(HANG)
        return b

    e, _ = engine(fn, nireq=3, async_mode=True)
    for i in range(3):
        e.submit(i, [item(i)])
    gates[2].set()
    gates[1].set()
    assert e.get_result().status == S.NOT_READY  # head (0) still running
    gates[0].set()
    assert [r.payload for r in no_hang(lambda: drain(e))] == [0, 1, 2]
    e.close()


def test_sync_partial_batch_is_not_ready_until_flush() -> None:
    e, mock = engine(nireq=1, batch_size=4, async_mode=False)
    e.submit(0, [item(0)])
    # waiting must not deadlock on a task whose batch has not filled yet
    assert no_hang(lambda: e.get_result(wait=True)).status == S.NOT_READY
    e.flush()
    assert e.get_result().status == S.SUCCESS
    assert mock.batch_sizes == [1]


def test_shape_change_starts_a_new_batch() -> None:
    e, mock = engine(nireq=1, batch_size=4, async_mode=False)
    for i in range(3):
        e.submit(i, [item(i, (1, 2, 2))])
    for i in range(3, 5):
        e.submit(i, [item(i, (1, 4, 4))])
    e.flush()
    assert [r.payload for r in drain(e)] == list(range(5))
    assert mock.batch_sizes == [3, 2]


def test_submit_blocks_when_every_request_is_busy() -> None:
    """Bounded memory: with nireq=2, batch 2, the 5th item waits for a free request."""
    gate = threading.Event()
    e, mock = engine(lambda b: (gate.wait(HANG), b)[1], nireq=2, batch_size=2, async_mode=True)
    for i in range(4):
        e.submit(i, [item(i)])  # two full batches -> both requests busy
    done = threading.Event()

    def fifth() -> None:
        e.submit(4, [item(4)])
        e.submit(5, [item(5)])  # completes the third batch: needs a request
        done.set()

    t = threading.Thread(target=fifth, daemon=True)
    t.start()
    assert not done.wait(0.3), "submit returned while every request was busy"
    assert e.stats.blocked_submits == 1
    gate.set()
    t.join(HANG)
    assert done.is_set()
    e.flush()
    assert [r.payload for r in no_hang(lambda: drain(e))] == list(range(6))
    assert mock.max_active <= 2 and e.stats.max_busy <= 2
    e.close()


def test_buffers_grow_only_and_are_freed() -> None:
    e, _ = engine(nireq=1, batch_size=2, async_mode=False)
    for shape in [(1, 4, 4)] * 4 + [(1, 2, 2)] * 2 + [(1, 8, 8)] * 4 + [(1, 4, 4)] * 2:
        e.submit(None, [item(1, shape)])
    e.flush()
    assert all(r.status == S.SUCCESS for r in drain(e))
    assert e.stats.buffer_allocations == 2  # 4x4 batch first, one grow for 8x8, none for smaller
    assert e.stats.buffer_grows == 1
    assert e.stats.buffer_bytes == 2 * 8 * 8 * 4
    e.close()
    assert e.stats.buffer_bytes == 0


def test_first_error_of_a_task_is_kept() -> None:
    """A task with several inferences (classify fan-out): the first failure wins, FAIL."""
    first, second = InvalidDataError("first"), ExternalError("second")

    def bad(err: AvdnnError) -> Item:
        def post(outs: list) -> None:
            raise err

        return Item((1, 1, 1), F32, lambda d: d.fill(0), post)

    e, _ = engine(nireq=1, batch_size=3, async_mode=True)
    e.submit("t0", [item(1), bad(first), bad(second)])
    e.submit("t1", [item(2)])
    e.flush()
    r0, r1 = no_hang(lambda: drain(e))
    assert (r0.status, r0.error) == (S.FAIL, first)
    assert (r1.status, r1.results) == (S.SUCCESS, (4.0,))
    e.close()


@pytest.mark.parametrize("async_mode", [False, True])
def test_inference_raising_fails_its_tasks_without_hang(async_mode: bool) -> None:
    def fn(b: np.ndarray) -> np.ndarray:
        if (b == 3).any():  # what a backend's seam gives for its runtime's own failure
            raise ExternalError("kaboom") from RuntimeError("kaboom")
        return b

    e, _ = engine(fn, nireq=2, batch_size=2, async_mode=async_mode)
    for i in range(6):
        e.submit(i, [item(i)])
    e.flush()
    res = no_hang(lambda: drain(e))
    statuses = {r.payload: r.status for r in res}
    # frames 2 and 3 share the batch whose inference raised
    assert statuses == {0: S.SUCCESS, 1: S.SUCCESS, 2: S.FAIL, 3: S.FAIL, 4: S.SUCCESS, 5: S.SUCCESS}
    err = res[2].error
    assert isinstance(err, ExternalError) and err.code == AVERROR_EXTERNAL and "kaboom" in err.message
    assert isinstance(err.__cause__, RuntimeError)
    assert e.close()


class Bug(AttributeError):
    """Stands for a bug in avdnn's own code (a mistyped attribute)."""


@pytest.mark.parametrize("where", ["inference", "fill", "post"])
def test_a_bug_keeps_its_type_sync(where: str) -> None:
    """Inline, a bug raised while running, filling or post-processing goes up as raised at once."""

    def fn(b: np.ndarray) -> np.ndarray:
        if where == "inference" and (b == 2).any():
            raise Bug("'NoneType' object has no attribute 'run'")
        return b

    def bad_fill(dst: np.ndarray) -> None:
        raise Bug("fill")

    def bad_post(outs: list[np.ndarray]) -> float:
        raise Bug("post")

    e, _ = engine(fn, nireq=1, batch_size=1, async_mode=False)
    e.submit(0, [item(0)])
    e.submit(1, [item(1)])
    bug = Item(
        (1, 2, 2),
        F32,
        bad_fill if where == "fill" else (lambda dst: dst.fill(2)),
        bad_post if where == "post" else (lambda outs: 0.0),
    )
    with pytest.raises(Bug) as info:
        e.submit(2, [bug])
    assert info.traceback[-1].name in ("fn", "bad_fill", "bad_post")  # the traceback reaches the bug's line
    assert [r.status for r in drain_until_bug(e)] == [S.SUCCESS, S.SUCCESS]
    assert e.close()


def drain_until_bug(e: Engine) -> list:
    out = []
    with pytest.raises(Bug):  # the bug's own task raises it again when its turn comes
        while (r := e.get_result(wait=True, timeout=HANG)).status != S.EMPTY_QUEUE:
            out.append(r)
    return out


def test_a_bug_in_a_worker_is_raised_by_get_result() -> None:
    """Async, the bug waits on its task: the frames before it come out, then get_result raises it."""

    def fn(b: np.ndarray) -> np.ndarray:
        if (b == 3).any():
            raise Bug("worker bug")
        return b * 2

    e, _ = engine(fn, nireq=2, batch_size=1, async_mode=True)
    for i in range(5):
        e.submit(i, [item(i)])
    e.flush()
    got = [no_hang(lambda: e.get_result(wait=True, timeout=HANG)) for _ in range(3)]
    assert [(r.status, r.payload) for r in got] == [(S.SUCCESS, 0), (S.SUCCESS, 1), (S.SUCCESS, 2)]
    with pytest.raises(Bug, match="worker bug") as info:
        e.get_result(wait=True, timeout=HANG)
    assert info.traceback[-1].name == "fn"
    assert e.close()


def test_keyboard_interrupt_in_a_sync_inference_stays_an_interrupt() -> None:
    def fn(b: np.ndarray) -> np.ndarray:
        raise KeyboardInterrupt

    e, _ = engine(fn, nireq=1, batch_size=2, async_mode=False)
    e.submit(0, [item(0)])
    with pytest.raises(KeyboardInterrupt):
        e.submit(1, [item(1)])
    assert e.in_flight == 0  # the request was given back: close does not wait for it
    assert e.close(timeout=1.0)


def test_wrong_batch_in_output_fails_tasks() -> None:
    e, _ = engine(lambda b: b[:1], nireq=1, batch_size=2, async_mode=False)
    e.submit(0, [item(0)])
    e.submit(1, [item(1)])
    res = drain(e)
    assert [r.status for r in res] == [S.FAIL, S.FAIL]
    assert "first axis" in res[0].error.message


@pytest.mark.parametrize(
    "err,code,cls",
    [
        (errno.EAGAIN, AVERROR_EXTERNAL, ExternalError),
        (errno.EINVAL, AVERROR(errno.EINVAL), InvalidArgumentError),
        (errno.EPERM, AVERROR(errno.EPERM), PermissionError),
    ],
)
def test_worker_cannot_start_in_flush(err: int, code: int, cls: type) -> None:
    """Seed 001 patch 9: the flush's worker start fails -> AVERROR_EXTERNAL / AVERROR(errno)."""
    plan = faults.FaultPlan((faults.Fault("worker_start", errno=err, in_flush=True),))
    e, _ = engine(nireq=2, batch_size=3, async_mode=True, faults=plan)
    for i in range(7):
        e.submit(i, [item(i)])
    with pytest.raises(cls) as info:
        e.flush()
    assert info.value.code == code
    assert "Unable to start async inference" in info.value.message
    res = no_hang(lambda: drain(e))
    assert [r.status for r in res[:6]] == [S.SUCCESS] * 6
    assert res[6].status == S.FAIL and res[6].error is info.value
    assert plan.fired == {"worker_start": 1}
    assert e.close()


def test_python_thread_start_failure_maps_to_external(monkeypatch: pytest.MonkeyPatch) -> None:
    e, _ = engine(nireq=1, async_mode=True)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(ExternalError) as info:
        e.submit(0, [item(0)])
    monkeypatch.undo()
    assert info.value.code == AVERROR_EXTERNAL
    r = e.get_result()
    assert r.status == S.FAIL and r.error is info.value
    assert e.close()


def test_flush_failure_is_its_own_error_and_completes_pending() -> None:
    boom = InvalidDataError("flush went wrong")
    plan = faults.FaultPlan((faults.Fault("flush", error=boom),))
    e, _ = engine(nireq=1, batch_size=4, async_mode=True, faults=plan)
    for i in range(5):
        e.submit(i, [item(i)])
    with pytest.raises(InvalidDataError) as info:
        e.flush()
    assert info.value is boom
    res = no_hang(lambda: drain(e))
    assert [r.status for r in res] == [S.SUCCESS] * 4 + [S.FAIL]
    assert res[4].error is boom


def test_close_waits_for_requests_in_flight() -> None:
    gate = threading.Event()
    e, mock = engine(lambda b: (gate.wait(HANG), b)[1], nireq=2, async_mode=True)
    e.submit(0, [item(0)])
    e.submit(1, [item(1)])
    threading.Timer(0.05, gate.set).start()
    assert no_hang(lambda: e.close(timeout=HANG)) is True
    assert mock.active == 0
    assert e.get_result().status == S.EMPTY_QUEUE


def test_close_wait_is_bounded_when_a_request_hangs() -> None:
    gate = threading.Event()
    e, _ = engine(lambda b: (gate.wait(HANG), b)[1], nireq=1, async_mode=True)
    e.submit(0, [item(0)])
    assert no_hang(lambda: e.close(timeout=0.2)) is False
    gate.set()
    with pytest.raises(InvalidArgumentError):
        e.submit(1, [item(1)])


def test_close_wakes_a_blocked_submit() -> None:
    gate = threading.Event()
    e, _ = engine(lambda b: (gate.wait(HANG), b)[1], nireq=1, async_mode=True)
    e.submit(0, [item(0)])
    errors: list[BaseException] = []

    def second() -> None:
        try:
            e.submit(1, [item(1)])
        except AvdnnError as exc:
            errors.append(exc)

    t = threading.Thread(target=second, daemon=True)
    t.start()
    e.close(timeout=0.1)
    t.join(HANG)
    assert not t.is_alive() and errors
    gate.set()


def test_task_without_inference_passes_through() -> None:
    e, mock = engine(nireq=1, async_mode=True)
    e.submit("empty", [])
    r = e.get_result()
    assert (r.status, r.payload, r.results) == (S.SUCCESS, "empty", ())
    assert mock.batch_sizes == []


def test_native_async_hook() -> None:
    """A backend with its own async API plugs into the same engine."""
    seen: list[int] = []

    def start(batch: np.ndarray, done) -> None:
        seen.append(batch.shape[0])
        out = batch * 3
        threading.Thread(target=done, args=([out], None), daemon=True).start()

    e, mock = engine(nireq=2, batch_size=2, async_mode=True, start_async=start)
    for i in range(3):
        e.submit(i, [item(i)])
    e.flush()
    assert [r.results[0] for r in no_hang(lambda: drain(e))] == [0.0, 3.0, 6.0]
    assert seen == [2, 1] and mock.batch_sizes == []
    assert e.close()


#: an engine of nireq=0 in a child pinned to fewer cores than the machine has
PINNED = """
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Engine, auto_nireq

e = Engine(MockBackend(lambda b: b).run, nireq=0)
print(os.cpu_count(), auto_nireq(), e.nireq)
e.close()
"""


def test_auto_nireq_and_bad_arguments() -> None:
    cpus = fewer_cores()
    machine, auto, nireq = map(int, run_pinned(cpus, PINNED).split())
    assert machine > len(cpus) and auto == nireq == len(cpus) // 2 + 1  # FFmpeg's formula over the usable cores
    assert engine(nireq=0)[0].nireq == auto_nireq()
    with pytest.raises(InvalidArgumentError):
        engine(batch_size=0)
    with pytest.raises(InvalidArgumentError):
        engine(nireq=-1)


def test_faults_from_environment_only_under_the_test_switch(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(faults.ENV, "worker_start:errno=EPERM:in_flush=1,post_process:at=3")
    monkeypatch.delenv(faults.SWITCH)  # the conftest sets it for the suite: a real run has no faults
    monkeypatch.setattr(faults, "_ignored_warned", False)
    logger = logging.getLogger("avdnn.dnn")
    logger.addHandler(caplog.handler)  # the CLI's set-up may have stopped propagation
    try:
        assert not faults.current_plan() and not faults.current_plan()
    finally:
        logger.removeHandler(caplog.handler)
    said = {(id(r), r.getMessage()) for r in caplog.records if faults.ENV in r.getMessage()}  # a record may come twice
    assert [m for _, m in said] == [
        f"${faults.ENV} is ignored: fault injection is a test switch (set {faults.SWITCH}=1 in a test run)"
    ]  # said once
    monkeypatch.setenv(faults.SWITCH, "1")
    plan = faults.current_plan()
    assert [(f.point, f.errno, f.at, f.in_flush) for f in plan.faults] == [
        ("worker_start", errno.EPERM, None, True),
        ("post_process", None, 3, False),
    ]
    with pytest.raises(InvalidArgumentError):
        faults.parse_env("nowhere")
    with faults.inject(faults.Fault("inference", at=0)) as injected:
        assert faults.current_plan().faults[0] in injected.faults


def test_async_workers_are_persistent_one_per_request() -> None:
    """One worker thread per request slot for the whole run (not one per batch); close stops them."""
    e, _ = engine(nireq=2, batch_size=1, async_mode=True)
    for i in range(12):
        e.submit(i, [item(i)])
    e.flush()
    assert [r.payload for r in no_hang(lambda: drain(e))] == list(range(12))
    assert e.stats.batches == 12 and 1 <= e.stats.worker_starts <= 2
    threads = [r.thread for r in e._requests if r.thread is not None]
    assert threads and all(t.is_alive() for t in threads)
    assert e.close()
    assert all(not t.is_alive() for t in threads)


def test_worker_start_fault_fires_on_a_started_slot() -> None:
    """The fault point is the hand-off, so it can fail a slot whose worker already runs."""
    plan = faults.FaultPlan((faults.Fault("worker_start", errno=errno.EAGAIN, in_flush=True),))
    e, _ = engine(nireq=1, batch_size=2, async_mode=True, faults=plan)
    for i in range(3):
        e.submit(i, [item(i)])  # batch 0 starts the one worker; item 2 waits for flush
    with pytest.raises(ExternalError) as info:
        e.flush()
    assert info.value.code == AVERROR_EXTERNAL and e.stats.worker_starts == 1
    res = no_hang(lambda: drain(e))
    assert [r.status for r in res] == [S.SUCCESS, S.SUCCESS, S.FAIL]
    assert e.close()


def test_unclosed_engine_stops_its_workers_when_collected() -> None:
    import gc

    e, _ = engine(nireq=1, async_mode=True)
    e.submit(0, [item(0)])
    no_hang(lambda e=e: drain(e))
    thread = e._requests[0].thread
    assert thread is not None and thread.is_alive()
    del e
    gc.collect()
    thread.join(HANG)
    assert not thread.is_alive()
