"""Frame accounting: where every frame that came in went, and a check that can fail.

Every stage of the chain counts the frames it took and gave; what it drops or adds must be
*declared*, never inferred from the difference:

* a libavfilter segment declares drops/additions only when it holds a filter that changes the
  frame count by design (``fps``, ``select``, ``trim``, ``tpad``...; :data:`COUNT_CHANGING`);
* avdnn filters count their failures by cause (and declare any drops in ``dropped``);
* the output declares its video-sync drops and duplicates, frames past ``-t``, and frames past
  ``-frames:v``;
* a live input declares the frames its drop policy dropped before the chain (``input_dropped``,
  run.livequeue), so ``read = written + failed + dropped`` holds for it too.

Conservation, per stage: ``in + added == out + failed + dropped + in_flight``, where a frame is
"in flight" only when the run stopped before the end of its input (an error, ``-frames:v``,
Ctrl-C, a closed iterator): then a stage may still hold frames. In flight is bounded by what the
stage can hold when the run stops, as counted by the scheduler (run.pipeline): the frames its
last call gave that were not passed on yet, and those the stage itself says it keeps (a DNN
filter's tasks, a libavfilter graph's buffered frames). A difference beyond that bound is lost,
never balanced away; a run that reached its end holds nothing. Anything else is a violation
naming the stage (:meth:`RunStats.violations`): ``check()`` is False in tests, and a run logs it
as a warning. Streams around the chain (audio, subtitles,
copied video) are counted per stream (:class:`~avdnn.media.streams.sidepath.StreamStats`); a copied
stream must balance packet for packet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from avdnn.errors import AvdnnError
from avdnn.media.streams.sidepath import StreamStats
from avdnn.run.latency import Latency

#: libavfilter filters that drop, add or regroup frames by design.
COUNT_CHANGING = frozenset(
    {
        "fps",
        "framerate",
        "select",
        "framestep",
        "trim",
        "decimate",
        "mpdecimate",
        "minterpolate",
        "tpad",
        "loop",
        "telecine",
        "detelecine",
        "yadif",
        "bwdif",
        "w3fdif",
        "estdif",
        "tinterlace",
        "interlace",
        "reverse",
        "shuffleframes",
        "random",
        "fieldmatch",
        "separatefields",
        "weave",
        "doubleweave",
        "thumbnail",
        "fieldhint",
        "dejudder",
        "tile",
        "untile",
        "framepack",
        "kerndeint",
        "nnedi",
        "field",
    }
)


@runtime_checkable
class StageReport(Protocol):
    """What a stage adds to the run's accounting beyond frames (avdnn.events: zone and line counts,
    events by type, each event sink's published/buffered/dropped). Live: read it at any time."""

    section: str  # "zones", "lines", "events", "sinks": the key in as_dict()

    def summary_lines(self) -> list[str]: ...

    def as_dict(self) -> dict[str, Any]: ...


def stage_reports(stages: Iterable[object]) -> list[StageReport]:
    """The reports of every stage that has some (a stage's ``reports()``)."""
    out: list[StageReport] = []
    for stage in stages:
        reports = getattr(stage, "reports", None)
        if reports is not None:
            out += [r for r in reports() if isinstance(r, StageReport)]
    return out


#: The order of the report sections in the summary: the counts per zone and line end it.
REPORT_SECTIONS = ("events", "sinks", "zones", "lines")


@dataclass
class StageStats:
    """Frames in and out of one stage of the chain, with the stage's own declarations."""

    label: str
    frames_in: int = 0
    frames_out: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    #: The most the stage could hold when the run stopped early (the bound of ``in_flight``).
    could_hold: int = 0

    @property
    def imbalance(self) -> int:
        """Frames lost (positive) or invented (negative) that no count explains; 0 when balanced."""
        return (
            self.frames_in
            + sum(self.added.values())
            - self.frames_out
            - sum(self.failed.values())
            - sum(self.dropped.values())
            - self.in_flight
        )

    def settle(self, *, changes_count: bool, ended_early: bool, can_hold: int = 0) -> None:
        """At the end of a run: what the stage's difference is allowed to be, and nothing else.

        ``changes_count``: the stage drops/adds frames by design (its difference is declared as
        such); ``ended_early``: the run stopped before EOF, so frames the stage still holds are in
        flight, up to ``can_hold`` of them (what it could hold then); the rest stays a violation.
        """
        rest = self.imbalance
        if rest == 0:
            return
        if changes_count:
            if rest > 0:
                self.dropped[self.label] = self.dropped.get(self.label, 0) + rest
            else:
                self.added[self.label] = self.added.get(self.label, 0) - rest
        elif ended_early and rest > 0:
            self.could_hold = max(can_hold, 0)
            self.in_flight += min(rest, self.could_hold)


@dataclass
class RunStats:
    """The frame accounting of one run, as the CLI prints it and the API returns it."""

    frames_read: int = 0
    frames_written: int = 0
    stages: list[StageStats] = field(default_factory=list)
    #: The output's declarations: video-sync drops and duplicates, frames past -t.
    sink_dropped: int = 0
    sink_duplicated: int = 0
    sink_past_time: int = 0
    #: Frames that reached the output but were not written because -frames:v was reached.
    over_limit: int = 0
    #: Frames decoded ahead on the decoder thread that never entered the chain (early stop, error).
    read_ahead: int = 0
    #: Frames the chain took from the decoder thread (None: no thread between them).
    input_taken: int | None = None
    #: Frames the output could not take (encoder or muxer failure), by cause.
    output_failed: dict[str, int] = field(default_factory=dict)
    #: Frames that reached the output (the chain's last stage gave them).
    output_in: int = 0
    stopped_early: bool = False
    error: AvdnnError | None = None
    #: The streams that went around the chain (audio, subtitles, copied video), one entry each.
    streams: list[StreamStats] = field(default_factory=list)
    #: The input's decoder and trim, as media.source counts them: frames decoded, trimmed by the
    #: input's -ss/-t, concealed (decoded with errors, kept as ffmpeg keeps them), decode errors
    #: (packets that gave no frame) by cause.
    input_counters: dict[str, int] = field(default_factory=dict)
    #: Whether the input was read to its end (its counters must then balance exactly).
    input_complete: bool = False
    #: The other inputs of a -filter_complex graph's core, each with its own chain (run.complexgraph).
    graph_inputs: list[RunStats] = field(default_factory=list)
    #: The output's other video streams, each through a chain of its own (run.lanes).
    more_video: list[RunStats] = field(default_factory=list)
    #: Whether the input is live (network, device, -re): its drops, reconnects and latency are shown.
    input_live: bool = False
    #: Frames the input's queue dropped before the chain, by cause (-live_drop, run.livequeue).
    input_dropped: dict[str, int] = field(default_factory=dict)
    #: Seconds from a frame leaving the input to the output taking it (run.latency).
    latency: Latency = field(default_factory=Latency)
    #: The stages' own reports: events by type, event sinks' counters, zone and line counts (live).
    reports: list[StageReport] = field(default_factory=list)

    @property
    def failures(self) -> dict[str, int]:
        """Failed frames by ``"stage: cause"``."""
        out: dict[str, int] = {}
        for stage in self.stages:
            for cause, n in stage.failed.items():
                key = f"{stage.label}: {cause}"
                out[key] = out.get(key, 0) + n
        for cause, n in self.output_failed.items():
            out[f"output: {cause}"] = n
        return out

    @property
    def frames_failed(self) -> int:
        """How many frames failed (``failures`` says where and why)."""
        return sum(self.failures.values())

    @property
    def frames_dropped(self) -> dict[str, int]:
        """Frames dropped by design, by who dropped them."""
        out: dict[str, int] = {k: v for k, v in self.input_dropped.items() if v}
        for stage in self.stages:
            for who, n in stage.dropped.items():
                out[who] = out.get(who, 0) + n
        if self.sink_dropped:
            out["output fps_mode"] = self.sink_dropped
        if self.sink_past_time:
            out["output -t/-to"] = self.sink_past_time
        return out

    @property
    def frames_added(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for stage in self.stages:
            for who, n in stage.added.items():
                out[who] = out.get(who, 0) + n
        return out

    @property
    def frames_unfinished(self) -> dict[str, int]:
        """Frames in flight when the run stopped before the end, by where they were."""
        out = {stage.label: stage.in_flight for stage in self.stages if stage.in_flight}
        if self.read_ahead:
            out["input (decoded ahead)"] = self.read_ahead
        if self.over_limit:
            out["output (not written: " + ("the output failed)" if self.output_failed else "-frames:v reached)")] = (
                self.over_limit
            )
        return out

    def violations(self) -> list[str]:
        """Every place where frames appeared or vanished without a count saying why."""
        bad = []
        for stage in self.stages:
            if stage.imbalance:
                what = "lost" if stage.imbalance > 0 else "invented"
                bad.append(
                    f"stage '{stage.label}' {what} {abs(stage.imbalance)} frame(s): in {stage.frames_in}, "
                    f"out {stage.frames_out}, failed {sum(stage.failed.values())}, "
                    f"dropped {sum(stage.dropped.values())}, added {sum(stage.added.values())}, "
                    f"in flight {stage.in_flight}" + (f" (it could hold {stage.could_hold})" if stage.in_flight else "")
                )
        entering = self.frames_read - self.read_ahead - sum(self.input_dropped.values())
        if self.input_taken is not None and self.input_taken != entering:
            bad.append(
                f"the input lost {entering - self.input_taken} frame(s) before the chain: read "
                f"{self.frames_read}, taken {self.input_taken}, dropped {sum(self.input_dropped.values())}, "
                f"left queued {self.read_ahead}"
            )
        if self.stages:
            if self.stages[0].frames_in != entering:
                bad.append(f"the chain took {self.stages[0].frames_in} frame(s) but {entering} left the input")
            for a, b in zip(self.stages, self.stages[1:], strict=False):
                if a.frames_out != b.frames_in:
                    bad.append(f"'{a.label}' gave {a.frames_out} frame(s) but '{b.label}' took {b.frames_in}")
        # After the output itself failed (a broken pipe, a full disk) what reached it is not known packet
        # by packet (the muxer buffers): the output side is reported, not checked.
        if (self.output_in or self.over_limit) and not self.output_failed:
            given = self.stages[-1].frames_out if self.stages else entering
            taken = self.frames_written + self.sink_dropped + self.sink_past_time + sum(self.output_failed.values())
            if given != self.output_in + self.over_limit:
                bad.append(
                    f"the chain gave {given} frame(s) but the output took {self.output_in} and "
                    f"{self.over_limit} came past -frames:v"
                )
            if taken != self.output_in:
                bad.append(f"the output took {self.output_in} frame(s) and accounts for {taken}")
        ic = self.input_counters
        if (
            ic
            and self.input_complete
            and ic.get("frames_decoded", 0) != ic.get("frames_read", 0) + ic.get("frames_trimmed", 0)
        ):
            bad.append(
                f"the input decoded {ic.get('frames_decoded')} frame(s) but gave {ic.get('frames_read')} and "
                f"trimmed {ic.get('frames_trimmed')}"
            )
        for k, sub in enumerate(self.graph_inputs, start=1):
            bad += [f"graph input #{k}: {v}" for v in sub.violations()]
        for report in self.reports:  # an event sink must account for every message it was given
            check = getattr(report, "violations", None)
            bad += check() if check is not None else []
        for k, sub in enumerate(self.more_video, start=1):
            bad += [f"video stream #{k}: {v}" for v in sub.violations()]
        for st in self.streams if not self.output_failed else ():
            if st.codec == "copy":
                accounted = st.packets_written + sum(st.dropped.values()) + sum(st.failed.values())
                if accounted != st.packets_read:
                    bad.append(f"stream {st.label} read {st.packets_read} packet(s) but accounts for {accounted}")
        return bad

    def check(self) -> bool:
        """True when every stage, the output and every copied stream balance (see violations())."""
        return not self.violations()

    def summary(self) -> str:
        """Human-readable accounting, one fact per line."""
        failed = self.failures
        lines = [f"frames: read {self.frames_read}, written {self.frames_written}, failed {sum(failed.values())}"]
        if self.input_live:
            lines[0] += f", dropped {sum(self.frames_dropped.values())}"
        lines += [f"  failed in {k}: {v}" for k, v in failed.items()]
        lines += [f"  dropped by {k}: {v}" for k, v in self.frames_dropped.items()]
        lines += [f"  added by {k}: {v}" for k, v in self.frames_added.items()]
        lines += [f"  unfinished in {k}: {v}" for k, v in self.frames_unfinished.items()]
        if self.sink_duplicated:
            lines.append(f"  duplicated by output fps_mode: {self.sink_duplicated}")
        ic = self.input_counters
        if ic.get("frames_trimmed"):
            lines.append(f"  trimmed by the input's -ss/-t/-to: {ic['frames_trimmed']}")
        if ic.get("decode_errors") or ic.get("frames_concealed"):
            causes = ", ".join(f"{k[7:]} {v}" for k, v in ic.items() if k.startswith("errors.") and v)
            lines.append(
                f"  input: {ic.get('decode_errors', 0)} decode error(s) (packets that gave no frame"
                f"{': ' + causes if causes else ''}), {ic.get('frames_concealed', 0)} frame(s) concealed"
            )
        lines += self._live_lines()
        for k, sub in enumerate(self.graph_inputs, start=1):
            lines.append(f"graph input #{k}: read {sub.frames_read}, into the graph {sub.output_in}")
            lines += [f"  failed in {w}: {n}" for w, n in sub.failures.items()]
            lines += [f"  dropped by {w}: {n}" for w, n in sub.frames_dropped.items()]
            lines += [f"  unfinished in {w}: {n}" for w, n in sub.frames_unfinished.items()]
        for k, sub in enumerate(self.more_video, start=1):
            lines.append(f"video stream #{k}: read {sub.frames_read}, written {sub.frames_written}")
            lines += [f"  failed in {w}: {n}" for w, n in sub.failures.items()]
            lines += [f"  dropped by {w}: {n}" for w, n in sub.frames_dropped.items()]
            lines += [f"  unfinished in {w}: {n}" for w, n in sub.frames_unfinished.items()]
        for st in self.streams:
            unit = "packets" if st.codec == "copy" else f"packets ({st.codec}: {st.frames_decoded} frames decoded)"
            lines.append(f"stream {st.label}: {unit} read {st.packets_read}, written {st.packets_written}")
            lines += [f"  dropped ({k}): {v}" for k, v in st.dropped.items()]
            lines += [f"  failed ({k}): {v}" for k, v in st.failed.items()]
        lines += [f"  accounting violation: {v}" for v in self.violations()]
        if self.error is not None:
            lines.append(f"  stopped by error: {self.error.oneline()}")
        lines += self._report_lines()
        return "\n".join(lines)

    def _report_lines(self) -> list[str]:
        """The stages' reports, events and sinks first, the final counts per zone and line last."""
        order = {name: i for i, name in enumerate(REPORT_SECTIONS)}
        ranked = sorted(self.reports, key=lambda r: order.get(r.section, len(order)))
        return [line for report in ranked for line in report.summary_lines()]

    def reports_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The reports by section, for as_dict() (each entry the report's own as_dict())."""
        out: dict[str, list[dict[str, Any]]] = {}
        for report in self.reports:
            out.setdefault(report.section, []).append(report.as_dict())
        return out

    def _live_lines(self) -> list[str]:
        """A live input's reconnects and the run's latency (only for a live input)."""
        if not self.input_live:
            return []
        ic, out = self.input_counters, []
        if ic.get("reconnects"):
            lost = f", {ic['frames_lost']} frame(s) lost by timestamps" if ic.get("frames_lost") else ""
            out.append(
                f"  input: reopened {ic['reconnects']} time(s), {ic.get('gap_ms', 0) / 1000:.1f} s without frames{lost}"
            )
        lat = self.latency
        if lat.count:
            p50, p95 = lat.percentile(50) or 0.0, lat.percentile(95) or 0.0
            out.append(
                f"  latency (input to output): p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
                f"max {lat.max * 1000:.0f} ms"
            )
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "frames_read": self.frames_read,
            "frames_written": self.frames_written,
            "frames_failed": self.frames_failed,
            "failures": self.failures,
            "frames_dropped": self.frames_dropped,
            "frames_added": self.frames_added,
            "frames_unfinished": self.frames_unfinished,
            "frames_duplicated": self.sink_duplicated,
            "streams": [
                {
                    "stream": s.label,
                    "type": s.media_type,
                    "codec": s.codec,
                    "packets_read": s.packets_read,
                    "packets_written": s.packets_written,
                    "frames_decoded": s.frames_decoded,
                    "dropped": dict(s.dropped),
                    "failed": dict(s.failed),
                }
                for s in self.streams
            ],
            "input": dict(self.input_counters),
            "graph_inputs": [sub.as_dict() for sub in self.graph_inputs],
            "more_video": [sub.as_dict() for sub in self.more_video],
            "input_live": self.input_live,
            "input_dropped": dict(self.input_dropped),
            "latency": self.latency.as_dict(),
            "violations": self.violations(),
            "error": None if self.error is None else {"code": self.error.code, "message": self.error.oneline()},
            **self.reports_dict(),
        }
