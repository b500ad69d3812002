"""Fixtures of the batch tests: one real local Ray for the session, a corpus of real clips, the oracles.

The Ray is started here (loopback only, no dashboard) and shut down at the end of the session;
the batch runs of the tests find it initialised and use it as it is, so each test pays for
actors, not for a cluster. Workers import avdnn from this checkout: its ``src`` goes first on
the PYTHONPATH the Ray processes inherit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_util import CORPUS, clips, make_corpus
from spine_util import run_cli

import avdnn

SRC = str(Path(avdnn.__file__).resolve().parents[1])
# before any test module imports Ray: the session's local node then binds to loopback (see import_ray)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture(scope="session")
def ray_env() -> Iterator[None]:
    """The environment every Ray process of the tests inherits (this checkout first on the path)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([SRC, *([old] if old else [])])
    yield
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="session")
def ray_local(ray_env: None) -> Iterator[Any]:
    """A real local Ray with 2 CPUs for the session, bound to loopback, stopped at the end."""
    pytest.importorskip("ray")
    from avdnn.batch.runner import import_ray

    ray = import_ray(loopback=True)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local", num_cpus=2, num_gpus=0, include_dashboard=False, logging_level="ERROR", log_to_driver=False
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The one-file run's framemd5 of each source clip (``avdnn -i CLIP -f framemd5 OUT``)."""
    out: dict[str, bytes] = {}
    tmp = tmp_path_factory.mktemp("oracle")
    for name, path in clips().items():
        if name not in CORPUS.values():
            continue
        dst = tmp / f"{name}.framemd5"
        res = run_cli(["-hide_banner", "-loglevel", "error", "-i", path, "-f", "framemd5", str(dst)])
        assert res.rc == 0, res.err
        out[name] = dst.read_bytes()
    return out


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return make_corpus(tmp_path)
