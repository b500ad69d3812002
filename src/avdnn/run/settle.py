"""A run's books at its end: what each stage's difference may be, and what it could hold.

A stage's difference between frames in and out is either declared by design (a libavfilter
segment with a count-changing filter, run.stats' COUNT_CHANGING; a stage that says
``changes_count``), or, once the run stopped early, frames still in flight: but only as many as
the stage could hold then, counted, never inferred from its books. Anything more is lost, and a
violation (run.stats).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from avdnn.errors import AvdnnError
from avdnn.graph.lavfi import LavfiSegment
from avdnn.run.stats import COUNT_CHANGING, StageStats

__all__ = ["holding", "settle_stages"]


def holding(stage: Any) -> int:
    """The frames a stage keeps after an early stop, counted.

    An avdnn filter says so itself (``Filter.holding``: a DNN filter's tasks not yet returned).
    A libavfilter segment's graph is flushed and what it gives back is counted (the frames a
    filter with look-ahead, such as ``deflicker`` or ``atadenoise``, had buffered); they are
    discarded, as ffmpeg discards them when it stops early.
    """
    if isinstance(stage, LavfiSegment):
        try:
            return len(stage.flush())
        except AvdnnError:  # the graph failed: nothing can be counted in it
            return 0
    held = getattr(stage, "holding", 0)
    return held if isinstance(held, int) else 0


def settle_stages(
    stages: Sequence[Any], books: Sequence[StageStats], undelivered: Sequence[int], *, ended_early: bool
) -> None:
    """Settle each stage's books: its drops by design, and after an early stop its frames in flight,
    up to the ``undelivered`` frames its last call gave and had not handed on plus :func:`holding`."""
    for stage, st, given in zip(stages, books, undelivered, strict=True):
        for cause, n in getattr(stage, "dropped", {}).items():
            st.dropped[cause] = n
        if isinstance(stage, LavfiSegment):
            design = any(spec.name in COUNT_CHANGING for spec in stage.specs)
        else:
            design = bool(getattr(stage, "changes_count", False))
        can_hold = 0
        if ended_early and not design and st.imbalance > 0:
            can_hold = given if st.imbalance <= given else given + holding(stage)
        st.settle(changes_count=design, ended_early=ended_early, can_hold=can_hold)
