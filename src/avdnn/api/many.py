"""Several outputs in one run, and frames of several sources merged: ffmpeg's ``-i A -i B outA outB``.

>>> report = avdnn.run_many([avdnn.Job("a.mp4", "hflip", output="a.mkv"),          # doctest: +SKIP
...                          avdnn.Job("b.mp4", "scale=320:-2", output="b.mkv")])
>>> for index, frame in avdnn.open_many([("a.mp4", "format=gray"), ("b.mp4", "")]):  # doctest: +SKIP
...     print(index, frame.pts)

Each output is its own pipeline over its own inputs (an input two outputs read is opened once
per output; docs/multistream.md), driven by a thread of its own, so a slow output never stalls
another. A failure fails its output only: the others run to their end, then
:class:`OutputsFailedError` names the failed ones and carries every output's accounting.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO, Unpack

from avdnn._util.redact import redact_url
from avdnn.api.single import FrameStream, RunOptions, run
from avdnn.dnn.shared import InstanceScope, current_scope
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.media.frame import Frame
from avdnn.media.input.live import is_network
from avdnn.run.multistats import MultiRunStats, OutputResult
from avdnn.run.stats import RunStats
from avdnn.run.stop import StopSignal, stop_scope
from avdnn.run.wiring import referenced_inputs

__all__ = ["Job", "MultiFrameStream", "OutputsFailedError", "open_many", "run_many"]

#: Seconds the outputs get to finish after Ctrl-C; one still blocked in its input after that
#: (a listening socket nobody connects to) is left behind, so the run ends as ffmpeg's does.
STOP_GRACE = 3.0


class OutputsFailedError(AvdnnError):
    """Some outputs of a run failed; the others ran to their end.

    ``stats`` holds every output's accounting (:class:`~avdnn.run.multistats.MultiRunStats`),
    ``failed`` the failed outputs (each with its own ``error``). The code is the first failure's.
    """

    def __init__(self, stats: MultiRunStats) -> None:
        self.failed = stats.failed
        first = self.failed[0].error
        assert first is not None
        what = "; ".join(f"{o.name} ({o.describe_inputs()}): {o.error}" for o in self.failed)
        super().__init__(what, code=first.code)
        self.stats = stats


class Job:
    """One output of a run: its input, chain, output and :func:`avdnn.run`'s keywords.

    ``Job("a.mp4", "hflip", output="a.mkv", frames=10)``; inputs 1, 2 ... go in
    ``more_inputs`` and ``map`` picks the streams (the video may come from any input).
    """

    def __init__(
        self,
        input: str,  # noqa: A002 - ffmpeg's -i
        filters: str = "",
        *,
        output: str | BinaryIO,
        **options: Unpack[RunOptions],
    ) -> None:
        self.input = input
        self.filters = filters
        self.output = output
        self.options: RunOptions = options

    @property
    def output_name(self) -> str:
        if isinstance(self.output, str):
            return "pipe:" if self.output == "-" else self.output
        return str(getattr(self.output, "name", "<file object>"))

    def inputs_read(self) -> list[tuple[int, str]]:
        """The inputs this output opens (those its maps name; all without maps), as (index, URL)."""
        urls = [self.input, *(url for url, _, _ in self.options.get("more_inputs", ()))]
        given = self.options.get("stream_options")
        maps = list(given.maps) if given is not None and given.maps else list(self.options.get("map") or [])
        return [(k, urls[k]) for k in sorted(referenced_inputs(maps, len(urls)))]

    def run(self) -> RunStats:
        """Run this output alone (what :func:`run_many` does on the output's thread)."""
        return run(self.input, self.filters, output=self.output, **self.options)


def run_many(jobs: Sequence[Job]) -> MultiRunStats:
    """Run every job's output at once, each on a thread of its own, until all have ended.

    Returns every output's accounting. A failed output does not stop the others: after they
    have finished, :class:`OutputsFailedError` names the failed ones and carries all the stats.
    Ctrl-C stops every output cleanly (their frames before are written) and re-raises
    ``KeyboardInterrupt`` with ``stats``. A bug (an exception that is not an
    :class:`~avdnn.AvdnnError`) is re-raised, with its traceback, once the others have finished.
    A live network input (``udp://``, ``rtsp://``, ...) or stdin named by two jobs is refused
    before anything runs: it cannot be read twice.
    """
    if not jobs:
        raise InvalidArgumentError("At least one output file must be specified")
    _refuse_shared_streams([[url for _, url in job.inputs_read()] for job in jobs], "outputs")
    _refuse_shared_outputs(jobs)
    stats = MultiRunStats([OutputResult(k, job.output_name, _shown(job.inputs_read())) for k, job in enumerate(jobs)])
    bugs: list[BaseException] = []
    stop = StopSignal()
    interrupt: KeyboardInterrupt | None = None
    with InstanceScope() as scope:  # DNN filters naming one model_instance share it across the outputs
        if len(jobs) == 1:  # one output: on the calling thread (the same driver, no thread to join)
            _drive(jobs[0], stats.outputs[0], bugs, stop, lambda: None)
        else:
            left = _Countdown(len(jobs))
            for k, job in enumerate(jobs):
                threading.Thread(
                    target=contextvars.copy_context().run,  # each thread sees the run's context (the shared scope)
                    args=(_drive, job, stats.outputs[k], bugs, stop, left.one_done),
                    name=f"avdnn-output-{k}",
                    daemon=True,
                ).start()
            try:
                left.wait()
            except KeyboardInterrupt as exc:
                interrupt = exc
                stop.set()  # every output stops at its next frame and finishes its file
                with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: stop waiting at once
                    left.wait(STOP_GRACE)
                for result in stats.outputs:
                    if not result.ended:  # blocked in its input (a listening socket, a read within its bound)
                        result.interrupted = True
        stats.instance_lines = scope.summary(labels=True)
    if bugs:
        with contextlib.suppress(AttributeError, TypeError):
            setattr(bugs[0], "stats", stats)  # noqa: B010 - the CLI prints them under the traceback
        raise bugs[0]
    if interrupt is not None or any(o.interrupted for o in stats.outputs):
        stopped = interrupt or next(o.stop_signal for o in stats.outputs if o.stop_signal is not None)
        setattr(stopped, "stats", stats)  # noqa: B010 - the CLI prints them (exit 255)
        raise stopped
    if stats.failed:
        raise OutputsFailedError(stats)
    return stats


def _drive(
    job: Job, result: OutputResult, bugs: list[BaseException], stop: StopSignal, done: Callable[[], None]
) -> None:
    """One output, start to end; how it ended goes into ``result`` (bugs into ``bugs``), then ``done()``."""
    try:
        with stop_scope(stop), current_scope().stream(f"out#{result.index}"):
            result.stats = job.run()
    except AvdnnError as exc:
        result.error = exc
        result.stats = getattr(exc, "stats", None)
    except KeyboardInterrupt as exc:
        result.interrupted = True
        result.stats = getattr(exc, "stats", None)
        result.stop_signal = exc
    except BaseException as exc:  # noqa: BLE001 - a bug: re-raised by run_many once the others have ended
        result.stats = getattr(exc, "stats", None)
        bugs.append(exc)
    finally:
        result.ended = True
        done()


class _Countdown:
    """Waits for the outputs' threads (a condition, not Thread.join: a join cut short by Ctrl-C
    cannot be waited on again reliably, and after Ctrl-C the outputs must still be waited for)."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._cond = threading.Condition()

    def one_done(self) -> None:
        with self._cond:
            self._left -= 1
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Until every output has ended (True), or ``timeout`` seconds have passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._left, timeout)


def _shown(inputs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(k, redact_url(url)) for k, url in inputs]


def _refuse_shared_streams(urls: Sequence[Sequence[str]], what: str) -> None:
    """A live input or stdin is read once: two outputs (``urls``: the inputs each reads) cannot share it."""
    readers: dict[str, list[int]] = {}
    for n, reads in enumerate(urls):
        for url in reads:
            if is_network(url, None) or url == "-" or url.startswith("pipe:"):
                readers.setdefault(url, []).append(n)
    for url, outs in readers.items():
        if len(outs) > 1:
            raise InvalidArgumentError(
                f"input '{redact_url(url)}' is a live stream and cannot be read twice, but {what} "
                f"{', '.join(f'#{n}' for n in outs)} read it: give each its own input",
                option="map",
            )


def _refuse_shared_outputs(jobs: Sequence[Job]) -> None:
    """Two outputs writing one file (or stdout) at once would interleave their bytes: refused
    (ffmpeg lets them; ``-f null -`` writes nothing and may repeat)."""
    seen: dict[str, int] = {}
    for n, job in enumerate(jobs):
        if not isinstance(job.output, str) or job.options.get("format") == "null":
            continue
        name = os.path.abspath(job.output) if job.output_name != "pipe:" else "pipe:"
        if name in seen:
            raise InvalidArgumentError(
                f"outputs #{seen[name]} and #{n} both write '{job.output_name}': give each output its own",
                file=job.output_name,
            )
        seen[name] = n


class MultiFrameStream:
    """Frames of several sources, each through its own chain, merged as they become ready.

    Iterating gives ``(index, frame)``: ``index`` is the source's position in the list given to
    :func:`open_many`; each source's frames come in their own order. ``stats`` has each
    source's accounting. A source that fails ends only its own frames: the others go on, and
    :class:`OutputsFailedError` is raised once they have all ended.
    """

    def __init__(self, sources: Sequence[str | tuple[str, str]], depth: int, options: RunOptions) -> None:
        if "output" in options:
            raise InvalidArgumentError("avdnn.open_many() iterates frames; use avdnn.run_many() to write files")
        specs = [(s, "") if isinstance(s, str) else s for s in sources]
        _refuse_shared_streams([[url] for url, _ in specs], "sources")
        self.stats = MultiRunStats(
            [OutputResult(k, "", [(0, redact_url(url))], kind="stream") for k, (url, _) in enumerate(specs)]
        )
        self._merge = _Merge(depth, len(specs))
        self._bugs: list[BaseException] = []
        self._stop = StopSignal()
        # one scope for the streams' shared model instances, entered in a context of its own
        # (not the caller's) that every stream's thread runs a copy of; left when all have ended
        self._scope = InstanceScope()
        self._context = contextvars.copy_context()
        self._context.run(self._scope.__enter__)
        self._threads = [
            threading.Thread(
                target=self._context.copy().run,
                args=(self._produce, k, url, chain, options),
                name=f"avdnn-stream-{k}",
                daemon=True,
            )
            for k, (url, chain) in enumerate(specs)
        ]
        self._ended = False
        for thread in self._threads:
            thread.start()

    def _produce(self, k: int, url: str, chain: str, options: RunOptions) -> None:
        result = self.stats.outputs[k]
        stream: FrameStream | None = None
        finished = False
        try:
            with stop_scope(self._stop), self._scope.stream(f"stream#{k}"):
                stream = run(url, chain, **options)
                result.stats = stream.stats
                for frame in stream:
                    if not self._merge.put((k, frame)):
                        return  # the caller stopped iterating
                finished = True
        except AvdnnError as exc:
            result.error = exc
            finished = True  # the chain closed itself on the error
        except KeyboardInterrupt:
            result.interrupted = True
        except BaseException as exc:  # noqa: BLE001 - a bug: re-raised to the caller at the end
            self._bugs.append(exc)
        finally:
            if stream is not None and not finished:
                with contextlib.suppress(AvdnnError):
                    stream.close()
            self._merge.done()

    def __iter__(self) -> Iterator[tuple[int, Frame]]:
        return self

    def __next__(self) -> tuple[int, Frame]:
        item = self._merge.get()
        if item is not None:
            return item
        self._finish()
        if self._bugs:
            raise self._bugs[0]
        if self.stats.failed:
            raise OutputsFailedError(self.stats)
        raise StopIteration

    def _finish(self) -> None:
        if not self._ended:
            self._ended = True
            for thread in self._threads:
                thread.join()
            self._context.run(self._scope.__exit__, None, None, None)
            self.stats.instance_lines = self._scope.summary(labels=True)

    def close(self) -> None:
        """Stop early: every source's chain and input are closed."""
        self._stop.set()
        self._merge.cancel()
        self._finish()

    def __enter__(self) -> MultiFrameStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_many(
    sources: Sequence[str | tuple[str, str]], *, depth: int = 8, **options: Unpack[RunOptions]
) -> MultiFrameStream:
    """Iterate the frames of several sources at once, each ``(input, chain)`` on a thread of its own.

    Yields ``(index, frame)`` as frames become ready (one bounded queue of ``depth`` frames
    holds them, so a consumer slower than the sources makes them wait, never buffers
    without bound). ``options`` are :func:`avdnn.open`'s, for every source.

    >>> with avdnn.open_many([("a.mp4", "hflip"), ("b.mp4", "")]) as frames:   # doctest: +SKIP
    ...     for index, frame in frames:
    ...         print(index, frame.pts)
    """
    if depth < 1:
        raise InvalidArgumentError(f"depth {depth}: at least one frame must fit in the queue", option="depth")
    return MultiFrameStream(sources, depth, options)


class _Merge:
    """One bounded queue that several producer threads feed and one consumer drains."""

    def __init__(self, depth: int, producers: int) -> None:
        self._items: deque[tuple[int, Frame]] = deque()
        self._depth = depth
        self._live = producers
        self._cancelled = False
        self._cond = threading.Condition()

    def put(self, item: tuple[int, Frame]) -> bool:
        """Blocks while full; False once the consumer has stopped."""
        with self._cond:
            while len(self._items) >= self._depth and not self._cancelled:
                self._cond.wait()
            if self._cancelled:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def done(self) -> None:
        with self._cond:
            self._live -= 1
            self._cond.notify_all()

    def get(self) -> tuple[int, Frame] | None:
        """The next frame of any source, or None once every producer is done."""
        with self._cond:
            while not self._items and self._live > 0:
                self._cond.wait()
            if not self._items:
                return None
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def cancel(self) -> None:
        with self._cond:
            self._cancelled = True
            self._items.clear()
            self._cond.notify_all()
