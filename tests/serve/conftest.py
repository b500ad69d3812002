"""Fixtures of the service tests: the service itself (started and stopped by each test), a tiny detector."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from spine_util import need_module

for _name in ("fastapi", "uvicorn", "prometheus_client", "httpx"):
    need_module(_name, "the service tests need the serve extra: pip install 'avdnn[serve]'")

from serve_util import Served, tiny_detector  # noqa: E402 - after the skips: it imports the service


@pytest.fixture
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Served]]:
    """``serve(**settings)``: the service on a free loopback port, stopped at the end of the test.

    Its media root is pytest's base temporary folder unless a test gives one: every test's
    ``tmp_path`` and the session's tiny detector are inside it."""
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("not applicable: the service tests read /proc/net/tcp (Linux) to know when a camera is up")
    started: list[Served] = []

    def start(**settings: Any) -> Served:
        settings.setdefault("media_root", tmp_path_factory.getbasetemp())
        served = Served(**settings).start()
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture(scope="session")
def detector(tmp_path_factory: pytest.TempPathFactory) -> str:
    return tiny_detector(tmp_path_factory.mktemp("serve") / "tinydet.onnx")
