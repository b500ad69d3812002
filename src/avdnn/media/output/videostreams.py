"""An output's video streams meeting before its header: every encoder opens, then the header.

Each video stream of an output (:class:`~.videolane.VideoLane`) opens its encoder on its chain's
first frame, each on its own thread; the header can only be written once every stream exists,
in output order. :class:`VideoStreams` is that meeting: the stream that comes last writes the
header (the output's ``create`` callback), the others wait for it. A stream that fails (its
encoder refuses its frames, its pipeline fails) fails the output: the waiting streams wake with
its error, and the first stream stops at its next frame (:meth:`VideoStreams.check_failed`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from fractions import Fraction

from avdnn.errors import AvdnnError, InvalidArgumentError, from_code
from avdnn.media.frame import Frame
from avdnn.media.output.videolane import VideoLane

__all__ = ["VideoStreams"]


class VideoStreams:
    """The video streams of one output (``lanes``, in output order) and their wait for the header.

    ``lock`` is the output's; ``create()`` opens every stream's encoder and writes the header;
    ``ready()`` says it was written; ``end_stream(index)`` ends a stream in the interleaver.
    """

    def __init__(
        self,
        *,
        lock: threading.RLock,
        create: Callable[[], None],
        ready: Callable[[], bool],
        end_stream: Callable[[int], None],
        name: str,
    ) -> None:
        self.lanes: list[VideoLane] = []
        self._cond = threading.Condition(lock)
        self._create = create
        self._ready = ready
        self._end_stream = end_stream
        self._name = name
        self._closed = False
        #: The first failure of a stream: (its rank, its error).
        self.failure: tuple[int, BaseException] | None = None

    def set(self, lanes: Sequence[VideoLane]) -> None:
        self.lanes = list(lanes)

    def record(self, lane: VideoLane, error: BaseException) -> None:
        """``lane`` failed (its encoder refused to open): the first failure is the output's."""
        with self._cond:
            self.failure = self.failure or (lane.nth, error)
            self._cond.notify_all()

    # -- a lane's host (videolane.LaneHost) ---------------------------------------------------

    def open_lane(self, lane: VideoLane, frame: Frame, rate: Fraction | None) -> None:
        """A stream's first frame: once every stream has one, the encoders open and the header is
        written (by whichever stream came last; the others wait for it)."""
        out_rate, tb = lane.encoder.timing(frame, rate)
        with self._cond:
            lane.first = (frame, out_rate, tb)
            if all(other.first is not None for other in self.lanes):
                try:
                    self._create()
                except BaseException as exc:
                    self.failure = self.failure or (lane.nth, exc)
                    raise
                finally:
                    self._cond.notify_all()
            else:
                self._cond.wait_for(lambda: self._ready() or self.failure is not None or self._closed)
                if not self._ready():
                    raise self.failed_error()
        lane.encoder.begin(tb)

    def end_lane(self, lane: VideoLane) -> None:
        """A stream (not the first) ends: its encoder is flushed, the output's other streams go on."""
        try:
            if lane.encoder.started:
                lane.encoder.flush()
        finally:
            with self._cond:
                if lane.first is None and self.failure is None:
                    self.failure = (lane.nth, InvalidArgumentError("its chain ended before any frame"))
                assert lane.video_index is not None
                self._end_stream(lane.video_index)
                self._cond.notify_all()

    def fail_lane(self, lane: VideoLane, error: BaseException) -> None:
        """A stream's pipeline failed: the output fails (the first stream stops at its next frame)."""
        self.record(lane, error)

    def check_failed(self) -> None:
        """Raise when a stream of the output failed (the output ends with its error)."""
        if self.failure is not None:
            raise self.failed_error()

    def failed_error(self) -> AvdnnError:
        """The error of a stream that cannot go on because another one failed first."""
        if self.failure is None:
            return InvalidArgumentError("the output was closed before its header", file=self._name)
        nth, exc = self.failure
        code = exc.code if isinstance(exc, AvdnnError) else -5  # a bug elsewhere: EIO here, its traceback there
        why = exc.message if isinstance(exc, AvdnnError) else f"{type(exc).__name__}: {exc}"
        if not why.startswith("video stream #"):
            why = f"video stream #{nth} of the output failed: {why}"
        return from_code(code, why, file=self._name)

    def close(self) -> None:
        """The output closes: a stream still waiting for the header stops waiting."""
        with self._cond:
            self._closed = True
            lanes = self.lanes
            if len(lanes) > 1 and lanes[0].first is None and self.failure is None:
                # the first stream ended without a frame: the others cannot get a header any more
                self.failure = (0, InvalidArgumentError("its chain ended before any frame"))
            self._cond.notify_all()
