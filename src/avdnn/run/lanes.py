"""An output's other video streams: each its own pipeline over its own reader, on a thread of its own.

An output that maps several video streams (``-map 0:v -map 0:v``, two pads of a
``-filter_complex`` split, an HLS ladder) runs its first one on the run's own pipeline; each
other one is a :class:`LaneRunner`: its input opened again (a decoder of its own, as a graph's
core input is read), its chain, its :class:`~avdnn.media.output.videolane.VideoLane` of the same
sink. The header waits for every stream's first frame; the trailer for every stream's end (the
sink joins the runners before it ends its side streams). A stream that fails fails the output:
the first stream stops at its next frame with that error; an output that fails or is aborted
stops the other streams (their stop signal), and Ctrl-C reaches them through the run's.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable

from avdnn.errors import AvdnnError
from avdnn.media.output.sink import Sink
from avdnn.media.output.videolane import VideoLane
from avdnn.run.pipeline import Pipeline
from avdnn.run.stats import RunStats
from avdnn.run.stop import StopSignal, current_stop, stop_scope

__all__ = ["LaneRunner"]

#: Seconds a stopped stream gets to end before the output is finished without it.
JOIN_BOUND = 30.0


class LaneRunner:
    """Runs one video stream's pipeline on a thread; :meth:`finish` (a sink hook) waits for it.

    ``build()`` makes the pipeline (it is called here, so the pipeline sees this stream's stop
    signal); its errors are raised at once.
    """

    def __init__(self, build: Callable[[], Pipeline], lane: VideoLane, sink: Sink) -> None:
        self.lane = lane
        self._sink = sink
        self._stop = StopSignal()
        parent = current_stop()
        self._forget = parent.on_set(self._stop.set) if parent is not None else None
        with stop_scope(self._stop):
            self.pipeline = build()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        sink.before_sides_end.append(self.finish)
        sink.on_abort.append(self.stop)

    @property
    def stats(self) -> RunStats:
        return self.pipeline.stats

    def start(self) -> None:
        self._thread = threading.Thread(
            target=contextvars.copy_context().run,  # the run's context: its shared model scope
            args=(self._run,),
            name=f"avdnn-video-{self.lane.nth}",
            daemon=True,
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            self.pipeline.run()
        except KeyboardInterrupt:
            pass  # stopped: the output failed or the run was interrupted (its own thread says so)
        except AvdnnError as exc:
            self.error = exc
            self._sink.fail_lane(self.lane, exc)
        except BaseException as exc:  # noqa: BLE001 - a bug: raised on the output's thread by finish()
            self.error = exc
            self._sink.fail_lane(self.lane, exc)

    def stop(self) -> None:
        """The output is ending with an error: this stream stops at its next frame."""
        self._stop.set()

    def finish(self) -> None:
        """Wait for the stream's end (bounded once it was told to stop); raise what it failed with."""
        thread, self._thread = self._thread, None
        deadline: float | None = None
        while thread is not None and thread.is_alive():
            thread.join(0.5)
            if self._stop.is_set():  # told to stop: it ends at its next frame, or within its input's bound
                deadline = deadline or time.monotonic() + JOIN_BOUND
                if time.monotonic() > deadline:
                    break
        if self._forget is not None:
            self._forget()
            self._forget = None
        if thread is None and self.pipeline.sink is not None:
            with contextlib.suppress(AvdnnError):
                self.pipeline.close()  # never started: its input is closed
            self.lane.close()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
