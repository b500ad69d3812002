"""Every example in the README runs as printed (its sh lines and its python blocks).

The shell lines run with bash in a fresh directory that has an ``out/`` folder, with the venv's
``avdnn`` first on PATH (what ``source .venv/bin/activate`` gives). Left out: the set-up commands
(``bash scripts/...``, ``pip install``, ``source``) and the usage synopses (``avdnn [options]...``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP = ("bash scripts/", "pip install", "source ", ".venv/bin/python benchmarks")


def _sh_lines() -> list[str]:
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.splitlines():
            cmd = line.split("  #")[0].strip()
            synopsis = re.search(r"\[[A-Za-z .]+\]", cmd) is not None or cmd.endswith("...")
            if cmd and not cmd.startswith(SKIP) and not synopsis:
                lines.append(cmd)
    return lines


def _env() -> dict[str, str]:
    bindir = os.path.dirname(sys.executable)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def test_the_readme_has_examples() -> None:
    lines = _sh_lines()
    assert len(lines) >= 10, lines
    assert not any(line.startswith("avdnn [") for line in lines)


@pytest.mark.parametrize("line", _sh_lines())
def test_readme_shell_example_runs(line: str, clip: dict[str, str], tmp_path: Path) -> None:
    if shutil.which("avdnn", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("no avdnn console script next to this Python")
    if line.startswith("avdnn batch"):
        pytest.importorskip("ray")
        cwd = Path(os.environ.get("AVDNN_README_BATCH_DIR", tmp_path.parent / "readme_batch"))
    else:
        cwd = tmp_path
    (cwd / "out").mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )
    assert res.returncode == 0, f"{line}\n{res.stderr[-3000:]}"


def test_readme_python_examples_run(clip: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    for code in blocks:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, str(README), "exec"), {})
