"""``/metrics``: the service's accounting in Prometheus text, read from the runs when scraped.

Nothing is counted twice: a custom collector reads, at each scrape, the same totals the status and
the final accounting show (:mod:`avdnn.serve.accounting`), so the counters equal them exactly. A
source's counters follow it across nodes (they are its totals on every node it ran on, never cut in
two at a move); where it runs now is ``avdnn_source_node``. A model instance is one per node, so
its families carry the ``node``. The registry is the app's own (tests stay apart). Labels carry
ids, stages and causes, never a URL: a cause is avdnn's redacted one-line text, and the causes are
bounded: the first :data:`CAUSE_LABELS` distinct ones keep their text (at most :data:`CAUSE_LENGTH`
characters), every later one is counted under ``other`` (:class:`CauseLabels`), so free-text
failures cannot grow the series without end. Departed sources beyond ``keep_departed`` are one row,
``source="_departed"``. The families:

======================================  =========  ==============================================
``avdnn_frames_total``                  counter    pipeline, source, stage (read, written, failed,
                                                   dropped), cause (failed/dropped only)
``avdnn_latency_seconds``               histogram  pipeline, source: input to output, every run
``avdnn_inference_seconds``             histogram  pipeline, instance, node: the backend's run of a batch
``avdnn_instance_batch_size``           gauge      pipeline, instance, node: inferences per batch
``avdnn_instance_inferences_total``     counter    pipeline, instance, node
``avdnn_instance_batches_total``        counter    pipeline, instance, node
``avdnn_instance_streams``              gauge      pipeline, instance, node: streams it has served
``avdnn_reconnects_total``              counter    pipeline, source: the live input's reopenings
``avdnn_restarts_total``                counter    pipeline, source, cause (offline, output, watchdog)
``avdnn_output_reopens_total``          counter    pipeline, source: network output reconnections
``avdnn_gap_seconds_total``             counter    pipeline, source: without frames between runs,
                                                   or while the network output was away
``avdnn_source_up``                     gauge      pipeline, source: 1 while frames flow
``avdnn_source_fps``                    gauge      pipeline, source
``avdnn_preview_frames_total``          counter    pipeline, source, outcome (sent, skipped)
``avdnn_source_node``                   gauge      pipeline, source, node: 1 on the node it runs on
``avdnn_moves_total``                   counter    pipeline, source: placed on another node
``avdnn_move_gap_seconds_total``        counter    pipeline, source: from a loss to its next frame
``avdnn_node_up``                       gauge      node: 1 while its agent answers
``avdnn_node_sources``                  gauge      node: the sources placed on it
``avdnn_node_cpu``                      gauge      node: its agent's CPU, in CPUs
``avdnn_pipelines``                     gauge      state (``failed`` counts those that failed at start)
``avdnn_runs_left_behind``              gauge      runs stopped but still blocked in their input
``avdnn_events_published_total``        counter    sink: ``listener`` (the runs' events the service
                                                   took), ``sse`` (handed to /api/events clients)
``avdnn_events_dropped_total``          counter    sink (``sse``: lost from a slow client's queue)
======================================  =========  ==============================================
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from avdnn._util.redact import redact_text
from avdnn.serve.accounting import INFERENCE_EDGES, LATENCY_EDGES
from avdnn.serve.service import Service
from avdnn.serve.source import STATES

__all__ = ["CAUSE_LABELS", "CAUSE_LENGTH", "CauseLabels", "ServiceCollector", "registry_for"]

#: distinct cause labels kept (the rest are ``other``), and the characters of one
CAUSE_LABELS = 32
CAUSE_LENGTH = 160
OTHER = "other"


class CauseLabels:
    """The label of each cause: its redacted text for the first ``limit`` distinct ones, then ``other``.

    The choice is kept for the process's life, so a cause's series never moves between labels and
    every counter stays monotonic."""

    def __init__(self, limit: int = CAUSE_LABELS) -> None:
        self._limit = limit
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, cause: str) -> str:
        with self._lock:
            label = self._known.get(cause)
            if label is None:
                distinct = len(set(self._known.values()) - {OTHER})
                label = redact_text(cause)[:CAUSE_LENGTH] if distinct < self._limit else OTHER
                self._known[cause] = label
            return label

    def sums(self, counts: dict[str, int]) -> dict[str, int]:
        """``counts`` by cause as counts by label (causes sharing ``other`` added up)."""
        out: dict[str, int] = {}
        for cause, n in counts.items():
            label = self(cause)
            out[label] = out.get(label, 0) + n
        return out


def _le(edge: float) -> str:
    return "+Inf" if edge == float("inf") else repr(edge)


class ServiceCollector(Collector):
    """Reads ``service`` at each scrape."""

    def __init__(self, service: Service) -> None:
        self._service = service
        self._causes = CauseLabels()

    def collect(self) -> Iterator[Metric]:
        frames = CounterMetricFamily(
            "avdnn_frames",
            "Frames by pipeline, source, stage and cause",
            labels=["pipeline", "source", "stage", "cause"],
        )
        latency = HistogramMetricFamily(
            "avdnn_latency_seconds",
            "Seconds from a frame leaving the input to the output",
            labels=["pipeline", "source"],
        )
        reconnects = CounterMetricFamily(
            "avdnn_reconnects", "Reopenings of the live input inside its runs", labels=["pipeline", "source"]
        )
        restarts = CounterMetricFamily(
            "avdnn_restarts", "Runs the service started again", labels=["pipeline", "source", "cause"]
        )
        gaps = CounterMetricFamily(
            "avdnn_gap_seconds",
            "Seconds without frames between a run and the next, or while the network output was away",
            labels=["pipeline", "source"],
        )
        reopens = CounterMetricFamily(
            "avdnn_output_reopens", "Reconnections of the network output", labels=["pipeline", "source"]
        )
        up = GaugeMetricFamily("avdnn_source_up", "1 while the source's frames flow", labels=["pipeline", "source"])
        fps = GaugeMetricFamily("avdnn_source_fps", "Frames per second now", labels=["pipeline", "source"])
        preview = CounterMetricFamily(
            "avdnn_preview_frames", "Preview frames sent and skipped", labels=["pipeline", "source", "outcome"]
        )
        where = ["pipeline", "instance", "node"]
        inference = HistogramMetricFamily(
            "avdnn_inference_seconds", "The backend's time to run one batch", labels=where
        )
        batch = GaugeMetricFamily("avdnn_instance_batch_size", "Inferences per batch (mean)", labels=where)
        inferences = CounterMetricFamily("avdnn_instance_inferences", "Inferences", labels=where)
        batches = CounterMetricFamily("avdnn_instance_batches", "Batches run", labels=where)
        streams = GaugeMetricFamily("avdnn_instance_streams", "Streams the instance has served", labels=where)
        on = GaugeMetricFamily(
            "avdnn_source_node", "1 on the node the source runs on", labels=["pipeline", "source", "node"]
        )
        moves = CounterMetricFamily(
            "avdnn_moves", "Times the source was placed on another node", labels=["pipeline", "source"]
        )
        move_gaps = CounterMetricFamily(
            "avdnn_move_gap_seconds", "Seconds from a loss of its node to its next frame", labels=["pipeline", "source"]
        )
        states = dict.fromkeys(STATES, 0)
        states["failed"] += len(self._service.failed())
        for p in self._service.pipelines():
            states[p.state] = states.get(p.state, 0) + 1
            for sid, state, t, served in p.all_totals():
                ids = [p.id, sid]
                frames.add_metric([*ids, "read", ""], t.read)
                frames.add_metric([*ids, "written", ""], t.written)
                for cause, n in self._causes.sums(t.failed).items():
                    frames.add_metric([*ids, "failed", cause], n)
                for cause, n in self._causes.sums(t.dropped).items():
                    frames.add_metric([*ids, "dropped", cause], n)
                buckets = [(_le(e), float(n)) for e, n in zip(LATENCY_EDGES, t.latency_buckets, strict=True)]
                latency.add_metric(ids, buckets, t.latency_sum)
                reconnects.add_metric(ids, t.reconnects)
                for cause, n in t.restarts.items():
                    restarts.add_metric([*ids, cause], n)
                gaps.add_metric(ids, t.gap_seconds)
                reopens.add_metric(ids, t.output_reopens)
                moves.add_metric(ids, t.moves)
                move_gaps.add_metric(ids, t.move_gap)
                up.add_metric(ids, 1.0 if state == "running" else 0.0)
                fps.add_metric(ids, served.fps() if served is not None else 0.0)
                if served is not None and served.node is not None and not served.removing:
                    on.add_metric([*ids, served.node], 1.0)
                if served is not None:
                    counts = served.preview.counts()
                    preview.add_metric([*ids, "sent"], counts["sent"])
                    preview.add_metric([*ids, "skipped"], counts["skipped"])
            for node, report in p.instances():
                ids = [p.id, report.name, node]
                cumulative = report.run_times.cumulative()
                inference.add_metric(
                    ids,
                    [(_le(e), float(n)) for e, n in zip(INFERENCE_EDGES, cumulative, strict=True)],
                    report.run_times.total,
                )
                batch.add_metric(ids, report.mean_batch)
                inferences.add_metric(ids, report.inferences)
                batches.add_metric(ids, report.batches)
                streams.add_metric(ids, len(report.streams))
        pipelines = GaugeMetricFamily("avdnn_pipelines", "Pipelines by state", labels=["state"])
        for state, n in states.items():
            pipelines.add_metric([state], n)
        behind = GaugeMetricFamily("avdnn_runs_left_behind", "Runs stopped but still blocked in their input")
        behind.add_metric([], self._service.left_behind())
        published = CounterMetricFamily("avdnn_events_published", "Events published", labels=["sink"])
        dropped = CounterMetricFamily("avdnn_events_dropped", "Events dropped", labels=["sink"])
        for source in list(self._service.event_counters):  # the event bus's sinks (listener, sse)
            for sink, sent, lost in source.event_counts():
                published.add_metric([redact_text(sink)], sent)
                dropped.add_metric([redact_text(sink)], lost)
        yield from (frames, latency, reconnects, restarts, reopens, gaps, up, fps, preview, on, moves, move_gaps)
        yield from (inference, batch, inferences, batches, streams, pipelines, behind, published, dropped)
        yield from self._nodes()

    def _nodes(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("avdnn_node_up", "1 while the node's agent answers", labels=["node"])
        held = GaugeMetricFamily("avdnn_node_sources", "Sources placed on the node", labels=["node"])
        cpu = GaugeMetricFamily("avdnn_node_cpu", "The node agent's CPU, in CPUs", labels=["node"])
        for row in self._service.nodes.listed():
            up.add_metric([row["id"]], 1.0 if row["agent"] == "up" and row["alive"] else 0.0)
            held.add_metric([row["id"]], row["source_count"])
            if row["load"]["cpu"] is not None:
                cpu.add_metric([row["id"]], row["load"]["cpu"])
        yield from (up, held, cpu)


def registry_for(service: Service) -> CollectorRegistry:
    """A registry of the app's own, with the service's collector in it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceCollector(service))
    return registry
