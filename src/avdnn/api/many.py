"""Several outputs in one run, and frames of several sources merged: ffmpeg's ``-i A -i B outA outB``.

>>> report = avdnn.run_many([avdnn.Job("a.mp4", "hflip", output="a.mkv"),          # doctest: +SKIP
...                          avdnn.Job("b.mp4", "scale=320:-2", output="b.mkv")])
>>> for index, frame in avdnn.open_many([("a.mp4", "format=gray"), ("b.mp4", "")]):  # doctest: +SKIP
...     print(index, frame.pts)

Each output is its own pipeline over its own inputs, driven by a thread of its own
(:mod:`avdnn.run.parallel`), so a slow output never stalls another. A failure fails its output
only: the others run to their end, then :class:`OutputsFailedError` names the failed ones and
carries every output's accounting.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import BinaryIO, Unpack

from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.media.frame import Frame
from avdnn.run.builder import RunBuilder
from avdnn.run.complexoutputs import graphs_per_output
from avdnn.run.multistats import MultiRunStats
from avdnn.run.parallel import ParallelFrames, run_outputs
from avdnn.run.request import RunOptions, RunRequest
from avdnn.run.stats import RunStats

__all__ = ["Job", "MultiFrameStream", "OutputsFailedError", "command_jobs", "open_many", "run_many"]


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

    def request(self) -> RunRequest:
        """What the job asks of the run, as the layers below the API take it."""
        return RunRequest(self.input, self.filters, output=self.output, **self.options)

    @property
    def output_name(self) -> str:
        return self.request().output_name

    def inputs_read(self) -> list[tuple[int, str]]:
        """The inputs this output opens (those its maps name; all without maps), as (index, URL)."""
        return self.request().inputs_read()

    def run(self) -> RunStats:
        """Run this output alone (what :func:`run_many` does on the output's thread)."""
        return RunBuilder(self.request()).run()


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
    stats = run_outputs([job.request() for job in jobs])
    if stats.failed:
        raise OutputsFailedError(stats)
    return stats


def command_jobs(
    input: str,  # noqa: A002 - ffmpeg's -i
    outputs: Sequence[tuple[str, str | BinaryIO, RunOptions]],
    *,
    banner: bool = False,
) -> list[Job]:
    """The jobs of one ffmpeg command line: its outputs, each ``(filters, output, options)``,
    over the same inputs and the same ``-filter_complex`` (the first output's ``filter_complex``).

    Each output runs the part of the graph its maps need (a split feeds each one its copy; an
    output that maps none of it runs none). ``banner`` (ffmpeg's ``Input #0``/``Output #0`` blocks)
    is kept for a single output only: several outputs' threads would interleave the blocks.
    """
    jobs = [Job(input, filters, output=output, **options) for filters, output, options in outputs]
    requests = [job.request() for job in jobs]
    graph = requests[0].filter_complex if requests else None
    n_inputs = requests[0].n_inputs if requests else 1
    graphs = graphs_per_output(graph, [r.given_maps() for r in requests], n_inputs=n_inputs)
    for job, own in zip(jobs, graphs, strict=True):
        job.options["filter_complex"] = own
        job.options["banner"] = banner and len(jobs) == 1
    return jobs


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
        self._frames = ParallelFrames([(s, "") if isinstance(s, str) else s for s in sources], depth, options)
        self.stats = self._frames.stats

    def __iter__(self) -> Iterator[tuple[int, Frame]]:
        return self

    def __next__(self) -> tuple[int, Frame]:
        item = self._frames.next()
        if item is not None:
            return item
        self._frames.end()
        if self.stats.failed:
            raise OutputsFailedError(self.stats)
        raise StopIteration

    def close(self) -> None:
        """Stop early: every source's chain and input are closed."""
        self._frames.close()

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
