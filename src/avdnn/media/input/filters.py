"""The filters ffmpeg puts between a decoder and the user's chain: autorotation and the input trim.

fftools inserts ``transpose``/``hflip``/``vflip`` (autorotate) and ``trim`` (input ``-ss`` with
accurate seek, ``-t``, ``-to``) right after the buffer source of each input. Running the very
same libavfilter filters here gives the same frames, sizes and timestamps as ffmpeg, with the
pixel work in libavfilter. The graph is built once, from the first frame, and rebuilt only if
the decoder changes size or format mid-stream (as ffmpeg reconfigures its graph).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from avdnn.errors import from_av_error
from avdnn.media.frame import Frame

FilterList = list[tuple[str, str | None]]


class InputFilters:
    """buffer -> filters -> buffersink over PyAV frames; ``finished`` once trim has ended the input."""

    def __init__(self, filters: FilterList, *, sample_aspect_ratio: Fraction | None = None) -> None:
        self.filters = filters
        self.sample_aspect_ratio = sample_aspect_ratio
        self._graph: Any = None
        self._key: tuple[int, int, str] | None = None
        self.finished = False

    def _build(self, frame: Any) -> None:
        import av

        wrapped = Frame.from_av(frame)
        wrapped.sample_aspect_ratio = self.sample_aspect_ratio
        args = wrapped.buffer_args()  # colour props too, so the buffer sees no change on frame one
        graph = av.filter.Graph()
        try:
            nodes = [graph.add("buffer", args)]
            nodes += [graph.add(name, a) if a is not None else graph.add(name) for name, a in self.filters]
            nodes.append(graph.add("buffersink"))
            graph.link_nodes(*nodes)
            graph.configure()
        except av.FFmpegError as exc:
            raise from_av_error(exc, filter=",".join(n for n, _ in self.filters)) from exc
        self._graph = graph
        self._key = (frame.width, frame.height, frame.format.name)

    def push(self, frame: Any) -> list[Any]:
        """The frames the graph gives back for one decoded frame (none once finished)."""
        out: list[Any] = []
        if self.finished:
            return out
        if self._graph is not None and self._key != (frame.width, frame.height, frame.format.name):
            out += self.flush()
            self.finished = False
        if self._graph is None:
            self._build(frame)
        self._push(frame)
        return out + self._drain()

    def flush(self) -> list[Any]:
        """End of input: the frames still inside the graph."""
        if self._graph is None:
            return []
        if not self.finished:
            self._push(None)
        out = self._drain()
        self._graph = None
        return out

    def _push(self, frame: Any) -> None:
        import av

        try:
            self._graph.push(frame)
        except av.EOFError:  # trim reached its end: the input is done, not failed
            self.finished = True
        except av.FFmpegError as exc:
            raise from_av_error(exc, filter=",".join(n for n, _ in self.filters)) from exc

    def _drain(self) -> list[Any]:
        import av

        out = []
        while True:
            try:
                out.append(self._graph.vpull())
            except av.BlockingIOError:
                return out
            except av.EOFError:
                self.finished = True
                return out
            except av.FFmpegError as exc:
                raise from_av_error(exc, filter=",".join(n for n, _ in self.filters)) from exc
