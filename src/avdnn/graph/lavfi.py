"""A run of consecutive libavfilter filters, executed by PyAV's filter graph.

Every filter avdnn does not implement itself goes here, so all of FFmpeg's video filters
work in the same chain as avdnn's. Consecutive ones share one graph (one buffer source, one
buffersink: a :class:`~avdnn.media.filtergraph.FilterGraph`), which is what ffmpeg builds too.
The graph is configured from the first frame, as ffmpeg's is, and rebuilt when the frame size
or format changes mid-stream. Side data rides through on the AVFrame's opaque_ref, which
libavfilter copies with the frame properties.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from avdnn.errors import AvdnnError, FilterNotFoundError, OptionNotFoundError
from avdnn.filters.options import did_you_mean
from avdnn.graph.parse import FilterSpec, format_chain, split_options
from avdnn.media.filtergraph import FilterGraph, probe_video
from avdnn.media.frame import Frame
from avdnn.media.libav.filteropts import filter_option_names

log = logging.getLogger("avdnn")


def lavfi_filter_names() -> set[str]:
    import av

    return set(av.filter.filters_available)


def check_lavfi_filter(spec: FilterSpec, avdnn_names: Sequence[str]) -> None:
    """Fail early, naming the filter and option, when libavfilter would refuse ``spec``."""
    names = lavfi_filter_names()
    if spec.name not in names:
        raise FilterNotFoundError(
            f"No such filter: '{spec.name}'{did_you_mean(spec.name, [*names, *avdnn_names])}",
            filter=spec.label,
        )
    graph = FilterGraph(label=spec.label)
    try:
        graph.add(spec.name, spec.args, label=spec.label) if spec.args is not None else graph.add(spec.name)
    except AvdnnError as err:
        # Any failure: ffmpeg applies every key before it initialises the filter, so an unknown
        # key is what it reports (PyAV's init-string path can fail first on another option:
        # "scale=w=32:foo=2" gives "Invalid size '32'" there, "Option not found" in ffmpeg).
        raise _name_bad_option(spec, err) from err.__cause__


#: AVFilterContext's own options, accepted on every filter besides its private ones.
_CONTEXT_OPTIONS = ("thread_type", "threads", "enable", "extra_hw_frames")


def _name_bad_option(spec: FilterSpec, err: AvdnnError) -> AvdnnError:
    try:
        valid = [*(filter_option_names(spec.name) or []), *_CONTEXT_OPTIONS]
        keys = [k for k, _ in split_options(spec.args or "") if k is not None]
    except Exception:  # noqa: BLE001 - introspection is a nicety; keep the real error
        return err
    for key in keys:
        if valid and key not in valid:
            return OptionNotFoundError(
                f"Option '{key}' not found{did_you_mean(key, valid)}",
                filter=spec.label,
                option=key,
            )
    return err


class LavfiSegment:
    """Consecutive libavfilter filters as one avdnn stage."""

    def __init__(self, specs: Sequence[FilterSpec]) -> None:
        self.specs = list(specs)
        self.label = ",".join(s.label for s in self.specs)
        self.text = format_chain(self.specs)
        self._graph: FilterGraph | None = None
        self._key: tuple[Any, ...] | None = None
        self.in_rate: Fraction | None = None
        self.out_rate: Fraction | None = None
        self.out_sar: Fraction | None = None
        #: What the graph's buffersink negotiated (None until configured or if probing failed).
        self.out_info: Any = None
        self.failed: dict[str, int] = {}
        self.configured = False
        #: The graph said EOF on its input (trim, -frames in a source...): it takes no more frames.
        self.finished = False

    def _build(self, frame: Frame) -> None:
        self._graph = FilterGraph.video_chain(
            frame.buffer_args(self.in_rate),
            [(spec.name, spec.args) for spec in self.specs],
            names=[spec.label for spec in self.specs],
            label=self.label,
            pts=frame.pts,
        )
        self._key = (frame.width, frame.height, frame.format)
        self._probe(frame)
        self.configured = True

    def _probe(self, frame: Frame) -> None:
        """Output frame rate and aspect ratio of the graph, which PyAV does not report.

        When libavfilter cannot be probed (an avdnn error: the libraries cannot be located, the
        probe graph is refused), the input's values are kept and that is said, as the
        -filter_complex core says it; anything else is a bug and keeps its traceback."""
        self.out_rate, self.out_sar = self.in_rate, frame.sample_aspect_ratio
        try:
            info = probe_video(self.text, frame, self.in_rate)
        except AvdnnError as exc:
            log.warning(
                "'%s': could not read the frame rate and aspect ratio of the chain (%s); using its input's (%s, %s)",
                self.text,
                exc,
                self.in_rate or "unknown rate",
                frame.sample_aspect_ratio or "unknown aspect ratio",
            )
            return
        self.out_info = info
        self.out_rate = info.frame_rate
        self.out_sar = info.sar if info.sar else None

    def push(self, frame: Frame) -> list[Frame]:
        out: list[Frame] = []
        if self._graph is not None and self._key != (frame.width, frame.height, frame.format):
            out += self.flush()  # ffmpeg reinitialises the graph when the input changes
            self._graph = None
        if self.finished:
            return out
        if self._graph is None:
            self._build(frame)
        assert self._graph is not None
        if not self._graph.push(frame.to_av(), pts=frame.pts):
            # buffersrc answers EOF once the graph's output is closed (trim reached its end):
            # not an error, the segment is done, as for ffmpeg's filtergraph
            self.finished = True
        out += self._drain()
        return out

    def _drain(self) -> list[Frame]:
        assert self._graph is not None
        out: list[Frame] = []
        for av_frame in self._graph.pull():
            frame = Frame.from_av(av_frame)
            frame.sample_aspect_ratio = self.out_sar
            out.append(frame)
        if self._graph.ended:
            # the graph's output closed (trim, -t, select's end): the segment takes no more
            # frames, so the stages before it stop at once instead of filtering frames for nothing
            self.finished = True
        return out

    def flush(self) -> list[Frame]:
        if self._graph is None:
            return []
        if not self.finished and not self._graph.push(None):
            self.finished = True
        out = self._drain()
        self._graph = None
        return out

    def close(self) -> None:
        self._graph = None
