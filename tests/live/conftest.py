"""Fixtures of the live tests: the served clips, made once per session by the oracle."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_util import have_proc_net, make_clip


@pytest.fixture(scope="session")
def served(ffmpeg: str, clip: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``a``: 2 s of carphone (60 frames); ``b``: 1 s of it negated (30 frames), to tell two sessions apart."""
    if not have_proc_net():
        pytest.skip("not applicable: the live tests read /proc/net (Linux) to know when a server is up")
    root = tmp_path_factory.mktemp("live")
    return {
        "a": make_clip(ffmpeg, clip["carphone"], root / "a.ts", 2),
        "b": make_clip(ffmpeg, clip["carphone"], root / "b.ts", 1, vf="negate"),
    }
