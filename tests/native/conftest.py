"""Fixtures for the native-backend tests."""

from __future__ import annotations

import pytest
from ffmpeg_oracle import need_ffmpeg51


@pytest.fixture
def ffmpeg51() -> None:
    """Skip (with the reason) unless Debian's ffmpeg 5.x with the native backend is installed."""
    need_ffmpeg51()
