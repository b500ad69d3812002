"""One progress display for the whole corpus (tqdm): files done and failed, frames, fps and ETA."""

from __future__ import annotations

import sys
import time
from typing import Any

from avdnn.batch.report import FileReport
from avdnn.errors import BackendUnavailableError


class CorpusProgress:
    """A tqdm bar over files, its postfix the corpus's counts; a no-op when disabled."""

    def __init__(self, total: int, *, skipped: int = 0, enabled: bool = True) -> None:
        self.ok = 0
        self.failed = 0
        self.skipped = skipped
        self.frames = 0
        self.start = time.monotonic()
        self.bar: Any = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError as exc:
                raise BackendUnavailableError(
                    "the batch progress display needs tqdm: pip install 'avdnn[ray]'"
                ) from exc
            self.bar = tqdm(
                total=total, initial=skipped, unit="file", file=sys.stderr, dynamic_ncols=True, desc="avdnn batch"
            )
            self._postfix()

    def done(self, rep: FileReport) -> None:
        if rep.ok:
            self.ok += 1
        else:
            self.failed += 1
        self.frames += rep.frames_written
        if self.bar is not None:
            self._postfix()
            self.bar.update(1)

    def _postfix(self) -> None:
        fps = self.frames / max(time.monotonic() - self.start, 1e-9)
        self.bar.set_postfix_str(
            f"ok={self.ok} failed={self.failed} skipped={self.skipped} frames={self.frames} fps={fps:.1f}",
            refresh=False,
        )

    def __enter__(self) -> CorpusProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
