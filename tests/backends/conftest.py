"""Fixtures for the backend suite: one generated model per (format, net), skips with reasons.

A format is skipped only when its backend's runtime (the pip extra) or the tool that writes
that format is not installed; the reason names what to install (bkutil.skip_reason).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import nets
import pytest
from bkutil import skip_reason
from spine_util import missing


@pytest.fixture(scope="session")
def net_path(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], str]:
    """``net_path(format, net)``: the model file, written once per session; skips with a reason."""
    cache: dict[tuple[str, str], str] = {}
    root = tmp_path_factory.mktemp("nets")

    def get(fmt: str, net: str) -> str:
        why = skip_reason(fmt)
        if why:
            missing("extras", why)
        if (fmt, net) not in cache:
            folder = root / fmt
            folder.mkdir(exist_ok=True)
            cache[(fmt, net)] = nets.build(fmt, net, Path(folder))
        return cache[(fmt, net)]

    return get
