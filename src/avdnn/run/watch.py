"""A live view of the output a thread runs: its accounting and its input's counters, while it runs.

A run's :class:`~avdnn.run.stats.RunStats` is returned when it ends; a service showing pipelines
that run for days needs it before that. A thread that builds an output inside :func:`watch_scope`
is handed a :class:`LiveRun` as soon as the output's pipeline exists (before its first frame):
the very stats object the pipeline updates, and its input, whose counters (decoded, concealed,
reconnects) are read live. Readers on other threads take snapshots (:meth:`LiveRun.snapshot`):
the pipeline never locks for them, so a snapshot may be a frame behind, never torn.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from avdnn.run.stats import RunStats

__all__ = ["LiveRun", "current_watch", "watch_scope"]

_local = threading.local()

#: how often a snapshot is retried when the run changed a dict while it was being read
_TRIES = 5


class LiveRun:
    """One running output: ``stats`` (updated by its pipeline) and its input's live counters."""

    def __init__(self, stats: RunStats, source: Any) -> None:
        self.stats = stats
        self._source = source

    def input_counters(self) -> dict[str, int]:
        """The input's counters now (decoded, concealed, reconnects, gap_ms ...)."""
        counters: dict[str, int] = _retry(lambda: dict(getattr(self._source, "counters", {})), {})
        return counters

    def snapshot(self) -> dict[str, object]:
        """``stats.as_dict()`` now, with the input's live counters (the run writes them at its end)."""
        snap: dict[str, object] = _retry(self.stats.as_dict, {})
        if snap:
            final = snap.get("input")
            snap["input"] = {**self.input_counters(), **(final if isinstance(final, dict) else {})}
        return snap


def _retry(read: Callable[[], Any], default: Any) -> Any:
    """``read()``, again when another thread resized a dict it iterated (the run never waits on us)."""
    for _ in range(_TRIES):
        try:
            return read()
        except RuntimeError:  # "dictionary changed size during iteration"
            continue
    return default


def current_watch() -> Callable[[LiveRun], None] | None:
    """What the pipeline built on this thread hands its :class:`LiveRun` to (None: nobody watches)."""
    watch: Callable[[LiveRun], None] | None = getattr(_local, "watch", None)
    return watch


@contextlib.contextmanager
def watch_scope(watch: Callable[[LiveRun], None]) -> Iterator[None]:
    """Outputs built on this thread inside the block hand ``watch`` their :class:`LiveRun`."""
    before = current_watch()
    _local.watch = watch
    try:
        yield
    finally:
        _local.watch = before
