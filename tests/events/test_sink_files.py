"""The files filters write (``metadata_jsonl=file=``, ``events=file=``): never truncated without -y, and
the file sink's accounting equal to what reached the file, on a full device and a file that cannot grow.

ffmpeg refuses an existing output without -y; avdnn refuses an existing sink file the same way
(the same line as for its output, naming the filter; exit status 239 as for the output), and
creates a new one with O_EXCL so that a file appearing after the check is refused too.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from spine_util import run_ffmpeg

import avdnn
from avdnn.errors import IOFailureError
from avdnn.events.sinks.base import SinkStats

SRC = ["-f", "lavfi", "-i", "testsrc=s=64x64:r=25:d=0.4"]  # 10 frames
KEEP = b"an earlier run's records\n"

#: the two filters that write a file, each with the chain that makes it write ``{path}``
WRITERS = {
    "metadata_jsonl": "metadata_jsonl=file={path}",
    "events": "events=file={path}:frames=1",
}


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("avdnn: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_an_existing_sink_file_is_refused_as_an_existing_output_is(
    writer: str, ffmpeg: str, avdnn_cli: Callable[..., Any], tmp_path: Path
) -> None:
    kept, out = tmp_path / "kept.jsonl", tmp_path / "new.mkv"
    kept.write_bytes(KEEP)
    chain = WRITERS[writer].format(path=kept)
    # the output's own refusal, for comparison: same words, same status
    existing = tmp_path / "existing.mkv"
    existing.write_bytes(b"")
    as_output = avdnn_cli(["-hide_banner", *SRC, str(existing)])
    res = avdnn_cli(["-hide_banner", *SRC, "-vf", chain, "-c:v", "ffv1", str(out)])
    assert res.rc == as_output.rc == 239
    assert _error_line(res.err) == f"avdnn: {writer}: File '{kept}' already exists. Use -y to overwrite."
    assert _error_line(as_output.err) == f"avdnn: File '{existing}' already exists. Use -y to overwrite."
    assert kept.read_bytes() == KEEP and not out.exists()  # refused before the output was created
    # -n: ffmpeg's own line for an existing output (9.0.2, non-interactive), with the filter's name
    oracle = run_ffmpeg(ffmpeg, [*SRC, "-f", "rawvideo", str(kept)])
    (said,) = [line for line in oracle.err.splitlines() if "already exists" in line]
    assert said == f"File '{kept}' already exists. Exiting."
    res = avdnn_cli(["-hide_banner", "-n", *SRC, "-vf", chain, "-f", "null", "-"])
    assert res.rc == 239 and _error_line(res.err) == f"avdnn: {writer}: {said}"
    assert kept.read_bytes() == KEEP
    # -y: replaced, as the output would be
    res = avdnn_cli(["-hide_banner", "-y", *SRC, "-vf", chain, "-f", "null", "-"])
    assert res.rc == 0, res.err
    lines = kept.read_text().splitlines()
    assert len(lines) == 10 and all(json.loads(line)["type"] == "frame" for line in lines)


@pytest.mark.parametrize("writer", list(WRITERS))
def test_the_api_keeps_an_existing_sink_file_unless_overwrite(writer: str, tmp_path: Path) -> None:
    kept, out = tmp_path / "kept.jsonl", tmp_path / "o.mkv"
    kept.write_bytes(KEEP)
    chain = WRITERS[writer].format(path=kept)
    with pytest.raises(OSError, match=re.escape(f"{writer}: File '{kept}' already exists. Use -y to overwrite.")):
        avdnn.run("testsrc=s=64x64:r=25:d=0.4", chain, input_format="lavfi", output=str(out), codec="ffv1")
    with pytest.raises(OSError, match="already exists"):
        list(avdnn.run("testsrc=s=64x64:r=25:d=0.4", chain, input_format="lavfi"))  # frames iterated
    assert kept.read_bytes() == KEEP and not out.exists()
    frames = list(avdnn.run("testsrc=s=64x64:r=25:d=0.4", chain, input_format="lavfi", overwrite=True))
    assert len(frames) == 10 and len(kept.read_text().splitlines()) == 10
    with pytest.raises(ValueError, match="overwrite: output options, but the run has no output"):
        list(avdnn.run("testsrc=s=64x64:r=25:d=0.4", "hflip", input_format="lavfi", overwrite=True))  # no file


def test_a_file_that_appears_after_the_check_is_refused_not_truncated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The filter opens its file with O_EXCL: the run's check passing first does not let it truncate."""
    from avdnn.run import builder

    kept = tmp_path / "late.jsonl"
    monkeypatch.setattr(builder, "refuse_existing", lambda paths, overwrite: kept.write_bytes(KEEP))  # it appears
    with pytest.raises(IOFailureError, match=r"metadata_jsonl: File .* already exists") as err:
        avdnn.run(
            "testsrc=s=64x64:r=25:d=0.4",
            f"metadata_jsonl=file={kept}",
            input_format="lavfi",
            output=str(tmp_path / "o.mkv"),
            codec="ffv1",
        )
    assert err.value.code == -errno.EEXIST
    assert kept.read_bytes() == KEEP


def _file_sink(stats: avdnn.RunStats) -> SinkStats:
    (sink,) = [r for r in stats.reports if isinstance(r, SinkStats) and r.kind == "file"]
    return sink


def test_a_full_device_publishes_nothing_and_drops_every_line_with_its_cause() -> None:
    """/dev/full takes no byte (ENOSPC on every write): nothing is counted published."""
    assert os.path.exists("/dev/full"), "Linux's /dev/full"
    stream = avdnn.run(
        "testsrc=s=64x64:r=25:d=0.4", "events=file=/dev/full:frames=1", input_format="lavfi", overwrite=True
    )
    assert len(list(stream)) == 10
    snap = _file_sink(stream.stats).snapshot()
    assert (snap["produced"], snap["published"], snap["buffered"]) == (10, 0, 0)
    assert snap["dropped"] == {"write failed: No space left on device": 10}
    assert snap["last_error"] == "write failed: No space left on device"
    assert stream.stats.check(), stream.stats.violations()


_LIMITED = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
sys.argv = ["avdnn", *sys.argv[2:]]
runpy.run_module("avdnn", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("direct", [0, 1])
def test_a_file_that_cannot_grow_holds_exactly_the_published_lines(direct: int, tmp_path: Path) -> None:
    """The OS takes part of the lines (RLIMIT_FSIZE: a short write, then EFBIG): what it took whole is
    published, the rest dropped with the OS's cause, and the file holds whole lines only."""
    events = tmp_path / "e.jsonl"
    chain = f"events=file={events}:frames=1:direct={direct}"
    argv = [
        "-hide_banner",
        "-nostdin",
        "-f",
        "lavfi",
        "-i",
        "testsrc=s=64x64:r=25:d=1.6",
        "-vf",
        chain,
        "-f",
        "null",
        "-",
    ]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _LIMITED, "3000", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    m = re.search(
        r"events to file '[^']*': 40 frames: published (\d+), dropped (\d+) \(write failed: File too large (\d+)\), "
        r"buffered 0",
        proc.stderr,
    )
    assert m, proc.stderr
    published, dropped, efbig = map(int, m.groups())
    assert published + dropped == 40 and dropped == efbig and published > 0 and dropped > 0
    text = events.read_bytes()
    assert len(text) <= 3000 and text.endswith(b"\n")
    lines = text.decode().splitlines()
    assert len(lines) == published and [json.loads(line)["n"] for line in lines] == list(range(published))


def test_a_sink_file_in_a_filter_complex_graph_is_kept_too(avdnn_cli: Callable[..., Any], tmp_path: Path) -> None:
    kept, out = tmp_path / "kept.jsonl", tmp_path / "new.mkv"
    kept.write_bytes(KEEP)
    graph = f"[0:v]split[a][b];[a]metadata_jsonl=file={kept}[v];[b]nullsink"
    res = avdnn_cli(["-hide_banner", *SRC, "-filter_complex", graph, "-map", "[v]", "-c:v", "ffv1", str(out)])
    assert res.rc == 239
    assert _error_line(res.err) == f"avdnn: metadata_jsonl: File '{kept}' already exists. Use -y to overwrite."
    assert kept.read_bytes() == KEEP and not out.exists()
