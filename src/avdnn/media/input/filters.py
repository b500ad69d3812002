"""The filters ffmpeg puts between a decoder and the user's chain: autorotation and the input trim.

fftools inserts ``transpose``/``hflip``/``vflip`` (autorotate) and ``trim`` (input ``-ss`` with
accurate seek, ``-t``, ``-to``) right after the buffer source of each input. Running the very
same libavfilter filters here gives the same frames, sizes and timestamps as ffmpeg, with the
pixel work in libavfilter. The chain is chosen on the first decoded frame (its side data carries
the display matrix), its graph built then, and rebuilt only if the decoder changes size or
format mid-stream (as ffmpeg reconfigures its graph).
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from avdnn.media.filtergraph import FilterGraph, Step
from avdnn.media.frame import Frame
from avdnn.media.input.framedata import display_matrix
from avdnn.media.input.rotate import Matrix, autorotate_filters, swaps_axes

__all__ = ["InputFilters"]


class InputFilters:
    """An input's decoded frames through autorotation and its trim; ``finished`` once the trim ended it.

    ``display_matrix`` given (``-display_rotation``...) overrides the stream's; otherwise it is read
    from the first frame (with ``-noautorotate`` too: the output then carries it). ``trim`` is the
    trim filter's arguments (None: no trim). Counters: ``pushed`` (frames into a non-empty chain)
    and ``passed`` (frames out of it, counted as they are taken).
    """

    def __init__(self, *, autorotate: bool, display_matrix: Matrix | None, trim: str | None) -> None:
        self.autorotate = autorotate
        self._fixed = display_matrix is not None
        #: The display matrix of the stream (None until the first frame, unless overridden).
        self.display_matrix = display_matrix
        self._trim = trim
        #: The chain (None until the first frame decides it).
        self.filters: list[Step] | None = None
        #: The aspect ratio of the frames out (inverted when the rotation swaps the axes).
        self.out_sar: Fraction | None = None
        self.finished = False
        self.pushed = self.passed = 0
        self._in_sar: Fraction | None = None
        self._graph: FilterGraph | None = None
        self._key: tuple[int, int, str] | None = None

    @property
    def decided(self) -> bool:
        return self.filters is not None

    def decide(self, first: Any | None, sar: Fraction | None) -> None:
        """Choose the chain from the first decoded frame (None: no frame came, nothing to rotate)."""
        if first is None:
            self.filters = []
            return
        if not self._fixed:
            self.display_matrix = display_matrix(first)  # not av_frame.side_data: see framedata
        chain: list[Step] = []
        if self.autorotate and self.display_matrix is not None:
            chain += autorotate_filters(self.display_matrix)
            chain.append(("sidedata", "mode=delete:type=DISPLAYMATRIX"))  # the output carries no rotation
        if self._trim is not None:
            chain.append(("trim", self._trim))
        self._in_sar = sar
        self.out_sar = 1 / sar if sar and swaps_axes(chain) else sar
        self.filters = chain

    def frames(self, av_frame: Any, sar: Fraction | None) -> Iterator[Any]:
        """The PyAV frames that leave for one decoded frame (``sar``: the stream's aspect ratio)."""
        if self.filters is None:
            self.decide(av_frame, sar)
        if not self.filters:
            yield av_frame
            return
        self.pushed += 1
        for out in self._push(av_frame):
            self.passed += 1
            yield out

    def flush(self) -> Iterator[Any]:
        """End of input: the frames still inside the graph."""
        for out in self._flush():
            self.passed += 1
            yield out

    # -- the graph ------------------------------------------------------------------------

    def _push(self, frame: Any) -> list[Any]:
        out: list[Any] = []
        if self.finished:
            return out
        key = (frame.width, frame.height, frame.format.name)
        if self._graph is not None and self._key != key:
            out += self._flush()
            self.finished = False
        if self._graph is None:
            wrapped = Frame.from_av(frame)
            wrapped.sample_aspect_ratio = self._in_sar
            args = wrapped.buffer_args()  # colour props too, so the buffer sees no change on frame one
            assert self.filters is not None
            self._graph = FilterGraph.video_chain(args, self.filters, label=",".join(n for n, _ in self.filters))
            self._key = key
        if not self._graph.push(frame):  # trim reached its end: the input is done, not failed
            self.finished = True
        return out + self._drain()

    def _flush(self) -> list[Any]:
        if self._graph is None:
            return []
        if not self.finished and not self._graph.push(None):
            self.finished = True
        out = self._drain()
        self._graph = None
        return out

    def _drain(self) -> list[Any]:
        assert self._graph is not None
        out = list(self._graph.pull())
        if self._graph.ended:
            self.finished = True
        return out
