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
import subprocess
import sys
from pathlib import Path

import pytest
from spine_util import avdnn_script

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
    avdnn_script()
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
    assert len(blocks) == len(PRINTS)
    for code, check in zip(blocks, PRINTS, strict=True):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), {})
        printed = out.getvalue()
        assert "accounting violation" not in printed, printed
        check(printed.splitlines())


def _faces(lines: list[str]) -> None:
    """``1 ('face',) 30``: a face in the 30th frame of carphone, 30 frames written."""
    (line,) = lines
    m = re.fullmatch(r"(\d+) \('face',(?: 'face',)*\) 30", line)
    assert m and int(m.group(1)) >= 1, line


def _frames_and_stats(lines: list[str]) -> None:
    """Five 320-wide RGB frames with their pts and times, then the books of two runs."""
    times = ["0.0", "0.04", "0.08", "0.12", "0.16"]  # pts 512 apart in 1/12800: 25 fps
    assert lines[:5] == [f"{512 * k} {t} (180, 320, 3)" for k, t in enumerate(times)], lines[:5]
    assert re.fullmatch(r"\d+ 25 0 \{\}", lines[5]), lines[5]  # read, written (1 s at 25 fps), failed, failures
    text = "\n".join(lines[6:])
    assert "written 25, failed 0" in text and "stream 0:1 audio" in text
    assert re.search(r"frames: read \d+, written 10, failed 0", text), text


def _many(lines: list[str]) -> None:
    """run_many's two outputs, then open_many's frames: each source whole and in its own order."""
    text = "\n".join(lines)
    assert "output #0 'out/try_a.mkv'" in text and "frames: read 120, written 120, failed 0" in text
    assert "output #1 'out/try_b.mkv'" in text and re.search(r"frames: read \d+, written 25, failed 0", text)
    rows = [tuple(map(int, line.split())) for line in lines if re.fullmatch(r"[01] \d+", line)]
    assert [pts for k, pts in rows if k == 0] == [1001 * n for n in range(120)]
    assert [pts for k, pts in rows if k == 1] == [512 * n for n in range(10)]


def _zone_events(lines: list[str]) -> None:
    """The face's life in the left zone as events (seq, type, id, zone, time), then the books."""
    rows = [line.split() for line in lines if re.match(r"\d+ (new|enter|exit|update|end) ", line)]
    assert [int(r[0]) for r in rows] == list(range(len(rows))) and rows, lines
    kinds = [r[1] for r in rows]
    assert kinds[0] == "new" and kinds[-1] == "end" and "enter" in kinds, kinds
    text = "\n".join(lines)
    assert "frames: read 120, written 120, failed 0" in text, text
    assert f"produced {len(rows)} " in text and f"published {len(rows)}, dropped 0, buffered 0" in text, text
    m = re.search(r"zone left: inside \d+, entered (\d+) \(\d+ objects?\), exited (\d+)", text)
    assert m and int(m.group(1)) == kinds.count("enter") and int(m.group(2)) == kinds.count("exit"), text


#: what each README python block prints, checked in order
PRINTS = [_faces, _frames_and_stats, _many, _zone_events]
