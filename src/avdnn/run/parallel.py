"""Several outputs at once (ffmpeg's ``-i A -i B outA outB``), and several iterated sources merged.

Each output is its own run over its own inputs (an input two outputs read is opened once per
output; docs/multistream.md), driven by a thread of its own, so a slow output never stalls
another. A failure fails its output only: the others run to their end, and every output's
accounting and error is collected in one :class:`~avdnn.run.multistats.MultiRunStats`. Ctrl-C
reaches the main thread only: it sets the run's :class:`~avdnn.run.stop.StopSignal`, every output
stops at its next frame and finishes its file, and one still blocked in its input after
:data:`STOP_GRACE` seconds is left behind. DNN filters naming one ``model_instance`` share it
across the outputs (one :class:`~avdnn.dnn.shared.InstanceScope` per run, which every output
enters too: an output left behind keeps its models until it ends).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence

from avdnn._util.joins import OwnedThread
from avdnn._util.redact import redact_url
from avdnn.dnn.shared import InstanceScope, format_report
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.media.frame import Frame
from avdnn.media.input.live import is_network
from avdnn.run.builder import RunBuilder
from avdnn.run.framestream import FrameStream
from avdnn.run.multistats import MultiRunStats, OutputResult
from avdnn.run.request import RunOptions, RunRequest
from avdnn.run.stop import StopSignal, stop_scope

__all__ = ["STOP_GRACE", "ParallelFrames", "run_outputs"]

#: Seconds the outputs get to finish after Ctrl-C; one still blocked in its input after that
#: (a listening socket nobody connects to) is left behind, so the run ends as ffmpeg's does.
STOP_GRACE = 3.0


def run_outputs(requests: Sequence[RunRequest]) -> MultiRunStats:
    """Run every request's output at once, each on a thread of its own, until all have ended.

    Returns every output's accounting, the failed ones with their error (the caller decides what a
    failure means). Ctrl-C stops every output cleanly and re-raises ``KeyboardInterrupt`` with
    ``stats``; a bug (an exception that is not an :class:`~avdnn.AvdnnError`) is re-raised, with
    its traceback and ``stats``, once the others have finished. A live network input or stdin
    named by two outputs, or two outputs writing one file, are refused before anything runs.
    """
    if not requests:
        raise InvalidArgumentError("At least one output file must be specified")
    refuse_shared_streams([[url for _, url in r.inputs_read()] for r in requests], "outputs")
    refuse_shared_outputs(requests)
    stats = MultiRunStats([OutputResult(k, r.output_name, _shown(r.inputs_read())) for k, r in enumerate(requests)])
    bugs: list[BaseException] = []
    stop = StopSignal()
    interrupt: KeyboardInterrupt | None = None
    with InstanceScope() as scope:  # DNN filters naming one model_instance share it across the outputs
        if len(requests) == 1:  # one output: on the calling thread (the same driver, no thread to join)
            _drive(requests[0], stats.outputs[0], bugs, stop, lambda: None, scope)
        else:
            left = _Countdown(len(requests))
            for k, request in enumerate(requests):
                threading.Thread(
                    target=contextvars.copy_context().run,  # each thread sees the run's context (the shared scope)
                    args=(_drive, request, stats.outputs[k], bugs, stop, left.one_done, scope),
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
        stats.instances = scope.reports()
        stats.instance_lines = [format_report(r, labels=True) for r in stats.instances]
    if bugs:
        with contextlib.suppress(AttributeError, TypeError):
            setattr(bugs[0], "stats", stats)  # noqa: B010 - the CLI prints them under the traceback
        raise bugs[0]
    if interrupt is not None or any(o.interrupted for o in stats.outputs):
        stopped = interrupt or next(o.stop_signal for o in stats.outputs if o.stop_signal is not None)
        setattr(stopped, "stats", stats)  # noqa: B010 - the CLI prints them (exit 255)
        raise stopped
    return stats


def _drive(
    request: RunRequest,
    result: OutputResult,
    bugs: list[BaseException],
    stop: StopSignal,
    done: Callable[[], None],
    scope: InstanceScope,
) -> None:
    """One output, start to end; how it ended goes into ``result`` (bugs into ``bugs``), then ``done()``.

    The output holds its own entry of the run's ``scope``: an output left behind after Ctrl-C's
    grace keeps the shared models it uses until it really ends (the last to leave frees them).
    """
    try:
        with scope, stop_scope(stop), scope.stream(f"out#{result.index}"):
            result.stats = RunBuilder(request).run()
    except AvdnnError as exc:
        result.error = exc
        result.stats = getattr(exc, "stats", None)
    except KeyboardInterrupt as exc:
        result.interrupted = True
        result.stats = getattr(exc, "stats", None)
        result.stop_signal = exc
    except BaseException as exc:  # noqa: BLE001 - a bug: re-raised by run_outputs once the others have ended
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


def refuse_shared_streams(urls: Sequence[Sequence[str]], what: str) -> None:
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


def refuse_shared_outputs(requests: Sequence[RunRequest]) -> None:
    """Two outputs writing one file (or stdout) at once would interleave their bytes: refused
    (ffmpeg lets them; ``-f null -`` writes nothing and may repeat)."""
    seen: dict[str, int] = {}
    for n, request in enumerate(requests):
        name = request.writes_file()
        if name is None:
            continue
        if name in seen:
            raise InvalidArgumentError(
                f"outputs #{seen[name]} and #{n} both write '{request.output_name}': give each output its own",
                file=request.output_name,
            )
        seen[name] = n


class ParallelFrames:
    """Frames of several sources, each ``(input, chain)`` through its own run on a thread of its own,
    merged as they become ready into one bounded queue of ``depth`` frames.

    :meth:`next` gives ``(index, frame)`` (``index``: the source's position), None once every
    source has ended; :meth:`end` then raises the first bug. A source that fails ends only its own
    frames: its error is in ``stats``. ``options`` are :func:`avdnn.open`'s, for every source.
    """

    def __init__(self, specs: Sequence[tuple[str, str]], depth: int, options: RunOptions) -> None:
        refuse_shared_streams([[url] for url, _ in specs], "sources")
        self.stats = MultiRunStats(
            [OutputResult(k, "", [(0, redact_url(url))], kind="stream") for k, (url, _) in enumerate(specs)]
        )
        self._merge = MergeQueue(depth, len(specs))
        self._bugs: list[BaseException] = []
        self._stop = StopSignal()
        # one scope for the streams' shared model instances, entered in a context of its own
        # (not the caller's) that every stream's thread runs a copy of; left when all have ended
        self._scope = InstanceScope()
        self._context = contextvars.copy_context()
        self._context.run(self._scope.__enter__)
        self._threads = [
            OwnedThread(
                functools.partial(self._context.copy().run, self._produce, k, url, chain, options),
                name=f"avdnn-stream-{k}",
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
            # its own entry of the scope: a stream left behind by close() keeps its models until it ends
            with self._scope, stop_scope(self._stop), self._scope.stream(f"stream#{k}"):
                stream = RunBuilder(RunRequest(url, chain, **options)).frames()
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

    def next(self) -> tuple[int, Frame] | None:
        """The next frame of any source, or None once every source has ended."""
        return self._merge.get()

    def end(self) -> None:
        """After the last frame: wait for the sources' threads, then raise the first bug (if any)."""
        self._finish()
        if self._bugs:
            raise self._bugs[0]

    def _finish(self) -> None:
        """Wait for the sources' threads, each with a bound (a source blocked in its input, a listening
        socket nobody connects to, cannot stop at a frame: it is left behind, and closes itself)."""
        if not self._ended:
            self._ended = True
            for k, thread in enumerate(self._threads):
                result = self.stats.outputs[k]
                if not thread.join(what=f"source #{k} ({result.describe_inputs()})") and result.error is None:
                    result.interrupted = True
            self._context.run(self._scope.__exit__, None, None, None)
            self.stats.instances = self._scope.reports()
            self.stats.instance_lines = [format_report(r, labels=True) for r in self.stats.instances]

    def close(self) -> None:
        """Stop early: every source's chain and input are closed."""
        self._stop.set()
        self._merge.cancel()
        self._finish()


class MergeQueue:
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
