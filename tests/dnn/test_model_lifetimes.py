"""A model's lifetime against its users: no lock held while it loads, never freed under a live request."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from dnnutil import no_hang

from avdnn.dnn import DnnConfig, faults
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Engine, Item
from avdnn.dnn.interface import DNNAsyncStatusType as S
from avdnn.dnn.interface import ModelConfig
from avdnn.dnn.model import shut_down
from avdnn.dnn.shared import InstanceScope
from avdnn.errors import ExternalError

F32 = np.dtype(np.float32)
WAIT = 10.0  # a bound for what must happen, never a measured time


class _Gated(MockBackend):
    """A mock whose runs wait for ``gate`` (a slow inference) and whose close is seen by an event."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.running = threading.Event()
        self.freed = threading.Event()
        self.closed_while_active = False
        super().__init__(self._slow)

    def _slow(self, batch: np.ndarray) -> np.ndarray:
        self.running.set()
        assert self.gate.wait(WAIT), "the test never released the inference"
        return batch * 2

    def close(self) -> None:
        self.closed_while_active = self.closed_while_active or self.active > 0
        super().close()
        self.freed.set()


def _item() -> Item:
    return Item((1, 2, 2), F32, lambda dst: dst.fill(1.0), lambda outs: float(outs[0].mean()))


@pytest.mark.parametrize("kept", [False, True], ids=["closed", "handed back"])
def test_the_backend_is_never_closed_under_a_live_request(kept: bool) -> None:
    """The engine's close waits (bounded) for the request in flight; after the bound the model is
    freed when that request ends, not at once under it."""
    mock = _Gated()
    released: list[tuple[Any, bool]] = []

    def hand_back(model: Any, reusable: bool) -> None:
        released.append((model, reusable))
        model.close()

    engine = Engine(mock.run, nireq=1, batch_size=1, async_mode=True, close_timeout=0.05, faults=faults.FaultPlan())
    engine.submit(0, [_item()])
    assert mock.running.wait(WAIT)
    no_hang(lambda: shut_down(engine, mock, hand_back if kept else None, cancelled=False))
    assert not mock.closed and not released  # the request still runs: the model stays
    mock.gate.set()
    assert mock.freed.wait(WAIT) and not mock.closed_while_active
    assert released == ([(mock, False)] if kept else [])  # not idle at the bound: never reused


def test_an_idle_backend_is_freed_at_once() -> None:
    mock = _Gated()
    mock.gate.set()
    engine = Engine(mock.run, nireq=1, batch_size=1, async_mode=True, faults=faults.FaultPlan())
    engine.submit(0, [_item()])
    assert engine.get_result(wait=True, timeout=WAIT).status == S.SUCCESS
    shut_down(engine, mock, None, cancelled=False)
    assert mock.closed


class _SlowLoad(MockBackend):
    """A backend whose load of ``model=slow`` waits for ``compiled`` (a long OpenVINO compile)."""

    compiled = threading.Event()
    loading = threading.Event()

    def __init__(self) -> None:
        super().__init__(lambda b: b)

    @classmethod
    def load(cls, config: ModelConfig) -> MockBackend:
        if config.path == "slow":
            cls.loading.set()
            assert cls.compiled.wait(WAIT), "the test never finished the compile"
        return cls()


def test_a_slow_load_does_not_block_another_instances_attach() -> None:
    """The scope's lock is not held while a model loads: instance "b" attaches while "a" compiles,
    and a second filter of "a" waits for that load and shares its model."""
    _SlowLoad.compiled.clear()
    _SlowLoad.loading.clear()
    got: dict[str, Any] = {}

    def attach(key: str, model: str, instance: str) -> None:
        got[key] = scope.attach(
            DnnConfig(model=model, model_instance=instance, nireq=1, batch_size=1),
            *_func(),
            label=key,
            backend=_SlowLoad,
        )

    with InstanceScope() as scope:
        first = threading.Thread(target=attach, args=("a1", "slow", "a"), daemon=True)
        first.start()
        assert _SlowLoad.loading.wait(WAIT)
        second = threading.Thread(target=attach, args=("a2", "slow", "a"), daemon=True)
        second.start()
        no_hang(lambda: attach("b", "fast", "b"))  # before: blocked on the scope's lock behind "a"'s compile
        assert "b" in got and "a1" not in got and "a2" not in got
        _SlowLoad.compiled.set()
        first.join(WAIT)
        second.join(WAIT)
        assert got["a1"].instance is got["a2"].instance is not got["b"].instance
        assert [r.name for r in scope.reports()] == ["b", "a"] and scope.reports()[1].streams == ("a1", "a2")
        for model in got.values():
            model.close()


def test_a_failed_load_lets_a_waiting_filter_load_it_itself() -> None:
    """A filter that waited for another's load of its instance is not left waiting when that load fails."""
    calls: list[str] = []
    gate = threading.Event()

    class Flaky(MockBackend):
        @classmethod
        def load(cls, config: ModelConfig) -> MockBackend:
            calls.append(config.path)
            if len(calls) == 1:
                assert gate.wait(WAIT)
                raise ExternalError("the first load failed")
            return MockBackend(lambda b: b)

    errors: list[BaseException] = []
    with InstanceScope() as scope:

        def first() -> None:
            try:
                scope.attach(DnnConfig(model="m", model_instance="x"), *_func(), label="one", backend=Flaky)
            except BaseException as exc:  # noqa: BLE001 - checked below
                errors.append(exc)

        t = threading.Thread(target=first, daemon=True)
        t.start()
        while not calls:
            threading.Event().wait(0.01)  # the first load has begun (a list another thread appends to)
        waiter: dict[str, Any] = {}
        w = threading.Thread(
            target=lambda: waiter.update(
                m=scope.attach(DnnConfig(model="m", model_instance="x"), *_func(), label="two", backend=Flaky)
            ),
            daemon=True,
        )
        w.start()
        gate.set()
        t.join(WAIT)
        w.join(WAIT)
        assert [e.message for e in errors] == ["the first load failed"] and calls == ["m", "m"]  # type: ignore[attr-defined]
        waiter["m"].close()


def _func() -> tuple[Any]:
    from avdnn.dnn.interface import DNNFunctionType

    return (DNNFunctionType.PROCESS_FRAME,)
