"""docs/outputs.md runs as written: its python block prints what the doc says it does."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "outputs.md"


def test_outputs_doc_python_runs(clip: dict[str, str]) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    assert out.getvalue().splitlines() == [
        "120 [120] True",  # both video streams of the ladder, every frame
        "-111 Error opening output rtmp://127.0.0.1:1/live/cam: Connection refused",
    ]
