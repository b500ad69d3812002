"""docs/events.md runs as written (its python blocks), and says what the code does."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from spine_util import need_installed

from avdnn.events import SINKS
from avdnn.filters.events import EventsFilter
from avdnn.filters.line import LineFilter
from avdnn.filters.zone import ZoneFilter

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_events_doc_python_blocks_run(clip: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need_installed("trackers", "pip install 'avdnn[track]'")
    need_installed("ai_edge_litert", "pip install 'avdnn[tflite]'")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    out = io.StringIO()
    for code in blocks:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {})
    printed = out.getvalue().splitlines()
    assert printed[0] == "0 new 0 " and any(" enter 0 left" in line for line in printed)
    assert any(line.startswith("zone left: inside") for line in printed)


def test_every_option_and_sink_is_in_the_doc() -> None:
    text = DOC.read_text()
    for cls in (ZoneFilter, LineFilter, EventsFilter):
        for opt in cls.options:
            assert f"`{opt.name}" in text or f"{opt.name}=" in text, (cls.name, opt.name)
    for kind in SINKS:
        assert f"| `{kind}` |" in text
