"""A source's accounting across its runs: the run's own counts, live, summed over every restart.

A source runs as one output (one :class:`~avdnn.RunStats`) until it ends; the service starts it
again when it went offline, when its network output dropped or when the watchdog found it stuck,
and each start is a new run with new counts. What a source did is the sum of its runs: the ended
ones (:meth:`Totals.add`) plus the one running now, read live (:func:`read_run`). Status,
``/metrics`` and the final accounting are all this one sum, so they agree exactly.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from avdnn import RunStats, api
from avdnn.api import RUN_TIME_EDGES

__all__ = ["LATENCY_EDGES", "RunView", "Totals", "read_run"]

#: upper edges (seconds) of the latency histogram (input to output), then +Inf
LATENCY_EDGES = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, float("inf"))
#: and of the inference-time histogram (a backend's run of one batch)
INFERENCE_EDGES = (*RUN_TIME_EDGES, float("inf"))

#: violations kept when totals are merged (the first ones say what went wrong; ``balanced`` stays false)
_KEEP_VIOLATIONS = 32
#: how often a read is retried when the run resized a dict meanwhile (the run never waits for us)
_TRIES = 5


@dataclass
class RunView:
    """One run's counts at one moment."""

    read: int = 0
    written: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    #: frames still in the chain when the run stopped before its input's end, by where they were
    unfinished: dict[str, int] = field(default_factory=dict)
    #: frames a stage added by design, and the output's duplicates (fps_mode)
    added: int = 0
    reconnects: int = 0
    gap_ms: int = 0
    latency_count: int = 0
    latency_sum: float = 0.0
    latency_buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_EDGES))
    p50: float | None = None
    p95: float | None = None
    violations: list[str] = field(default_factory=list)
    live: bool = False
    #: its network output's reconnections inside the run, and the seconds it was away
    output_reopens: int = 0
    output_gap: float = 0.0


def read_run(
    stats: RunStats | None, input_counters: dict[str, int] | None = None, reopen: api.OutputReopen | None = None
) -> RunView:
    """``stats`` now (a running output's, or an ended one's); the input's live counters when given,
    and the reconnections of its network output (``reopen``, the run's policy)."""
    view = RunView() if stats is None else _stable(stats, input_counters)
    if reopen is not None:
        view.output_reopens, view.output_gap = reopen.reopens, reopen.gap_seconds
    return view


def _stable(stats: RunStats, input_counters: dict[str, int] | None) -> RunView:
    for _ in range(_TRIES):
        try:
            return _read(stats, input_counters)
        except RuntimeError:  # "dictionary changed size during iteration": read again
            continue
    return RunView(read=stats.frames_read, written=stats.frames_written)


def _read(stats: RunStats, live: dict[str, int] | None) -> RunView:
    counters = {**(live or {}), **stats.input_counters}
    lat = stats.latency
    return RunView(
        read=stats.frames_read,
        written=stats.frames_written,
        failed=dict(stats.failures),
        dropped=dict(stats.frames_dropped),
        unfinished=dict(stats.frames_unfinished),
        added=sum(stats.frames_added.values()) + stats.sink_duplicated,
        reconnects=int(counters.get("reconnects", 0)),
        gap_ms=int(counters.get("gap_ms", 0)),
        latency_count=lat.count,
        latency_sum=lat.total,
        latency_buckets=lat.buckets(LATENCY_EDGES),
        p50=lat.percentile(50),
        p95=lat.percentile(95),
        violations=stats.violations() if live is None else [],
        live=stats.input_live,
    )


def _add_counts(into: dict[str, int], more: dict[str, int]) -> None:
    for key, n in more.items():
        into[key] = into.get(key, 0) + n


@dataclass
class Totals:
    """The sum of a source's runs, with what the service itself did to keep it up."""

    runs: int = 0
    read: int = 0
    written: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    unfinished: dict[str, int] = field(default_factory=dict)
    added: int = 0
    #: the live input's own reopenings inside its runs (-reconnect_attempts)
    reconnects: int = 0
    input_gap_ms: int = 0
    #: runs the service started again, by why: offline, output, watchdog
    restarts: dict[str, int] = field(default_factory=dict)
    #: reconnections of its network output inside its runs
    output_reopens: int = 0
    #: seconds without frames between a run's end and the next run's first frame, and while its
    #: network output was away
    gap_seconds: float = 0.0
    #: times it was placed on another node (its node lost, or drained), and the seconds from each
    #: loss to its first frame on the next node (counted by the head, never by a node)
    moves: int = 0
    move_gap: float = 0.0
    latency_count: int = 0
    latency_sum: float = 0.0
    latency_buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_EDGES))
    violations: list[str] = field(default_factory=list)

    def add(self, run: RunView) -> None:
        """One more run ended: its counts join the totals."""
        self.runs += 1
        self.read += run.read
        self.written += run.written
        _add_counts(self.failed, run.failed)
        _add_counts(self.dropped, run.dropped)
        _add_counts(self.unfinished, run.unfinished)
        self.added += run.added
        self.reconnects += run.reconnects
        self.input_gap_ms += run.gap_ms
        self.output_reopens += run.output_reopens
        self.gap_seconds += run.output_gap
        self.latency_count += run.latency_count
        self.latency_sum += run.latency_sum
        self.latency_buckets = [a + b for a, b in zip(self.latency_buckets, run.latency_buckets, strict=True)]
        self.violations += [f"run {self.runs}: {v}" for v in run.violations]

    def merge(self, other: Totals) -> None:
        """Another source's totals join these (departed sources folded into one row)."""
        self.runs += other.runs
        self.read += other.read
        self.written += other.written
        for mine, theirs in (
            (self.failed, other.failed),
            (self.dropped, other.dropped),
            (self.unfinished, other.unfinished),
            (self.restarts, other.restarts),
        ):
            _add_counts(mine, theirs)
        self.added += other.added
        self.reconnects += other.reconnects
        self.input_gap_ms += other.input_gap_ms
        self.output_reopens += other.output_reopens
        self.gap_seconds += other.gap_seconds
        self.moves += other.moves
        self.move_gap += other.move_gap
        self.latency_count += other.latency_count
        self.latency_sum += other.latency_sum
        self.latency_buckets = [a + b for a, b in zip(self.latency_buckets, other.latency_buckets, strict=True)]
        self.violations = (self.violations + other.violations)[:_KEEP_VIOLATIONS]

    def plus(self, run: RunView | None) -> Totals:
        """These totals and a run still going (a copy; the totals are unchanged)."""
        out = copy.deepcopy(self)
        if run is not None:
            out.add(run)  # ``runs`` counts the runs started, this one too
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "frames": {
                "read": self.read,
                "written": self.written,
                "failed": sum(self.failed.values()),
                "dropped": sum(self.dropped.values()),
                "unfinished": sum(self.unfinished.values()),
                "added": self.added,
            },
            "failed": dict(self.failed),
            "dropped": dict(self.dropped),
            "unfinished": dict(self.unfinished),
            "latency_count": self.latency_count,
            "reconnects": self.reconnects,
            "input_gap_ms": self.input_gap_ms,
            "restarts": dict(self.restarts),
            "output_reopens": self.output_reopens,
            "gap_seconds": round(self.gap_seconds, 3),
            "moves": self.moves,
            "move_gap_seconds": round(self.move_gap, 3),
            "runs": self.runs,
            "violations": list(self.violations),
            "balanced": not self.violations,
        }
