"""Outputs started and stopped one by one while the others run, in one shared model scope.

:func:`~avdnn.run.parallel.run_outputs` runs a set of outputs fixed before it starts. A service
(``avdnn serve``) needs a set that changes: a camera joins a running pipeline and its frames are
batched with the others' in the shared model instances; one leaves, stopped as Ctrl-C stops a
run (the frames before are written, the file is finished) while the others never pause. Each
output is driven as ``run_outputs`` drives one: :class:`~avdnn.run.builder.RunBuilder` on a
thread of its own, inside the set's :class:`~avdnn.dnn.shared.InstanceScope`, with a
:class:`~avdnn.run.stop.StopSignal` of its own; while it runs, its accounting is read live
(:class:`~avdnn.run.watch.LiveRun`). How it ended is its :class:`~avdnn.run.multistats.OutputResult`,
a bug's traceback included.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager

from avdnn._util.redact import redact_text, redact_url
from avdnn.dnn.shared import InstanceReport, InstanceScope
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.media.input.unblock import shut_listening
from avdnn.run.builder import RunBuilder
from avdnn.run.multistats import OutputResult
from avdnn.run.outputreopen import OutputReopen, reopen_scope
from avdnn.run.parallel import STOP_GRACE, refuse_shared_streams
from avdnn.run.request import RunRequest
from avdnn.run.stop import StopSignal, stop_scope
from avdnn.run.watch import LiveRun, watch_scope

__all__ = ["OutputSet", "RunningOutput"]


class RunningOutput:
    """One output of an :class:`OutputSet`: its thread, its stop, its live and final accounting.

    ``result`` is filled when it ends (``error``, ``interrupted`` when it was stopped, ``stats``);
    ``bug`` and ``traceback`` hold an exception that is not an :class:`~avdnn.AvdnnError`.
    """

    def __init__(self, label: str, request: RunRequest, index: int, reopen: OutputReopen | None = None) -> None:
        self.label = label
        self.request = request
        #: the policy reconnecting its network output (its counts: reopens, gap_seconds)
        self.reopen = reopen
        self.result = OutputResult(index, request.output_name, [(k, redact_url(u)) for k, u in request.inputs_read()])
        self.stop_signal = StopSignal()
        self.live: LiveRun | None = None
        self.bug: BaseException | None = None
        self.traceback: str | None = None
        self.started_at = time.monotonic()
        self._done = threading.Event()

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def stop(self) -> None:
        """Stop it as Ctrl-C stops a run: at its next frame, its output finished (returns at once)."""
        self.stop_signal.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until it has ended (True) or ``timeout`` seconds have passed (False)."""
        return self._done.wait(timeout)

    def unblock(self) -> int:
        """Shut the sockets its listening inputs wait in (media.input.unblock), so that a run stopped
        while it waits for a peer ends; how many were shut. Call it once :meth:`stop` was not enough."""
        request = self.request
        return sum(shut_listening(url, opts) for url, _, opts in map(request.input_of, range(request.n_inputs)))

    def snapshot(self) -> dict[str, object] | None:
        """Its accounting now (live while it runs, final once it ended; None before its pipeline exists)."""
        if self.result.ended and self.result.stats is not None:
            return self.result.stats.as_dict()
        live = self.live
        return None if live is None else live.snapshot()

    def _watch(self, live: LiveRun) -> None:
        self.live = live


class OutputSet:
    """A changing set of outputs sharing one model scope (``model_instance`` names one model).

    ``with OutputSet() as outputs: out = outputs.start(request, label="cam1")``. Each output runs
    until its input ends, it fails or :meth:`RunningOutput.stop` stops it; ``on_end`` (given to
    :meth:`start`) is called on the output's thread once it has ended. :meth:`close` stops the
    outputs still running, waits for them within a bound, and frees the shared models.
    """

    def __init__(self) -> None:
        self._scope = InstanceScope()
        # the scope is entered in a context of its own, which every output's thread runs a copy of
        self._context = contextvars.copy_context()
        self._context.run(self._scope.__enter__)
        self._lock = threading.Lock()
        self._outputs: list[RunningOutput] = []
        self._count = 0
        self._closed = False

    def start(
        self,
        request: RunRequest,
        *,
        label: str,
        on_end: Callable[[RunningOutput], None] | None = None,
        reopen: OutputReopen | None = None,
        scope: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> RunningOutput:
        """Start one more output on a thread of its own; its filters join the set's shared models.

        ``reopen``: reconnect its network output when its peer goes away (run.outputreopen).
        ``scope``: a context manager made and entered on the output's thread around its run, so
        that what the run builds sees it (``avdnn.events.listen``: this output's events). A
        live input (or stdin) that a running output already reads is refused: it cannot be read twice.
        """
        with self._lock:
            if self._closed:
                raise InvalidArgumentError("the output set is closed")
            running = [o for o in self._outputs if o.running]
            reads = [[url for _, url in o.request.inputs_read()] for o in running]
            refuse_shared_streams([*reads, [url for _, url in request.inputs_read()]], "outputs")
            out = RunningOutput(label, request, self._count, reopen)
            self._count += 1
            self._outputs = [*running, out]
        thread = threading.Thread(
            target=self._context.copy().run,
            args=(self._drive, out, on_end, scope),
            name=f"avdnn-output-{label}",
            daemon=True,  # one blocked in its input past close()'s bound is left behind, as run_outputs does
        )
        thread.start()
        return out

    def _drive(
        self,
        out: RunningOutput,
        on_end: Callable[[RunningOutput], None] | None,
        scope: Callable[[], AbstractContextManager[object]] | None,
    ) -> None:
        result = out.result
        try:
            with (
                stop_scope(out.stop_signal),
                watch_scope(out._watch),
                reopen_scope(out.reopen),
                self._scope.stream(out.label),
                scope() if scope is not None else contextlib.nullcontext(),
            ):
                result.stats = RunBuilder(out.request).run()
        except AvdnnError as exc:
            result.error = exc
            result.stats = getattr(exc, "stats", None)
        except KeyboardInterrupt as exc:  # stopped (its StopSignal): the output was finished cleanly
            result.interrupted = True
            result.stats = getattr(exc, "stats", None)
        except BaseException as exc:  # noqa: BLE001 - a bug: kept with its traceback, the others run on
            result.stats = getattr(exc, "stats", None)
            out.bug = exc
            out.traceback = redact_text("".join(traceback.format_exception(exc)))
        finally:
            result.ended = True
            out._done.set()
            if on_end is not None:
                on_end(out)

    def outputs(self) -> list[RunningOutput]:
        """The outputs started and not ended yet (ended ones are the caller's to keep)."""
        with self._lock:
            return [o for o in self._outputs if o.running]

    def instances(self) -> list[InstanceReport]:
        """The shared model instances of the set, each with its streams and batches so far."""
        return self._scope.reports()

    def close(self, timeout: float = STOP_GRACE) -> list[RunningOutput]:
        """Stop every running output, wait up to ``timeout`` seconds for all, free the shared models.

        Returns the outputs still running after the bound (blocked in their input: left behind).
        """
        with self._lock:
            if self._closed:
                return []
            self._closed = True
            running = [o for o in self._outputs if o.running]
        for out in running:
            out.stop()
        deadline = time.monotonic() + timeout
        left = [o for o in running if not o.wait(max(0.0, deadline - time.monotonic()))]
        self._context.run(self._scope.__exit__, None, None, None)
        return left

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
