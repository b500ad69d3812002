"""docs/cookbook.md runs as written: every ```sh block (after the first, which sets $CLIPS) and
every ```python block, in a scratch directory. The shell blocks run under bash with the venv's
``bin`` first on PATH (``avdnn`` and ``python`` are the venv's)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from avdnn.zoo import ZOO

DOC = Path(__file__).resolve().parents[2] / "docs" / "cookbook.md"
BLOCKS = re.findall(r"```(sh|python)\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
SHELL = [code for lang, code in BLOCKS if lang == "sh"]
PYTHON = [code for lang, code in BLOCKS if lang == "python"]


def need_everything(code: str) -> None:
    """Skip (naming the pip command) when a zoo package, runtime or data package the block uses is absent."""
    for spec in ZOO:
        if re.search(rf"zoo[/:\\]+{spec.name}\b", code) and not spec.installed():
            pytest.skip(spec.package.pip)
    for module, why in (
        ("skvideo", "scikit-video==1.1.11"),
        ("ai_edge_litert", "avdnn[tflite]"),
        ("PIL", "avdnn[text]"),
    ):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"pip install {why}")
    if "ssd_mobilenet" in code and importlib.util.find_spec("tensorflow") is None:
        pytest.skip("pip install 'avdnn[tensorflow]'")
    if "openvino" in code and importlib.util.find_spec("openvino") is None:
        pytest.skip("pip install 'avdnn[openvino]'")
    if "skimage" in code and importlib.util.find_spec("skimage") is None:
        pytest.skip("pip install --no-deps scikit-image==0.26.0")


def test_blocks_were_found() -> None:
    assert len(SHELL) >= 5 and len(PYTHON) >= 4 and "CLIPS=" in SHELL[0]


@pytest.mark.parametrize("index", range(1, len(SHELL)))
def test_shell_block(index: int, tmp_path: Path) -> None:
    code = SHELL[index]
    need_everything(code)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    script = "set -euo pipefail\n" + SHELL[0].replace("avdnn models\n", "") + code
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "frames: read" in done.stderr  # the run's frame accounting


def test_first_shell_block_lists_models(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if importlib.util.find_spec("skvideo") is None:
        pytest.skip("pip install --no-deps scikit-video==1.1.11")
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + SHELL[0] + 'test -f "$CLIPS/bikes.mp4"'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "blazeface" in done.stdout, done.stderr


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_block(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = PYTHON[index]
    need_everything(code)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{DOC.name}[python {index}]", "exec"), {"__name__": "__cookbook__"})
    assert capsys.readouterr().out.strip()  # every snippet prints what it made
