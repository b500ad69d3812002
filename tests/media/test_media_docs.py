"""docs/media.md runs as written: every ```python block."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "media.md"


def test_media_doc_python_blocks_run(clip: dict[str, str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    for code in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {})
        if "print(len(frames)" in code:
            n, trimmed, errors = out.getvalue().split()[:3]
            assert (int(n), int(errors)) == (15, 0) and int(trimmed) > 0


@pytest.mark.parametrize(
    "option",
    [
        "-ss",
        "-itsoffset",
        "-stream_loop",
        "-re",
        "-noautorotate",
        "-display_rotation",
        "-xerror",
        "-max_error_rate",
        "-err_detect",
        "-discard",
        "-noaccurate_seek",
    ],
)
def test_media_doc_names_each_option(option: str) -> None:
    assert f"`{option}" in DOC.read_text()
