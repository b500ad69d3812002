"""The scheduler: source -> stages -> sink, with EOF, errors and frame accounting.

Frames flow by pull: each stage is a generator over the one before it, so a frame goes
through the whole chain before the next is decoded, and an async DNN stage keeps its own
``nireq`` requests in flight. End of stream flushes every stage in order. An error raised by
a stage ends the run *after* every frame it returned before the error has reached the sink;
the sink is then closed properly (trailer written) and the error is re-raised, never turned
into a normal EOF. Every stage is closed on every exit path, including an early stop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Generator, Iterator, Sequence, Sized
from fractions import Fraction
from typing import Any

from avdnn.errors import AvdnnError, ExitRequestedError, InvalidDataError
from avdnn.graph.chain import Stage, auto_format, build_stages, stage_out_rate
from avdnn.graph.lavfi import LavfiSegment
from avdnn.graph.parse import FilterSpec
from avdnn.media.frame import Frame
from avdnn.media.input.source import Source
from avdnn.media.output.videolane import VideoOutput
from avdnn.run.livequeue import DropQueue, queue_policy
from avdnn.run.outputreopen import current_reopen
from avdnn.run.settle import settle_stages
from avdnn.run.stats import RunStats, StageStats, stage_reports
from avdnn.run.stop import current_stop
from avdnn.run.threads import Channel, Prefetch, Writer
from avdnn.run.watch import LiveRun, current_watch

#: Frames queued between the decoder, the chain and the encoder threads (bounds memory).
QUEUE_DEPTH = 4

log = logging.getLogger("avdnn")

ProgressFn = Callable[[RunStats, Frame], None]


class Pipeline:
    """One run of a chain over one source, to a sink or to the caller's loop."""

    def __init__(
        self,
        source: Source,
        chain: str | Sequence[FilterSpec | Stage] = "",
        *,
        sink: VideoOutput | None = None,
        max_frames: int | None = None,
        threaded: bool | None = None,
    ) -> None:
        self.source = source
        #: Decode and encode on threads of their own (AVDNN_THREADS=0 turns it off).
        self.threaded = threaded if threaded is not None else os.environ.get("AVDNN_THREADS", "1") != "0"
        self._reader: Prefetch[Frame] | None = None
        self._taken = 0
        self.sink = sink
        self.max_frames = max_frames
        if sink is not None:
            sink.max_packets = max_frames
        tail = _output_format_tail(sink)
        self.stages = build_stages(chain, tail=tail)
        self.stats = RunStats(stages=[StageStats(s.label) for s in self.stages])
        self.stats.reports = stage_reports(self.stages)  # zones, lines, event sinks (avdnn.events)
        #: per stage, frames its current push/flush holds: given and not handed on yet, or the
        #: frame of a push cut short by the stop (part of run.stats' bound on frames in flight)
        self._undelivered = [0] * len(self.stages)
        self.stats.input_live = bool(getattr(source, "live", False))
        #: A live input's queue before the chain, with its drop policy (run.livequeue)
        self._queue: DropQueue[Frame] | None = None
        #: the hand-off between the decoder thread and the chain (a live input's is _queue)
        self._channel: Channel[Frame] | None = None
        for side in sink.sides if sink is not None else ():
            # streams around the chain: fed by the demuxer that reads the video, on its thread
            # (registered before anything reads the input: autorotation decodes a frame ahead; the
            # streams of other inputs are fed by their own demuxers, see run.wiring)
            if side.input_file == 0:
                source.attach_side(side.in_index, side.packet, side.end, side.loop, decodes_audio=side.decodes_audio)
            self.stats.streams.append(side.stats)
        if sink is not None and sink.sides:
            source.sides_done = lambda: all(sink.stream_ended(s) for s in sink.sides)
        self._in_rate = source.info.frame_rate if source.video else None
        self._closed = False
        self._eof = False  # the input was read to its end
        self._failed = False  # the run is ending with an error
        self._cut_short = False  # a stage took no more input (trim): the ones before it stopped early
        #: set (by the writer thread) when the output wants no more frames or failed
        self._stopping = False
        #: the run's stop request when several outputs run on threads (run.stop): Ctrl-C for all
        self._stop_request = current_stop()
        #: an input waiting to be reopened stops waiting when the run stops (unregistered at close)
        interrupt = getattr(source, "interrupt", None)
        stop = self._stop_request
        self._forget_stop = stop.on_set(interrupt) if stop is not None and interrupt is not None else None
        watch = current_watch()
        if watch is not None and sink is not None:  # a service shows this output's accounting as it runs
            watch(LiveRun(self.stats, source))
        #: a service's policy for a network output whose peer went away (run.outputreopen)
        self._reopen = current_reopen()

    # -- frame flow -----------------------------------------------------------------------

    def _read(self) -> Iterator[Frame]:
        stop = self._stop_request
        for frame in self.source:
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt  # another thread took the SIGINT: stop as on Ctrl-C
            self.stats.frames_read += 1
            frame.side_data.arrival = time.monotonic()  # end-to-end latency starts here (run.latency)
            yield frame
        self._eof = True

    def _stage(self, index: int, upstream: Iterator[Frame]) -> Iterator[Frame]:
        stage = self.stages[index]
        st = self.stats.stages[index]
        first = True
        fmts = getattr(stage, "pix_fmts", None)
        convert: LavfiSegment | None = None
        for frame in upstream:
            if first:
                stage_out_rate(stage, self.rate_into(index))
                first = False
            if fmts and frame.format not in fmts:
                # an avdnn filter right after the source or another avdnn filter: convert as
                # libavfilter's negotiation would (a segment before it does this by itself)
                convert = convert or LavfiSegment(auto_format(stage))
                converted = [*convert.push(frame)]
            else:
                converted = [frame]
            for one in converted:
                st.frames_in += 1
                yield from self._guarded(index, stage.push, one)
            if getattr(stage, "finished", False):
                self._cut_short = True
                break  # the stage takes no more input (trim reached its end): stop reading, as ffmpeg does
        # EOF: flush until the stage has nothing left. A stage whose last batch failed returns
        # the frames before the failure first and raises on the next call, so nothing is lost.
        while True:
            flushed = 0
            for out in self._guarded(index, stage.flush):
                flushed += 1
                yield out
            if not flushed:
                return

    def _guarded(self, index: int, fn: Callable[..., Any], *args: Any) -> Iterator[Frame]:
        """Frames from one push/flush of stage ``index``, one at a time; a filter error is counted
        and re-raised. While they are handed on, the frames of the call not yet given are counted
        (``_undelivered``): an early stop there leaves them in flight, not lost."""
        stage, st = self.stages[index], self.stats.stages[index]
        before = sum(stage.failed.values())
        pts = getattr(args[0], "pts", None) if args else None  # the frame being pushed, if any
        try:
            result = fn(*args)
            left = len(result) if isinstance(result, Sized) else 0
            it = iter(result)
            while True:
                try:
                    out = next(it)
                except StopIteration:
                    break
                st.frames_out += 1
                st.failed.update(stage.failed)
                left = max(left - 1, 0)
                self._undelivered[index] = left
                yield out
            self._undelivered[index] = 0
        except (ExitRequestedError, KeyboardInterrupt):
            # stopping early (the output's limit, Ctrl-C): the frame being pushed is unfinished,
            # not failed; it is in flight in this stage
            if args:
                self._undelivered[index] += 1
            raise
        except AvdnnError as exc:
            exc.with_context(filter=stage.label, pts=pts)
            st.failed.update(stage.failed)
            if sum(stage.failed.values()) == before:
                st.failed[exc.message] = st.failed.get(exc.message, 0) + 1
            raise
        except (MemoryError, GeneratorExit):
            raise
        except Exception as exc:
            # A bug in a filter (or a foreign error its seam did not translate): it keeps its type and
            # traceback (DESIGN.md, Errors); the frame is counted as failed, and the run still ends
            # with its output finished.
            st.failed.update(stage.failed)
            cause = f"bug: {type(exc).__name__}"
            st.failed[cause] = st.failed.get(cause, 0) + 1
            raise
        st.failed.update(stage.failed)

    def rate_into(self, index: int) -> Fraction | None:
        """Frame rate entering stage ``index`` (stages before it are configured by then)."""
        rate = self._in_rate
        for stage in self.stages[:index]:
            rate = stage_out_rate(stage, rate)
        return rate

    def _consumed(self, it: Iterator[Frame]) -> Iterator[Frame]:
        for frame in it:
            self._taken += 1
            yield frame

    def frames(self) -> Generator[Frame, None, None]:
        """The frames leaving the chain, in order; closes everything when exhausted or closed."""
        it: Iterator[Frame] = self._read()
        policy = queue_policy(self.source, QUEUE_DEPTH)
        if policy is not None:  # a live input: read at its pace into the drop queue, on a thread always
            live = bool(getattr(self.source, "live", False))
            self._queue = DropQueue(policy[1], policy[0], name=getattr(self.source, "name", ""), live=live)
            self._channel = self._queue
            it = self._reader = Prefetch(it, policy[1], name="avdnn-live", channel=self._queue)
            it = self._consumed(it)
        elif self.threaded:
            self._channel = Channel(QUEUE_DEPTH)
            it = self._reader = Prefetch(it, QUEUE_DEPTH, name="avdnn-decode", channel=self._channel)
            it = self._consumed(it)
        for i in range(len(self.stages)):
            it = self._stage(i, it)
        try:
            yield from it
        except ExitRequestedError:
            raise  # the run is stopping early: run() decides what that means
        except AvdnnError as exc:
            self.stats.error = exc
            raise
        finally:
            self.close()

    def run(self, progress: ProgressFn | None = None) -> RunStats:
        """Run to the sink; returns the stats, or raises the first error after closing cleanly.

        The sink writes on its own thread (when ``threaded``) while the chain works on the
        next frames; the frames before an error are always written before the output is
        finished.
        """
        assert self.sink is not None, "run() needs a sink; iterate frames() otherwise"
        sink = self.sink
        frames = self.frames()
        writer = (
            Writer(self._writer_fn(sink, progress), QUEUE_DEPTH, name="avdnn-encode", on_stop=self._interrupt)
            if self.threaded
            else None
        )
        first = True
        try:
            try:
                for frame in frames:
                    # the sink takes the chain's output rate once, when it opens on the first frame
                    item = (frame, self.rate_into(len(self.stages)) if first else None)
                    first = False
                    if not (writer.put(item) if writer is not None else self._write(sink, progress, item)):
                        self.stats.stopped_early = True
                        break
            except ExitRequestedError:
                # the writer reached -frames:v (a normal early stop) or failed (its error counts)
                if not self._stopping or writer is None or writer.error is not None:
                    raise
                self.stats.stopped_early = True
            if writer is not None:
                writer.finish()
            frames.close()  # the chain and the input (which reads the side streams on after an early stop)
        except BaseException as exc:
            if isinstance(exc, ExitRequestedError) and writer is not None and writer.error is not None:
                exc = writer.error
            self._failed = True  # nothing more is read for the output (no drain of the side streams)
            with contextlib.suppress(AvdnnError):  # the first error is the one that ended the run
                frames.close()
            if writer is not None and not writer.left_behind:
                with contextlib.suppress(AvdnnError):
                    writer.finish()  # the frames before the error still reach the output
            if writer is not None and writer.left_behind:
                writer.then(sink.abort)  # still writing into it (bounded join): finished when it ends
            else:
                sink.abort()
            self._sync_sink_stats(writer)
            if isinstance(exc, AvdnnError):
                self.stats.error = self.stats.error or exc
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, "stats", self.stats)  # noqa: B010 - any exception: the CLI prints them (Ctrl-C, a bug)
            self.report()
            raise exc
        try:
            if not sink.started:
                self._start_empty(sink)
            sink.close()
        except AvdnnError as exc:
            sink.abort()
            self.stats.error = exc
            exc.stats = self.stats
            raise
        self._sync_sink_stats(writer)
        self.report()
        return self.stats

    def _settle(self) -> None:
        """Each stage's declarations at the end (run.settle): by-design drops, frames in flight."""
        early = self.stats.error is not None or self._cut_short or not self._eof
        settle_stages(self.stages, self.stats.stages, self._undelivered, ended_early=early)

    def report(self) -> None:
        """Log every accounting violation as a warning naming the stage (tests assert check())."""
        for problem in self.stats.violations():
            log.warning("frame accounting: %s", problem)

    def _interrupt(self) -> None:
        """The output wants no more frames (or failed): stages stop waiting on work in flight."""
        self._stopping = True
        for stage in self.stages:
            interrupt = getattr(stage, "interrupt", None)  # DNN filters; libavfilter segments never wait
            if interrupt is not None:
                interrupt()

    def _writer_fn(self, sink: VideoOutput, progress: ProgressFn | None) -> Callable[[Any], bool]:
        return lambda item: self._write(sink, progress, item)

    def _write(self, sink: VideoOutput, progress: ProgressFn | None, item: tuple[Frame, Fraction | None]) -> bool:
        """Write one frame; False once -frames:v is reached."""
        frame, rate = item
        self.stats.output_in += 1
        try:
            sink.write(frame, rate)
        except AvdnnError as exc:
            if self._reopen is not None and self._reopen.recover(sink, exc, self._stop_request):
                return True  # reconnected: the frame reached the encoder, the run goes on
            self.stats.output_failed[exc.message] = self.stats.output_failed.get(exc.message, 0) + 1
            raise
        if frame.side_data.arrival is not None:
            self.stats.latency.add(time.monotonic() - frame.side_data.arrival)
        self._sync_drops()  # the progress line shows them as they happen
        self.stats.frames_written = sink.frames_written
        if progress is not None:
            progress(self.stats, frame)
        return self.max_frames is None or sink.packets_encoded < self.max_frames

    def _sync_drops(self) -> None:
        queue = self._queue
        if queue is not None and queue.dropped:
            self.stats.input_dropped[queue.cause] = queue.dropped

    def _start_empty(self, sink: VideoOutput) -> None:
        """No frame reached the sink: open it from the chain's negotiated output, as ffmpeg does."""
        if sink.video_index is None:
            return
        last = self.stages[-1] if self.stages else None
        info = getattr(last, "out_info", None)
        if info is not None:
            sink.start(info.width, info.height, info.pix_fmt, sar=info.sar or None, rate=info.frame_rate)
            return
        src = self.source.info
        if not src.pix_fmt:
            # ffmpeg's ifilter_send_eof: no frame came and the decoder never learnt its pixel format
            # (a damaged or cut header), so nothing can be configured: AVERROR_INVALIDDATA, exit 183
            raise InvalidDataError("Cannot determine format of the input video after EOF", file=self.source.name)
        if last is None and src.width and src.height:
            sink.start(src.width, src.height, src.pix_fmt, sar=src.sample_aspect_ratio, rate=src.frame_rate)

    def _sync_sink_stats(self, writer: Writer | None = None) -> None:
        if writer is not None and writer.unwritten:
            self.stats.over_limit += writer.unwritten
            self.stats.stopped_early = True
        if self.sink is not None:
            self.stats.frames_written = self.sink.frames_written
            self.stats.sink_past_time = self.sink.frames_past_time
            self.stats.sink_dropped = self.sink.frames_dropped - self.sink.frames_past_time
            self.stats.sink_duplicated = self.sink.frames_duplicated

    def close(self) -> None:
        """Close every stage and the source; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        if self._forget_stop is not None:
            self._forget_stop()
        reader = self._reader
        left_behind = False  # the decoder thread is still in the input: it closes it when it ends
        if reader is not None:
            interrupt = getattr(self.source, "interrupt", None)
            if interrupt is not None:
                interrupt()  # a live input waiting to be reopened stops waiting
            left_behind = not reader.close()  # joins the decoder thread (bounded) before the input is closed
            self._sync_drops()
            assert self._channel is not None
            # counted, not inferred: a frame read and then neither taken, dropped nor left queued
            # is a violation (run.stats), never "decoded ahead"
            self.stats.read_ahead = self._channel.refused
            self.stats.input_taken = self._taken
        first: BaseException | None = None
        if (
            self.sink is not None
            and self.stats.error is None
            and not self._failed
            and not self._eof
            and not left_behind
            and self.sink.sides
        ):
            sink = self.sink
            # the video stopped before its input's end (-frames:v, a trim): ffmpeg reads on until
            # every other stream has ended too (at the video's end, at the input's -t, or at EOF)
            try:
                self.source.drain_sides(lambda: all(sink.stream_ended(s) for s in sink.sides))
            except AvdnnError as exc:
                self.stats.error = exc
                first = exc
        self._settle()
        counters = getattr(self.source, "counters", None)
        if counters is not None:
            self.stats.input_counters = dict(counters)
            self.stats.input_complete = self._eof
        for stage in self.stages:
            try:
                stage.close()
            except Exception as exc:  # noqa: BLE001 - close all, report the first
                first = first or exc
        if reader is not None and left_behind:
            reader.then(self.source.close)  # never under the thread still reading it
        else:
            self.source.close()
        if first is not None and (self.stats.error is None or self.stats.error is first):
            raise first


def _output_format_tail(sink: VideoOutput | None) -> list[FilterSpec]:
    """The format= filter ffmpeg appends for the encoder's pixel formats."""
    if sink is None:
        return []
    fmts = sink.accepted_pix_fmts()
    ranges = sink.accepted_color_ranges()
    args = []
    if fmts:
        args.append("pix_fmts=" + "|".join(fmts))
    if ranges:
        args.append("color_ranges=" + "|".join(ranges))
    tail = [FilterSpec("format", None, ":".join(args))] if args else []
    if sink.size is not None:  # output -s: ffmpeg's autoscale, before the format filter
        tail.insert(0, FilterSpec("scale", "out", f"{sink.size[0]}:{sink.size[1]}"))
    trim = sink.trim_filter()
    if trim is not None:  # output -ss/-t: ffmpeg's insert_trim, after the format filter
        tail.append(FilterSpec(trim[0], "trim_out", trim[1]))
    return tail
