"""Fixtures of the events tests: a mosquitto and a webhook endpoint of the test's own, stopped after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ev_util import Broker, Hook, need_mosquitto


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A running mosquitto on a free loopback port (anonymous), stopped at the end."""
    need_mosquitto()
    (tmp_path / "mq").mkdir()
    b = Broker(tmp_path / "mq").start()
    yield b
    b.stop()


@pytest.fixture
def make_broker(tmp_path: Path) -> Iterator[Callable[..., Broker]]:
    """Brokers with options (users and passwords), each stopped at the end."""
    need_mosquitto()
    made: list[Broker] = []

    def make(**kwargs: object) -> Broker:
        folder = tmp_path / f"mq{len(made)}"
        folder.mkdir()
        b = Broker(folder, **kwargs)  # type: ignore[arg-type]
        made.append(b)
        return b.start()

    yield make
    for b in made:
        b.stop()


@pytest.fixture
def hook() -> Iterator[Callable[..., Hook]]:
    """Webhook endpoints on loopback (``hook(statuses=[500, 204])``), closed at the end."""
    made: list[Hook] = []

    def make(statuses: list[int] | None = None) -> Hook:
        h = Hook(statuses or [])
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()
