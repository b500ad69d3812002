"""avdnn's model cache: a TensorFlow graph converted once for OpenVINO, checked on every load.

Conversions are counted (``cache.builds``), never timed. Each test has its own cache folder.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from bkutil import skip_reason
from spine_util import missing

from avdnn.dnn.backends import cache
from avdnn.dnn.backends.openvino import OpenVINOBackend
from avdnn.dnn.interface import DNNFunctionType, ModelConfig
from avdnn.errors import InvalidArgumentError

#: the backend feeds pixels (uint8 NHWC); a detect model sees their values as floats
X = np.random.default_rng(1).integers(0, 256, (1, 5, 7, 3), dtype=np.uint8)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AVDNN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[float, str]:
    """Frozen graphs x -> a = kx -> y = a + 1 for k = 2, 3 (``a`` is a cut point, not an output)."""
    why = skip_reason("openvino_pb")
    if why:
        missing("extras", why)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    out = {}
    for k in (2.0, 3.0):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, None, None, 3], name="x")
            a = tf.multiply(x, k, name="a")
            tf.add(a, 1.0, name="y")
        path = tmp_path_factory.mktemp("graph") / "two_step.pb"
        path.write_bytes(g.as_graph_def().SerializeToString())
        out[k] = str(path)
    return out


@pytest.fixture
def graph(graphs: dict[float, str]) -> str:
    return graphs[2.0]


def load(path: str, *outputs: str) -> list[np.ndarray]:
    model = OpenVINOBackend.load(
        ModelConfig(path=path, func_type=DNNFunctionType.ANALYTICS_DETECT, output_names=outputs)
    )
    try:
        return model.run(X)
    finally:
        model.close()


def entries(root: Path, kind: str = "openvino") -> list[Path]:
    folder = root / kind
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def test_second_load_reads_the_cached_ir(root: Path, graph: str) -> None:
    before = cache.builds["openvino"]
    (y,) = load(graph)
    assert cache.builds["openvino"] == before + 1
    (entry,) = entries(root)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert set(manifest["files"]) == {"model.xml", "model.bin"}
    assert manifest["material"]["source_sha256"] == cache.file_sha256(graph)
    (again,) = load(graph)
    assert cache.builds["openvino"] == before + 1  # no second conversion
    np.testing.assert_array_equal(again, y)
    np.testing.assert_allclose(y, 2.0 * X + 1, rtol=1e-6)


def test_output_names_a_cut_point(root: Path, graph: str) -> None:
    (a,) = load(graph, "a")
    np.testing.assert_allclose(a, 2.0 * X, rtol=1e-6)
    (a0,) = load(graph, "a:0")  # TensorFlow's port suffix names the same tensor
    np.testing.assert_array_equal(a0, a)
    with pytest.raises(InvalidArgumentError, match="'nope' is not a tensor of the graph"):
        load(graph, "nope")


def test_the_key_follows_everything_that_shapes_the_conversion(
    root: Path, graphs: dict[float, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = graphs[2.0]
    load(graph)
    load(graph, "a")  # another cut: another entry
    assert len(entries(root)) == 2
    import openvino as ov

    monkeypatch.setattr(ov, "get_version", lambda: "2099.0.0-other")  # another runtime
    load(graph)
    assert len(entries(root)) == 3
    monkeypatch.undo()
    monkeypatch.setenv("AVDNN_CACHE", str(root))
    copy = tmp_path / "copy.pb"
    copy.write_bytes(Path(graph).read_bytes())  # the same bytes elsewhere: the same entry
    load(str(copy))
    assert len(entries(root)) == 3
    copy.write_bytes(Path(graphs[3.0]).read_bytes())  # other bytes at that path: another entry
    (y,) = load(str(copy))
    assert len(entries(root)) == 4
    np.testing.assert_allclose(y, 3.0 * X + 1, rtol=1e-6)


def test_the_source_hash_is_computed_once_per_path_size_and_mtime(
    root: Path, graph: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = cache.file_sha256(graph)
    calls: list[str] = []
    real = cache._digest
    monkeypatch.setattr(cache, "_digest", lambda p: calls.append(str(p)) or real(p))
    assert cache.file_sha256(graph) == digest and not calls
    os.utime(graph, ns=(1, 1))  # a touched file is hashed again
    assert cache.file_sha256(graph) == digest and len(calls) == 1


@pytest.mark.parametrize("damage", ["flip", "truncate", "manifest", "unreadable_ir"])
def test_a_damaged_entry_is_rebuilt(root: Path, graph: str, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    (y,) = load(graph)
    (entry,) = entries(root)
    bin_file = entry / "model.bin"
    if damage == "flip":  # same size, other bytes: only the hash sees it
        data = bytearray(bin_file.read_bytes())
        data[-1] ^= 0xFF
        bin_file.write_bytes(bytes(data))
    elif damage == "truncate":
        (entry / "model.xml").write_text((entry / "model.xml").read_text()[:100])
    elif damage == "manifest":
        (entry / "manifest.json").write_text("{")
    else:  # a manifest that agrees with files OpenVINO cannot read: the reader's failure rebuilds it
        (entry / "model.xml").write_text("<net>not an IR</net>")
        manifest = json.loads((entry / "manifest.json").read_text())
        manifest["files"]["model.xml"] = {
            "size": (entry / "model.xml").stat().st_size,
            "sha256": cache._digest(entry / "model.xml"),
        }
        (entry / "manifest.json").write_text(json.dumps(manifest))
    before = cache.builds["openvino"]
    with caplog.at_level(logging.WARNING, logger="avdnn.dnn.cache"):
        (again,) = load(graph)
    assert cache.builds["openvino"] == before + 1
    assert "rebuilding it" in caplog.text
    np.testing.assert_array_equal(again, y)
    (rebuilt,) = entries(root)
    assert cache.lookup("openvino", json.loads((rebuilt / "manifest.json").read_text())["material"]) is not None


def test_damaged_compiled_blobs_are_not_trusted(root: Path, graph: str) -> None:
    """OpenVINO's own CACHE_DIR: a blob that does not import is compiled again."""
    (y,) = load(graph)
    blobs = [p for p in (root / "openvino-blobs").iterdir() if p.is_file()]
    assert blobs
    for blob in blobs:
        blob.write_bytes(blob.read_bytes()[:64])
    (again,) = load(graph)
    np.testing.assert_array_equal(again, y)


def test_an_unwritable_cache_converts_without_keeping(
    graph: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("AVDNN_CACHE", str(blocker / "cache"))
    monkeypatch.setattr(cache, "_warned_readonly", False)
    with caplog.at_level(logging.WARNING, logger="avdnn.dnn.cache"):
        (y,) = load(graph)
    np.testing.assert_allclose(y, 2.0 * X + 1, rtol=1e-6)
    assert "cannot be written" in caplog.text


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from avdnn.dnn.backends import cache
    go = Path(sys.argv[1])
    def make(folder):
        while not go.exists():  # both writers convert at the same time
            time.sleep(0.01)
        (folder / "big.bin").write_bytes(bytes(range(256)) * 40000)
        time.sleep(0.2)
        (folder / "small.txt").write_text(sys.argv[2])
    entry = cache.get("test", {"what": "race"}, make)
    print(entry.path, (entry.path / "small.txt").read_text())
    """
)


def test_two_processes_converting_at_once_leave_one_sound_entry(root: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = {**os.environ, "AVDNN_CACHE": str(root)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(go), name], stdout=subprocess.PIPE, text=True, env=env)
        for name in ("one", "two")
    ]
    go.write_text("")
    outs = [p.communicate(timeout=60)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    (entry,) = entries(root, "test")
    assert {o[0] for o in outs} == {str(entry)}  # both use the one published entry
    assert {o[1] for o in outs} <= {"one", "two"} and len({o[1] for o in outs}) == 1
    found = cache.lookup("test", {"what": "race"})
    assert found is not None and found.path == entry
    assert not [p for p in (root / "test").iterdir() if p.name.startswith(".")]  # no leftovers


def test_avdnn_models_lists_and_clears_the_cache(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from avdnn.cli.models import main

    cache.build("openvino", {"what": "listed"}, lambda f: (f / "model.xml").write_text("x") and None, describe="a.pb")
    damaged = cache.build("openvino", {"what": "damaged"}, lambda f: (f / "model.bin").write_bytes(b"12") and None)
    (damaged.path / "model.bin").write_bytes(b"123")
    assert main(["--cache"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"model cache: {root}\n")
    assert "a.pb" in out and "(damaged: rebuilt at next use)" in out and "2 entries" in out
    assert main([]) == 0 and f"model cache: {root} (avdnn models --cache lists it)" in capsys.readouterr().out
    assert main(["--clear-cache"]) == 0
    assert "emptied" in capsys.readouterr().out
    assert not list(cache.entries())
