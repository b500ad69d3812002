"""Outputs started and stopped one by one while the others run: what ``avdnn serve`` runs on.

>>> with avdnn.api.OutputSet() as outputs:                                   # doctest: +SKIP
...     cam1 = outputs.start(avdnn.Job("rtsp://cam1/h264", chain, output="cam1.mkv"), label="cam1")
...     cam2 = outputs.start(avdnn.Job("rtsp://cam2/h264", chain, output="cam2.mkv"), label="cam2")
...     print(cam1.snapshot()["frames_read"], outputs.instances())
...     cam2.stop()                      # as Ctrl-C stops a run: cam2.mkv is finished, cam1 goes on

The execution is :mod:`avdnn.run.outputset` (each output the very run ``run_many`` gives it);
this takes :class:`~avdnn.api.Job` s, as the rest of the API does.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from avdnn.api.many import Job
from avdnn.dnn.shared import InstanceReport
from avdnn.dnn.tasks import RUN_TIME_EDGES, RunTimes
from avdnn.run import outputset
from avdnn.run.outputreopen import OutputReopen
from avdnn.run.outputset import RunningOutput
from avdnn.run.parallel import STOP_GRACE
from avdnn.run.watch import LiveRun

__all__ = [
    "RUN_TIME_EDGES",
    "STOP_GRACE",
    "InstanceReport",
    "LiveRun",
    "OutputReopen",
    "OutputSet",
    "RunTimes",
    "RunningOutput",
]


class OutputSet:
    """A changing set of outputs whose DNN filters share their ``model_instance`` models.

    :meth:`start` runs one more :class:`~avdnn.api.Job` on a thread of its own; its
    :class:`RunningOutput` reads its accounting live (``snapshot()``), stops it (``stop()``, as
    Ctrl-C does: its output is finished) and holds how it ended (``result``, a bug's ``traceback``).
    :meth:`close` stops the rest within a bound and frees the shared models.
    """

    def __init__(self) -> None:
        self._set = outputset.OutputSet()

    def start(
        self,
        job: Job,
        *,
        label: str,
        on_end: Callable[[RunningOutput], None] | None = None,
        reopen: OutputReopen | None = None,
        scope: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> RunningOutput:
        """Start ``job`` now; ``on_end(output)`` runs on its thread once it has ended; ``reopen``
        reconnects its network output when the peer goes away, the run going on; ``scope()`` is
        entered on its thread around the run (``lambda: avdnn.events.listen(fn)``: its events)."""
        return self._set.start(job.request(), label=label, on_end=on_end, reopen=reopen, scope=scope)

    def outputs(self) -> list[RunningOutput]:
        """The outputs still running."""
        return self._set.outputs()

    def instances(self) -> list[InstanceReport]:
        """The shared model instances: streams, inferences, batches, the backend's time per batch."""
        return self._set.instances()

    def close(self, timeout: float = STOP_GRACE) -> list[RunningOutput]:
        """Stop every output and wait up to ``timeout`` seconds; returns those left behind."""
        return self._set.close(timeout)

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
