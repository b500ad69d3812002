"""From a filter string to stages: avdnn filters and libavfilter segments.

The parsed chain is split into runs: an avdnn filter is one stage; consecutive filters that
avdnn does not implement become one :class:`LavfiSegment`. Every filter is checked while
the chain is built (unknown filter, unknown option, bad value), before any frame is read,
so errors name the filter and option and suggest the closest valid names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, Protocol

from avdnn.errors import AvdnnError
from avdnn.filters.base import Filter
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter, is_avdnn_filter, list_filters
from avdnn.graph.lavfi import LavfiSegment, check_lavfi_filter
from avdnn.graph.parse import FilterSpec, parse_chain, split_options
from avdnn.media.frame import Frame


class Stage(Protocol):
    """What the pipeline drives: an avdnn Filter or a LavfiSegment."""

    label: str
    failed: dict[str, int]

    def push(self, frame: Frame) -> Iterable[Frame]: ...
    def flush(self) -> Iterable[Frame]: ...
    def close(self) -> None: ...


def make_filter(spec: FilterSpec) -> Filter:
    """Instantiate an avdnn filter from its parsed spec (options bound and checked)."""
    cls = get_filter(spec.name)
    items = split_options(spec.args, cls.joins) if spec.args else []
    values = bind_options(cls.options, items, filter_name=spec.label)
    try:
        return cls(values, label=spec.label)
    except AvdnnError as exc:
        raise exc.with_context(filter=spec.label) from None


def takes(spec: FilterSpec) -> bool:
    """Whether avdnn runs ``spec`` itself.

    A filter class may define ``accepts(items) -> bool`` (items: the spec's (key, value) option
    pairs) to take only some uses of a name and leave the others to libavfilter, e.g. drawbox
    with ``box_source`` is avdnn's, drawbox with coordinates stays libavfilter's.
    """
    if not is_avdnn_filter(spec.name):
        return False
    accepts = getattr(get_filter(spec.name), "accepts", None)
    return accepts is None or bool(accepts(split_options(spec.args) if spec.args else []))


def build_stages(chain: str | Sequence[FilterSpec | Stage], *, tail: Sequence[FilterSpec] = ()) -> list[Stage]:
    """Stages for ``chain``; ``tail`` are lavfi filters the output needs (format=...).

    ``chain`` may hold stages already built (a complex graph's core, run.complexgraph); a stage
    with ``absorb(specs) -> bool`` may take the libavfilter filters right after it into itself.
    """
    items = parse_chain(chain) if isinstance(chain, str) else list(chain)
    items += list(tail)
    avdnn_names = list_filters()
    stages: list[Stage] = []
    run: list[FilterSpec] = []

    def end_run(extra: Sequence[FilterSpec] = ()) -> None:
        absorb = getattr(stages[-1], "absorb", None) if stages else None
        if not (absorb is not None and absorb([*run, *extra])):
            stages.append(LavfiSegment([*run, *extra]))
        run.clear()

    try:
        for spec in items:
            if not isinstance(spec, FilterSpec):
                if run:
                    end_run()
                stages.append(spec)
            elif takes(spec):
                flt = make_filter(spec)
                if run:
                    end_run(auto_format(flt))
                stages.append(flt)
            else:
                check_lavfi_filter(spec, avdnn_names)
                run.append(spec)
        if run:
            end_run()
    except BaseException:
        for stage in stages:
            stage.close()
        raise
    return stages


def auto_format(flt: Any) -> list[FilterSpec]:
    """The format= libavfilter's negotiation would insert before an avdnn filter.

    FFmpeg converts automatically to a format the next filter accepts; ending the segment
    before an avdnn filter with its formats gets the same conversion (a no-op when the frame
    already has one of them).
    """
    fmts = getattr(flt, "pix_fmts", None)
    return [FilterSpec("format", "auto", "pix_fmts=" + "|".join(fmts))] if fmts else []


def stage_out_rate(stage: Any, in_rate: Fraction | None) -> Fraction | None:
    """The frame rate leaving ``stage`` given the rate entering it."""
    if isinstance(stage, LavfiSegment):
        stage.in_rate = in_rate
        return stage.out_rate if stage.configured else in_rate
    fn = getattr(stage, "output_rate", None)
    return fn(in_rate) if fn else in_rate
