"""avdnn's model cache: a converted model is made once, kept by what shapes it, checked on every load.

Converting a model is the slow part of starting a run (OpenVINO reads the zoo's 70 MB TensorFlow
graph in ~8 s and compiles it in as many), so the result is kept in a user cache folder:
``$AVDNN_CACHE``, else ``$XDG_CACHE_HOME/avdnn``, else ``~/.cache/avdnn``. Layout::

    <root>/<kind>/<key>/          one entry: its files and manifest.json
    <root>/hashes/<id>.json       a source file's sha256, by (path, size, mtime)
    <root>/openvino-blobs/        OpenVINO's own CACHE_DIR (compiled blobs, keyed and checked by it)
    <root>/*.onnx, <root>/*.pt2   the zoo's one-time exports (avdnn.zoo.export)

An entry's key is the sha256 of its *material*: everything that shapes the conversion (the
source file's sha256, the runtime's version, the cut points, the input shape...), so a new
file, a new runtime or another option is another entry, never a stale one. Entries are built in
a temporary folder and renamed into place (two processes converting the same model at once
both finish; the second uses the first's entry). Nothing is trusted blindly: a manifest whose
material, file sizes or file hashes disagree is a damaged entry, removed and rebuilt.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST",
    "Entry",
    "blob_dir",
    "build",
    "builds",
    "cache_dir",
    "clear",
    "discard",
    "entries",
    "file_sha256",
    "get",
    "invalidate",
    "key_of",
    "lookup",
]

log = logging.getLogger("avdnn.dnn.cache")

MANIFEST = "manifest.json"
#: kinds whose folders hold entries (``avdnn models --cache`` lists them); others are the runtime's
_HASHES = "hashes"
_BLOBS = "openvino-blobs"
#: entries built by this process, per kind (tests count conversions with it, never time)
builds: Counter[str] = Counter()
_lock = threading.Lock()
_warned_readonly = False


def cache_dir() -> Path:
    """The cache's root folder (not created here)."""
    root = os.environ.get("AVDNN_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg, "avdnn") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "avdnn")
    return Path(root)


def blob_dir() -> Path | None:
    """OpenVINO's CACHE_DIR inside the cache; None when the cache folder cannot be written."""
    path = cache_dir() / _BLOBS
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def key_of(material: Mapping[str, Any]) -> str:
    """The entry key: sha256 of the material as canonical JSON."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(path: Path | str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def file_sha256(path: str) -> str:
    """The sha256 of a source file, computed once per (path, size, mtime) and kept in the cache."""
    real = os.path.realpath(path)
    st = os.stat(real)
    record = cache_dir() / _HASHES / (hashlib.sha256(real.encode()).hexdigest()[:32] + ".json")
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(record.read_text())
        if known["path"] == real and known["size"] == st.st_size and known["mtime_ns"] == st.st_mtime_ns:
            return str(known["sha256"])
    digest = _digest(real)
    with contextlib.suppress(OSError):
        _write_atomic(
            record, json.dumps({"path": real, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest})
        )
    return digest


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass(frozen=True)
class Entry:
    """One cache entry: its folder and manifest (``temporary``: made outside the cache, not kept)."""

    path: Path
    manifest: Mapping[str, Any]
    temporary: bool = False

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def key(self) -> str:
        return str(self.manifest["key"])


def _folder(kind: str, key: str) -> Path:
    return cache_dir() / kind / key[:32]


def _check(folder: Path, key: str) -> Mapping[str, Any] | str:
    """The manifest of a sound entry, or why it is not."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        return f"no readable manifest ({exc.__class__.__name__})"
    if not isinstance(manifest, dict) or manifest.get("key") != key:
        return "its manifest names another key"
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return "its manifest lists no files"
    for name, want in files.items():
        path = folder / name
        try:
            size = path.stat().st_size
        except OSError:
            return f"{name} is missing"
        if size != want.get("size"):
            return f"{name} has {size} bytes, not {want.get('size')}"
        if _digest(path) != want.get("sha256"):
            return f"{name} does not hash to its manifest's sha256"
    return manifest


def lookup(kind: str, material: Mapping[str, Any]) -> Entry | None:
    """The sound entry for ``material``, or None; a damaged one is removed (and logged)."""
    key = key_of(material)
    folder = _folder(kind, key)
    if not folder.is_dir():
        return None
    found = _check(folder, key)
    if isinstance(found, str):
        log.warning("model cache: entry %s is damaged (%s); rebuilding it", folder, found)
        _remove(folder)
        return None
    return Entry(folder, found)


def invalidate(entry: Entry) -> None:
    """Drop an entry its reader could not use (the runtime failed to read it)."""
    if not entry.temporary:
        log.warning("model cache: entry %s could not be read; rebuilding it", entry.path)
    _remove(entry.path)


def discard(kind: str, material: Mapping[str, Any]) -> None:
    """Remove the entry for ``material`` if there is one (before building a replacement)."""
    folder = _folder(kind, key_of(material))
    if folder.is_dir():
        _remove(folder)


def _remove(folder: Path) -> None:
    """Move a folder aside atomically, then delete it (a reader never sees half an entry)."""
    trash = folder.with_name(f".trash-{folder.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(folder, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def build(
    kind: str, material: Mapping[str, Any], make: Callable[[Path], Mapping[str, Any] | None], *, describe: str = ""
) -> Entry:
    """Build an entry: ``make(folder)`` writes its files (and may return manifest extras).

    The entry appears whole or not at all. When another process published the same key first,
    its entry is used if sound. OSError when the cache folder cannot be written.
    """
    key = key_of(material)
    final = _folder(kind, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:32]}-", dir=final.parent))
    try:
        extras = make(tmp) or {}
        manifest = _publish(tmp, key, material, extras, describe)
        with _lock:
            builds[kind] += 1
        for _ in range(3):
            try:
                os.rename(tmp, final)
                return Entry(final, manifest)
            except OSError:  # another process published this key first
                found = _check(final, key)
                if not isinstance(found, str):
                    return Entry(final, found)
                _remove(final)
        raise OSError(f"model cache: could not publish {final}")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _publish(
    folder: Path, key: str, material: Mapping[str, Any], extras: Mapping[str, Any], describe: str
) -> dict[str, Any]:
    files = {
        p.name: {"size": p.stat().st_size, "sha256": _digest(p)}
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    manifest = {
        "key": key,
        "material": dict(material),
        "files": files,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "describe": describe,
        **extras,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def get(
    kind: str, material: Mapping[str, Any], make: Callable[[Path], Mapping[str, Any] | None], *, describe: str = ""
) -> Entry:
    """The entry for ``material``, built the first time.

    When the cache folder cannot be written the entry is made in a temporary folder (deleted
    when the process ends) and a warning says so once: the run works, it just converts again.
    """
    global _warned_readonly
    found = lookup(kind, material)
    if found is not None:
        return found
    try:
        return build(kind, material, make, describe=describe)
    except OSError as exc:
        if not _warned_readonly:
            _warned_readonly = True
            log.warning(
                "model cache: %s cannot be written (%s); converting without keeping the result", cache_dir(), exc
            )
    tmp = Path(tempfile.mkdtemp(prefix="avdnn-model-"))
    _cleanup.append(tmp)
    extras = make(tmp) or {}
    with _lock:
        builds[kind] += 1
    return Entry(tmp, {"key": key_of(material), "material": dict(material), **extras}, temporary=True)


_cleanup: list[Path] = []


def _clean_temporary() -> None:
    for path in _cleanup:
        shutil.rmtree(path, ignore_errors=True)


atexit.register(_clean_temporary)


@dataclass(frozen=True)
class Listed:
    """An entry as ``avdnn models --cache`` shows it."""

    kind: str
    path: Path
    size: int
    describe: str
    created: str
    sound: bool


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def entries() -> Iterator[Listed]:
    """Every entry in the cache (damaged ones too, marked), then OpenVINO's blob folder."""
    root = cache_dir()
    if not root.is_dir():
        return
    for kind in sorted(p for p in root.iterdir() if p.is_dir() and p.name not in (_HASHES, _BLOBS)):
        for folder in sorted(p for p in kind.iterdir() if p.is_dir() and not p.name.startswith(".")):
            try:
                manifest = json.loads((folder / MANIFEST).read_text())
            except (OSError, ValueError):
                manifest = {}
            sound = bool(manifest) and not isinstance(_check(folder, str(manifest.get("key"))), str)
            yield Listed(
                kind.name,
                folder,
                _size(folder),
                str(manifest.get("describe", "")),
                str(manifest.get("created", "")),
                sound,
            )
    blobs = root / _BLOBS
    if blobs.is_dir() and any(blobs.iterdir()):
        yield Listed(_BLOBS, blobs, _size(blobs), "OpenVINO compiled blobs (CACHE_DIR)", "", True)


def clear() -> int:
    """Remove every entry, the hashes and OpenVINO's blobs (not the zoo's exports); bytes freed."""
    root = cache_dir()
    if not root.is_dir():
        return 0
    freed = 0
    for sub in root.iterdir():
        if sub.is_dir():
            freed += _size(sub)
            _remove(sub)
    return freed
