"""The frames of a run without an output, handed to the caller's loop (``avdnn.run``/``avdnn.open``).

A frame handed to the caller counts as written (the caller is the output), and its end-to-end
latency ends there; closing the stream early closes the chain and the input.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from avdnn.media.frame import Frame
from avdnn.run.pipeline import Pipeline
from avdnn.run.stats import RunStats

__all__ = ["FrameStream", "LimitedFrameStream"]


class FrameStream:
    """The frames leaving a chain, in order. ``stats`` is complete once iteration ends."""

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        self._it = pipeline.frames()

    @property
    def stats(self) -> RunStats:
        return self._pipeline.stats

    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        frame = next(self._it)
        self._pipeline.stats.frames_written += 1  # handed to the caller counts as written
        self._pipeline.stats.output_in += 1
        if frame.side_data.arrival is not None:  # end-to-end latency: input to the caller's hands
            self._pipeline.stats.latency.add(time.monotonic() - frame.side_data.arrival)
        return frame

    def close(self) -> None:
        """Stop early: closes the chain and the input."""
        self._it.close()
        self._pipeline.stats.stopped_early = True

    def __enter__(self) -> FrameStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LimitedFrameStream(FrameStream):
    """A FrameStream that stops after ``limit`` frames, closing the chain (like -frames:v)."""

    def __init__(self, stream: FrameStream, limit: int) -> None:
        self.__dict__.update(stream.__dict__)
        self._limit = limit

    def __next__(self) -> Frame:
        if self.stats.frames_written >= self._limit:
            self.close()
            raise StopIteration
        return super().__next__()
