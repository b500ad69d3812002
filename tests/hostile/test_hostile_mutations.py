"""Damaged and odd media, avdnn against the oracle: every case ends with ffmpeg 9.0.2's exit status.

A second of each sample clip, made small by the oracle and remuxed into MP4 (moov at the end
and ``+faststart``), Matroska, MPEG-TS, AVI and FLV, is damaged by seeded mutations
(:mod:`mutate`: bits flipped, bytes written over the payload, cuts at 10/50/97 %, the header
damaged, the head of one file spliced onto the tail of another, chunks swapped), and given
odd tags (Latin-1, a NUL, a 100 kB value). Each case runs ``-i X -f null -`` and
``-i X -vf scale=64:48 -f framemd5 -`` through avdnn's CLI (in this process, on a thread with
a bound: a hang fails the case) and through the oracle with the same arguments: the exit
statuses are equal, and avdnn's stderr holds no traceback and, when it fails, one error line.
The frames' hashes are not compared (libswscale and the concealment of damaged slices may
differ between FFmpeg 8.1 and 9.0); the statuses are the contract.

Open failures also say ffmpeg's cause: a missing file, a directory, a file the user may not
read, an empty one, garbage, a header cut short.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mutate import CONTAINERS, MUTATIONS, make_clips, oracle, patch_tag
from spine_util import Result, missing, run_cli

BOUND = 60  # seconds one run may take on a loaded machine; a hang (for ever) fails the case
COMMON = ["-hide_banner", "-nostdin", "-nostats"]
COMMANDS = {"null": ["-f", "null", "-"], "chain": ["-vf", "scale=64:48", "-f", "framemd5", "-"]}
LATIN1 = b"Caf\xe9 \xe0 Z\xfcrich"  # as an old camera writes its title
HUGE = 100_000  # bytes of the huge tag (one argv word holds at most 128 KiB)


def _tag_cases() -> dict[str, tuple[str, list[str], list[tuple[bytes, bytes]]]]:
    """Odd tags: a container, the oracle's -metadata options, and the bytes patched in after."""
    title = b"T" * len(LATIN1)
    comment = b"C" * len(LATIN1)
    huge = b"H" * HUGE
    return {
        "tag-mkv-latin1-title": ("mkv", ["-metadata", f"title={title.decode()}"], [(title, LATIN1)]),
        "tag-mkv-latin1-stream": ("mkv", ["-metadata:s:v:0", f"comment={comment.decode()}"], [(comment, LATIN1)]),
        "tag-mkv-nul-title": ("mkv", ["-metadata", f"title={title.decode()}"], [(title, b"ab\x00" + LATIN1[3:])]),
        "tag-mkv-huge-latin1": ("mkv", ["-metadata", f"title={huge.decode()}"], [(huge, b"\xe9" * HUGE)]),
        "tag-mp4-latin1-title": ("mp4", ["-metadata", f"title={title.decode()}"], [(title, LATIN1)]),
        "tag-mp4-latin1-handler": (
            "mp4",
            ["-metadata:s:v:0", f"handler_name={comment.decode()}"],
            [(comment, LATIN1)],
        ),
        "tag-mp4-nul-title": ("mp4", ["-metadata", f"title={title.decode()}"], [(title, b"\x00" + LATIN1[1:])]),
        "tag-avi-latin1-title": ("avi", ["-metadata", f"title={title.decode()}"], [(title, LATIN1)]),
        "tag-flv-latin1-title": ("flv", ["-metadata", f"title={title.decode()}"], [(title, LATIN1)]),
    }


TAG_CASES = _tag_cases()
CASES = [m.id for m in MUTATIONS] + list(TAG_CASES)


@pytest.fixture(scope="module")
def damaged(ffmpeg: str, clip: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every case's file, by case id."""
    root = tmp_path_factory.mktemp("mutations")
    clips = make_clips(ffmpeg, clip, root)
    files = {}
    for m in MUTATIONS:
        files[m.id] = root / f"{m.id}.{m.clip.split('.', 1)[1]}"
        files[m.id].write_bytes(m.make(clips[m.clip], clips))
    for case, (ext, opts, patches) in TAG_CASES.items():
        path = root / f"{case}.{ext}"
        oracle(ffmpeg, ["-i", str(root / "car.master.mkv"), "-c", "copy", *opts, *CONTAINERS[ext], str(path)])
        data = path.read_bytes()
        for placeholder, value in patches:
            data = patch_tag(data, placeholder, value)
        path.write_bytes(data)
        files[case] = path
    return files


def _oracle_status(ffmpeg: str, path: Path, command: list[str]) -> int | str:
    try:
        proc = subprocess.run(
            [ffmpeg, *COMMON, "-i", str(path), *command],
            capture_output=True,
            timeout=BOUND,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return "no end"
    return proc.returncode


@pytest.fixture(scope="module")
def oracle_status(ffmpeg: str, damaged: dict[str, Path]) -> dict[tuple[str, str], int | str]:
    """The oracle's exit status for each case and command, run a few at a time."""
    jobs = [(case, name) for case in CASES for name in COMMANDS]
    with ThreadPoolExecutor(max_workers=3) as pool:
        statuses = pool.map(lambda job: _oracle_status(ffmpeg, damaged[job[0]], COMMANDS[job[1]]), jobs)
        return dict(zip(jobs, statuses, strict=True))


def run_bounded(argv: list[str]) -> Result:
    """avdnn's CLI in this process, on a thread: past BOUND seconds the case fails as a hang."""
    box: list[Result] = []
    thread = threading.Thread(target=lambda: box.append(run_cli(argv)), daemon=True)
    thread.start()
    thread.join(BOUND)
    if thread.is_alive():
        raise AssertionError(f"avdnn {' '.join(argv)} did not end within {BOUND} s")
    assert box, "the CLI raised instead of returning a status"
    return box[0]


def ends_well(res: Result) -> None:
    """No traceback; a failure is one error line (and the CLI's note on the output it finished)."""
    assert "Traceback" not in res.err and "internal error" not in res.err, res.err
    if res.rc != 0:
        errors = [
            line for line in res.err.splitlines() if line.startswith("avdnn: ") and "was finished cleanly" not in line
        ]
        assert len(errors) == 1, res.err


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_or_odd_file_ends_as_ffmpeg_ends_it(
    case: str, damaged: dict[str, Path], oracle_status: dict[tuple[str, str], int | str]
) -> None:
    for name, command in COMMANDS.items():
        res = run_bounded([*COMMON, "-i", str(damaged[case]), *command])
        ends_well(res)
        assert res.rc == oracle_status[case, name], (name, oracle_status[case, name], res.rc, res.err[-2000:])


def test_a_mapped_stream_without_channels_ends_as_ffmpeg_ends_it(ffmpeg: str, damaged: dict[str, Path]) -> None:
    """A TS cut before its first audio packet: the probe found no channels. Not picked by default
    (the cases above); mapped, libavfilter's abuffer refuses it, EINVAL (a traceback before)."""
    for spec in ("0", "0:a"):
        command = ["-map", spec, "-f", "null", "-"]
        res = run_bounded([*COMMON, "-i", str(damaged["bbb.ts-cut10"]), *command])
        ends_well(res)
        assert res.rc == _oracle_status(ffmpeg, damaged["bbb.ts-cut10"], command) == 234, res.err


# -- open failures: the cause and the status ffmpeg gives ---------------------------------------------------


def _cause(ffmpeg_err: str) -> str:
    """ffmpeg's cause of an open failure: its last line, ``Error opening input files: CAUSE``."""
    last = ffmpeg_err.strip().splitlines()[-1]
    prefix = "Error opening input files: "
    assert last.startswith(prefix), ffmpeg_err
    return last[len(prefix) :]


def _unopenable(kind: str, root: Path) -> Path:
    path = root / f"{kind}.mkv"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(random.Random("garbage").randbytes(4096))
    elif kind == "ebml-only":  # Matroska's EBML header and nothing after it
        path.write_bytes(bytes.fromhex("1a45dfa3a34286810142f7810142f2810442f381084282886d6174726f736b61"))
    return path


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "garbage", "ebml-only"])
@pytest.mark.parametrize("probe", [False, True], ids=["run", "probe"])
def test_an_open_failure_says_ffmpegs_cause(ffmpeg: str, tmp_path: Path, kind: str, probe: bool) -> None:
    path = _unopenable(kind, tmp_path)
    output = [] if probe else ["-f", "null", "-"]  # "-i X" alone: ffmpeg's probe, which must open X too
    proc = subprocess.run([ffmpeg, *COMMON, "-i", str(path), *output], capture_output=True, timeout=BOUND, check=False)
    res = run_bounded([*COMMON, "-i", str(path), *output])
    ends_well(res)
    assert res.rc == proc.returncode != 0, (res.err, proc.returncode)
    line = next(line for line in res.err.splitlines() if line.startswith("avdnn: "))
    assert line == f"avdnn: '{path}': {_cause(proc.stderr.decode())}", (line, proc.stderr)


def test_a_file_the_user_may_not_read_is_permission_denied(ffmpeg: str, tmp_path: Path) -> None:
    """Both programs as a user without the right to read it (root: without the capability to
    override file permissions, which setpriv drops), in a subprocess each."""
    path = tmp_path / "secret.mkv"
    path.write_bytes(b"\x1a\x45\xdf\xa3")
    path.chmod(0)
    drop: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            missing("tools", "setpriv (util-linux) to run as root without CAP_DAC_OVERRIDE")
        drop = [str(setpriv), "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search"]
    argv = [*COMMON, "-i", str(path), "-f", "null", "-"]
    theirs = subprocess.run([*drop, ffmpeg, *argv], capture_output=True, timeout=BOUND, check=False)
    ours = subprocess.run(
        [*drop, sys.executable, "-m", "avdnn", *argv],
        capture_output=True,
        timeout=BOUND,
        check=False,
    )
    err = ours.stderr.decode()
    assert "Traceback" not in err
    assert ours.returncode == theirs.returncode == 243, (err, theirs.stderr)
    assert err.strip().splitlines()[-1] == f"avdnn: '{path}': {_cause(theirs.stderr.decode())}"
