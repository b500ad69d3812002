"""The seeds' fault table through the real command line (FFmpeg's test method from seed 001).

Fault injection makes the worker for the partial last batch fail to start; the CLI must exit
with ffmpeg's status for the mapped code, print one line naming the cause, and leave an output
holding exactly the frames before it. Without injection the output is MD5-unchanged (identity
model: the input's MD5, the value seed 001 reports from FFmpeg).
"""

from __future__ import annotations

import errno
import io
import re
import sys
from pathlib import Path

import av
import pytest
from onnx_models import identity

from avdnn.api import exit_status
from avdnn.cli.command import main
from avdnn.dnn import faults
from avdnn.errors import AVERROR, AVERROR_EXTERNAL

SRC = ["-f", "lavfi", "-i", "testsrc=s=64x64:d=0.4"]  # 10 frames
IDENTITY_MD5 = "eadd543ed2bc6e4e16e9295f92a11f5c"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.BytesIO()
    wrapper = io.TextIOWrapper(out)
    old, sys.stdout = sys.stdout, wrapper
    try:
        rc = main(argv)
        wrapper.flush()
    finally:
        sys.stdout = old
    return rc, out.getvalue().decode(), capsys.readouterr().err


def test_unchanged_md5_without_injection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = identity(tmp_path, 3)
    for opts in ("async=0", "async=1:nireq=2:batch_size=3"):
        rc, out, _ = _cli(
            ["-hide_banner", *SRC, "-vf", f"format=rgb24,dnn_processing=model={model}:{opts}", "-f", "md5", "-"], capsys
        )
        assert rc == 0 and out == f"MD5={IDENTITY_MD5}\n"


@pytest.mark.parametrize(
    ("err", "code", "text"),
    [
        (errno.EAGAIN, AVERROR_EXTERNAL, "Resource temporarily unavailable"),
        (errno.EINVAL, AVERROR(errno.EINVAL), "Invalid argument"),
        (errno.EPERM, AVERROR(errno.EPERM), "Operation not permitted"),
    ],
    ids=["EAGAIN", "EINVAL", "EPERM"],
)
@pytest.mark.parametrize("output", ["framemd5", "out.mkv"])
def test_worker_start_failure_at_eof(
    err: int, code: int, text: str, output: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = identity(tmp_path, 3)
    target = ["-f", "framemd5", "-"] if output == "framemd5" else ["-y", str(tmp_path / output)]
    with faults.inject(faults.Fault("worker_start", errno=err, in_flush=True)):
        rc, out, errs = _cli(
            ["-hide_banner", *SRC, "-vf", f"format=rgb24,dnn_processing=model={model}:batch_size=3:nireq=2", *target],
            capsys,
        )
    assert rc == exit_status(code) != 0
    first = next(line for line in errs.splitlines() if line.startswith("avdnn: "))
    assert first.startswith("avdnn: dnn_processing: Unable to start async inference: ") and text in first
    assert "Traceback" not in errs
    assert re.search(r"frames: read \d+, written 9, failed 1", errs)
    if output == "framemd5":  # 3 full batches of 3 came out; the partial last one failed
        assert len([line for line in out.splitlines() if line and not line.startswith("#")]) == 9
    else:
        with av.open(str(tmp_path / output)) as c:
            assert sum(1 for _ in c.decode(video=0)) == 9
