"""docs/streams.md runs as written: its python block and its shell examples."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

from spine_util import avdnn_script

DOC = Path(__file__).resolve().parents[2] / "docs" / "streams.md"


def test_streams_doc_python_runs(clip: dict[str, str]) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    written, streams = out.getvalue().split(" ", 1)
    assert int(written) == 50 and "('0:1 audio', 101)" in streams  # 2 s at 25 fps; 2 s of 20 ms opus packets


def test_streams_doc_first_shell_example_runs(clip: dict[str, str], tmp_path: Path) -> None:
    """The first example runs as printed (`avdnn samples` gives the clip's path)."""
    (block,) = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)[:1]
    line = block.splitlines()[0].split("#")[0].strip()
    avdnn_script()  # the block runs it by name
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    res = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out.mp4").stat().st_size > 100_000
