"""One source of a served pipeline: its runs, its state, and how it is kept up.

A source is one output of the pipeline's :class:`~avdnn.api.OutputSet` (its input through the
chain to its own output). Its state is read from its run, never guessed from elsewhere:

* ``starting``: its first run has given no frame yet;
* ``running``: frames are leaving its chain;
* ``reconnecting``: its input gave no frame for ``stall_after`` seconds while its run goes on
  (the live input is waiting or reopening, ``-reconnect_attempts``), or its network output's
  peer went away and the output is being reconnected with back-off, the run going on
  (:class:`~avdnn.api.OutputReopen`; an output that cannot even be opened restarts the run);
* ``offline``: its run ended (the input's own reopening gave up, or its network input ended); it
  is tried again every ``retry_interval`` seconds, the rest of the pipeline running on;
* ``ended``: its input reached its end, or it was stopped (removed, the pipeline deleted);
* ``failed``: its run raised: avdnn's one-line error, or a bug's traceback.

A run that gives no frame for ``watchdog`` seconds is stopped and started again. Every run's
accounting is kept (:mod:`avdnn.serve.accounting`); the time between a run's end and the next
run's first frame is counted as the source's gap.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from avdnn import api
from avdnn._util.redact import redact_text, redact_url
from avdnn.errors import AvdnnError
from avdnn.serve.accounting import RunView, Totals, read_run
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import UnavailableError
from avdnn.serve.history import History
from avdnn.serve.preview import PreviewFeed
from avdnn.serve.watchdog import Watchdog

if TYPE_CHECKING:
    from avdnn.run.latency import Latency

__all__ = ["KEEP_OUTPUTS", "STATES", "ServedSource"]

log = logging.getLogger("avdnn.serve")

STATES = ("starting", "running", "reconnecting", "offline", "ended", "failed")

#: the output names of its last runs shown (``outputs``; ``outputs_total`` counts them all)
KEEP_OUTPUTS = 16
#: seconds a run left behind is given to end once its listening socket was shut
_UNBLOCKED_GRACE = 1.0

#: seconds of frames the fps is measured over (frames leave a batching chain in bursts)
_FPS_WINDOW = 2.0


class ServedSource:
    """One source: ``make_job(k)`` gives the job of its run ``k`` (0 first, then each restart)."""

    def __init__(
        self,
        sid: str,
        url: str,
        make_job: Callable[[int], api.Job],
        *,
        outputs: api.OutputSet,
        config: ServeConfig,
        watchdog: Watchdog,
        key: str,
        scope: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.id = sid
        self.url = url
        self._make_job = make_job
        self._outputs = outputs
        self._config = config
        self._watchdog = watchdog
        self._key = key  # the watchdog's name for this source's restarts (pipeline/source)
        self._scope = scope  # entered around each run on its thread (its events to the service's bus)
        self._lock = threading.Lock()
        self._out: api.RunningOutput | None = None
        #: the running output's latency and its bins at the last sample (a window's p95)
        self._lat_mark: tuple[Latency, dict[int, int]] | None = None
        self._started = 0
        self._totals = Totals()
        self._last_view: RunView | None = None
        self._phase = "starting"  # the state while a run has given no frame (or none runs)
        self._terminal: str | None = None
        self.cause: str | None = None
        self.traceback: str | None = None
        self._removing = False
        self._restart_reason: str | None = None
        self._last_frame: float | None = None  # monotonic time of the current run's latest frame
        self._fps_mark: tuple[float, int] = (0.0, 0)  # (time, frames) where the current fps window began
        self._frames = 0  # frames the current run wrote
        self._fps = 0.0
        self._read_seen = (0, 0.0)  # (frames read, when that count was first seen) of the current run
        self._gap_from: float | None = None
        self._backoff_step = 0
        #: the outputs of its last runs (their names as shown), the newest last
        self.output_names: deque[str] = deque(maxlen=KEEP_OUTPUTS)
        self.preview = PreviewFeed()
        #: its last ``history`` seconds, sampled by the service (:meth:`sample`)
        self.history = History(config.history)
        self._last_told: tuple[str | None, str] | None = None

    # -- runs -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start its first run (raises what starting it raises: the caller refuses the request).

        A source already stopped (its pipeline deleted, the service stopping, while the request that
        made it was still starting it) is not started: 503."""
        with self._lock:
            if self._removing:
                raise UnavailableError(f"source '{self.id}' was stopped while it was starting")
            self._start_locked()

    def _start_locked(self) -> None:
        k = self._started
        job = self._make_job(k)
        options = api.RunOptions(**job.options)
        options["progress"] = self._on_frame
        job = api.Job(job.input, job.filters, output=job.output, **options)
        self._last_frame = None
        self._frames, self._fps = 0, 0.0
        self._read_seen = (0, 0.0)
        reopen = None
        if isinstance(job.output, str) and api.is_network_url(job.output, None):  # a pushed output: kept up
            reopen = api.OutputReopen(backoff=self._config.backoff, max_delay=self._config.retry_interval)
        out = self._outputs.start(job, label=self.id, on_end=self._ended, reopen=reopen, scope=self._scope)
        self._started += 1
        self._out = out
        self.output_names.append(redact_url(str(job.output)))

    def _restart(self, reason: str) -> None:
        """The watchdog's call: run again (offline retry, output reopened, watchdog)."""
        with self._lock:
            if self._removing or self._terminal is not None or self._out is not None:
                return
            self._totals.restarts[reason] = self._totals.restarts.get(reason, 0) + 1
            try:
                self._start_locked()
            except AvdnnError as exc:  # the set refused it (closing): stay offline, try again later
                self.cause = exc.oneline()
                self._watchdog.schedule(self._key, self._config.retry_interval, lambda: self._restart(reason))
                return
        log.info("%s: %s: started again (%s)", self._key, redact_url(self.url), reason)

    def _on_frame(self, stats: Any, frame: Any) -> None:
        """Each frame the run wrote (its writer thread): a few stores, nothing that waits."""
        now = time.monotonic()
        self._frames += 1
        if self._last_frame is None:  # the run's first frame: a gap before it ends here
            self._first_frame(now)
            self._fps_mark = (now, self._frames)
        elif now - self._fps_mark[0] >= _FPS_WINDOW:
            self._fps = (self._frames - self._fps_mark[1]) / (now - self._fps_mark[0])
            self._fps_mark = (now, self._frames)
        self._last_frame = now
        self.preview.offer(frame)

    def _first_frame(self, now: float) -> None:
        with self._lock:
            if self._gap_from is not None:
                self._totals.gap_seconds += now - self._gap_from
                self._gap_from = None
            self._backoff_step = 0
            self.cause = None

    def _ended(self, out: api.RunningOutput) -> None:
        """A run ended (its thread): count it, then decide whether and when it runs again."""
        view = read_run(out.result.stats, reopen=out.reopen)
        error = out.result.error
        with self._lock:
            self._totals.add(view)
            self._last_view = view
            if self._out is out:
                self._out = None
            if self.cause is not None and self.cause.endswith("left behind"):
                self.cause += " (its run has ended since)"
            now = time.monotonic()
            reason, self._restart_reason = self._restart_reason, None
            if self._removing or (out.result.interrupted and reason is None):
                self._terminal = self._terminal or "ended"
                return
            if out.bug is not None:
                self._terminal = "failed"
                self.cause = redact_text(f"bug: {type(out.bug).__name__}: {out.bug}")
                self.traceback = out.traceback
                log.error("%s: %s\n%s", self._key, self.cause, out.traceback or "")
                return
            if reason == "watchdog":
                self._phase, self.cause = "reconnecting", f"no frame for {self._config.watchdog:g} s (watchdog)"
                self._wait_then_restart(0.0, reason, now)
            elif error is not None and self._output_failed(out):
                if not api.is_network_url(out.result.output, None):
                    self._fail(error)
                    return
                delay = min(self._config.backoff * 2**self._backoff_step, self._config.retry_interval)
                self._backoff_step += 1
                self._phase, self.cause = "reconnecting", error.oneline()
                self._wait_then_restart(delay, "output", now)
            elif api.is_network_url(self.url, None):
                self._phase = "offline"
                self.cause = error.oneline() if error is not None else "the input ended"
                self._wait_then_restart(self._config.retry_interval, "offline", now)
            elif error is not None:
                self._fail(error)
                return
            else:
                self._terminal = "ended"
                return
        again = (self.cause, self._phase) == self._last_told  # a retry failing as the one before: verbose only
        self._last_told = (self.cause, self._phase)
        log.log(logging.INFO - 1 if again else logging.WARNING, "%s: %s (%s)", self._key, self.cause, self._phase)

    def _fail(self, error: AvdnnError) -> None:
        self._terminal = "failed"
        self.cause = error.oneline()
        log.error("%s: %s: %s", self._key, redact_url(self.url), self.cause)

    def _wait_then_restart(self, delay: float, reason: str, now: float) -> None:
        if self._gap_from is None:
            self._gap_from = now
        self._watchdog.schedule(self._key, delay, lambda: self._restart(reason))

    @staticmethod
    def _output_failed(out: api.RunningOutput) -> bool:
        """Whether the run ended because its output failed (not its input or its chain)."""
        stats = out.result.stats
        if stats is not None and stats.output_failed:
            return True
        error = out.result.error
        name = out.result.output
        return error is not None and error.file is not None and error.file in (name, redact_url(name))

    def check(self, now: float) -> None:
        """The watchdog's periodic look: a run with no frame for ``watchdog`` seconds is restarted."""
        with self._lock:
            self._input_seen(now)
            out, last = self._out, self._last_frame
            if out is None or last is None or self._removing or now - last <= self._config.watchdog:
                return
            if self._restart_reason is not None:
                return  # already stopping it
            self._restart_reason = "watchdog"
        log.warning("%s: no frame for %.0f s: restarting it (watchdog)", self._key, now - last)
        out.stop()

    def stop(self, timeout: float) -> bool:
        """Stop it for good (removed, or its pipeline deleted): its run as Ctrl-C stops one.

        True when its run has ended within ``timeout`` seconds (its output finished).
        """
        with self._lock:
            self._removing = True
            out = self._out
        self._watchdog.cancel(self._key)
        ended = True
        if out is not None:
            out.stop()
            ended = out.wait(timeout)
            if not ended and out.unblock():  # waiting for a peer: its socket shut, the open fails
                ended = out.wait(min(timeout, _UNBLOCKED_GRACE))
        with self._lock:
            self._terminal = self._terminal or "ended"
            if not ended:
                self.cause = f"still blocked in its input after {timeout:g} s: left behind"
                log.warning("%s: %s", self._key, self.cause)
        self.sample(time.time())  # its history ends on its final accounting
        return ended

    @property
    def lingering(self) -> bool:
        """Stopped, but its run is still blocked in its input (left behind): it still counts."""
        out = self._out
        return self._removing and out is not None and out.running

    # -- what it shows --------------------------------------------------------------------

    def _live(self) -> RunView | None:
        out = self._out
        live = out.live if out is not None else None
        return None if live is None or out is None else read_run(live.stats, live.input_counters(), out.reopen)

    def totals(self) -> Totals:
        """Every run's counts, the one going on included."""
        with self._lock:
            run = self._live()
            return self._totals.plus(run)

    @property
    def state(self) -> str:
        with self._lock:
            return self._state_locked(time.monotonic())

    def _state_locked(self, now: float) -> str:
        if self._terminal is not None:
            return self._terminal
        last = self._last_frame
        if self._out is None or last is None:
            return self._phase
        if self._out.reopen is not None and self._out.reopen.reopening:
            return "reconnecting"  # its network output went away and is being reconnected
        # reconnecting is the input's silence: a slow chain that still reads its input is running
        return "running" if now - max(last, self._input_seen(now)) <= self._config.stall_after else "reconnecting"

    def _input_seen(self, now: float) -> float:
        """When the run's input was last seen giving frames (its count read now and at each look)."""
        live = self._out.live if self._out is not None else None
        if live is None:
            return 0.0
        count = live.stats.frames_read
        if count != self._read_seen[0]:
            self._read_seen = (count, now)
        return self._read_seen[1]

    def fps(self) -> float:
        """Frames per second now (0 when no frame came for ``stall_after`` seconds)."""
        last, now = self._last_frame, time.monotonic()
        if last is None or now - last > self._config.stall_after:
            return 0.0
        if self._fps:
            return self._fps
        since, frames = self._fps_mark  # the first window is not over yet: the frames so far
        return (self._frames - frames) / (now - since) if now > since else 0.0

    def _latency_view(self, run: RunView | None) -> RunView | None:
        """The run whose latency is shown: the one going on once it has some, else the last one."""
        return run if run is not None and run.latency_count else self._last_view

    def _window_p95(self) -> float | None:
        """The latency p95 of the frames written since the sample before (None: none were)."""
        out = self._out
        live = out.live if out is not None else None
        if live is None:
            return None
        latency = live.stats.latency
        before = self._lat_mark[1] if self._lat_mark is not None and self._lat_mark[0] is latency else None
        p95 = latency.percentile_since(before, 95)
        self._lat_mark = (latency, latency.snapshot())
        return p95

    def sample(self, t: float) -> Totals:
        """One sample of it into its history (its agent's sampler, once a second; its stop); the
        totals it read."""
        with self._lock:  # read and kept under the one lock: the samples are in the order of the reads
            run = self._live()
            totals = self._totals.plus(run)
            self.history.add(
                t,
                state=self._state_locked(time.monotonic()),
                fps=self.fps(),
                p95=self._window_p95(),
                read=totals.read,
                written=totals.written,
                dropped=totals.dropped,
            )
        return totals

    def status(self) -> dict[str, Any]:
        """The source as the API shows it: state, the accounting of its runs, fps, latency."""
        return self.snapshot()[0]

    def snapshot(self) -> tuple[dict[str, Any], Totals]:
        """Its status and the totals in it, read at once."""
        with self._lock:
            now = time.monotonic()
            state = self._state_locked(now)
            run = self._live()
            totals = self._totals.plus(run)
            lat = self._latency_view(run)
            out: dict[str, Any] = {
                "id": self.id,
                "url": redact_url(self.url),
                "state": state,
                "cause": self.cause if state not in ("running", "starting") else None,
                "traceback": self.traceback,
                **totals.as_dict(),
                "fps": round(self.fps(), 2),
                "latency": {"p50": None if lat is None else lat.p50, "p95": None if lat is None else lat.p95},
                "outputs": list(self.output_names),
                "outputs_total": self._started,
                "retry_in": self._watchdog.due_in(self._key) if state in ("offline", "reconnecting") else None,
            }
        return out, totals
