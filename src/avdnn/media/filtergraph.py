"""libavfilter graphs over PyAV's: sources, filters and a sink built, frames pushed and pulled, EOF and EAGAIN.

Every libavfilter graph avdnn runs goes through :class:`FilterGraph`: the chain's libavfilter
segments, the filters between a decoder and the chain (autorotation, the input trim), a
transcoded audio stream's graph, the core of a ``-filter_complex`` graph, drawbox/drawtext over
detections and the colour parser. It holds the one place where PyAV's filter exceptions become
avdnn's: a build or run failure is raised as the :mod:`avdnn.errors` leaf of libavfilter's code
(naming the graph's ``label``), EAGAIN means "no frame now" and EOF "this end is closed", never
an error. What PyAV does not report (the sink's frame rate and aspect ratio, what an audio chain
negotiates) is probed by :mod:`avdnn.media.libav` from the graph's text: :func:`probe_video`,
:func:`probe_audio`, :func:`probe_graph`.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

from avdnn.errors import InvalidArgumentError, from_av_error
from avdnn.media.frame import Frame
from avdnn.media.libav import bindings, pads
from avdnn.media.libav.bindings import AudioChainInfo, ChainInfo

__all__ = ["SINK", "FilterGraph", "Step", "probe_audio", "probe_graph", "probe_video"]

#: One filter of a linear chain: its name and its arguments as libavfilter's init string (None: none).
Step = tuple[str, str | None]

#: The name :func:`probe_graph` reads the negotiated output from (the text's buffersink).
SINK = pads.SINK


class FilterGraph:
    """One libavfilter graph: buffer/abuffer sources (or a source filter), filters, one sink.

    Build it with :meth:`video_source`/:meth:`audio_source`, :meth:`add`, :meth:`sink`,
    :meth:`link`/:meth:`chain` and :meth:`configure` (or in one call, :meth:`video_chain`,
    :meth:`audio_chain`), then run it: :meth:`push` answers False once a source takes no more
    (EOF: a trim or the graph's output ended), :meth:`pull` yields what the sink has now and sets
    :attr:`ended` when the sink is at its end. ``label`` names the graph in its errors; ``pts``
    (the frame the graph is built for) goes with a build error.
    """

    def __init__(self, *, label: str | None = None, pts: int | None = None) -> None:
        import av

        self.label = label
        self._pts = pts
        self._graph = av.filter.Graph()
        self._sources: list[Any] = []
        self._sink: Any = None
        #: The sink said EOF: the graph gives no more frames.
        self.ended = False

    # -- building -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _building(self) -> Iterator[None]:
        import av

        try:
            yield
        except av.FFmpegError as exc:
            raise from_av_error(exc, filter=self.label, pts=self._pts) from exc
        except ValueError as exc:  # PyAV's refusal of a parameter (an audio layout it cannot parse...)
            raise InvalidArgumentError(str(exc), filter=self.label, pts=self._pts) from exc

    def video_source(self, args: str) -> Any:
        """A ``buffer`` source with these arguments (:meth:`Frame.buffer_args`); sources count from 0."""
        with self._building():
            node = self._graph.add("buffer", args)
        self._sources.append(node)
        return node

    def audio_source(self, *, format: str, sample_rate: int, layout: str, time_base: Any) -> Any:  # noqa: A002
        """An ``abuffer`` source for frames of this format."""
        with self._building():
            node = self._graph.add_abuffer(format=format, sample_rate=sample_rate, layout=layout, time_base=time_base)
        self._sources.append(node)
        return node

    def add(
        self, name: str, args: str | None = None, *, label: str | None = None, options: dict[str, str] | None = None
    ) -> Any:
        """A filter, from its init string ``args`` or its ``options`` (``label``: its instance name)."""
        named = {} if label is None else {"name": label}
        with self._building():
            return self._graph.add(name, args, **named, **(options or {}))

    def sink(self, media: str = "video") -> Any:
        """The graph's one sink: ``buffersink`` (video) or ``abuffersink`` (audio)."""
        with self._building():
            self._sink = self._graph.add("buffersink" if media == "video" else "abuffersink")
        return self._sink

    def link(self, src: Any, dst: Any, out_pad: int = 0, in_pad: int = 0) -> None:
        with self._building():
            src.link_to(dst, out_pad, in_pad)

    def chain(self, *nodes: Any) -> None:
        """Link ``nodes`` one after the other, each one's first output to the next one's first input."""
        for src, dst in itertools.pairwise(nodes):
            self.link(src, dst)

    def configure(self, *, frame_size: int | None = None) -> None:
        """Configure the graph (``frame_size``: the audio sink hands out frames of that many samples)."""
        with self._building():
            self._graph.configure()
        if frame_size:
            self._graph.set_audio_frame_size(frame_size)

    @classmethod
    def video_chain(
        cls,
        buffer_args: str,
        steps: Sequence[Step],
        *,
        names: Sequence[str] | None = None,
        label: str | None = None,
        pts: int | None = None,
    ) -> FilterGraph:
        """``buffer -> steps -> buffersink``, configured (``names``: the filters' instance names)."""
        graph = cls(label=label, pts=pts)
        nodes = [graph.video_source(buffer_args)]
        nodes += [graph.add(n, a, label=names[i] if names else None) for i, (n, a) in enumerate(steps)]
        nodes.append(graph.sink("video"))
        graph.chain(*nodes)
        graph.configure()
        return graph

    @classmethod
    def audio_chain(
        cls,
        steps: Sequence[Step],
        *,
        format: str,  # noqa: A002 - libavfilter's sample format
        sample_rate: int,
        layout: str,
        time_base: Any,
        frame_size: int | None = None,
        label: str | None = None,
    ) -> FilterGraph:
        """``abuffer -> steps -> abuffersink``, configured (``frame_size``: see :meth:`configure`)."""
        graph = cls(label=label)
        nodes = [graph.audio_source(format=format, sample_rate=sample_rate, layout=layout, time_base=time_base)]
        nodes += [graph.add(n, a) for n, a in steps]
        nodes.append(graph.sink("audio"))
        graph.chain(*nodes)
        graph.configure(frame_size=frame_size)
        return graph

    # -- running --------------------------------------------------------------------------

    def push(self, frame: Any | None, source: int = 0, *, pts: int | None = None) -> bool:
        """A PyAV frame (None: end of stream) into source ``source``; False: it takes no more (EOF).

        ``pts`` goes with an error (the frame's, on the caller's timeline).
        """
        import av

        try:
            self._sources[source].push(frame)
        except av.EOFError:  # buffersrc: the graph's output is closed (a trim reached its end)
            return False
        except av.FFmpegError as exc:
            raise from_av_error(exc, filter=self.label, pts=pts) from exc
        return True

    def pull(self) -> Iterator[Any]:
        """The PyAV frames the sink has now (up to EAGAIN); at EOF :attr:`ended` is set."""
        import av

        while not self.ended:
            try:
                frame = self._sink.pull()
            except av.BlockingIOError:
                return
            except av.EOFError:
                self.ended = True
                return
            except av.FFmpegError as exc:
                raise from_av_error(exc, filter=self.label) from exc
            yield frame

    def pull_one(self, *, pts: int | None = None) -> Any:
        """The frame the sink must have now (a graph that gives one frame per frame in, or a
        source filter's first): EAGAIN and EOF are errors here."""
        import av

        try:
            return self._sink.pull()
        except av.FFmpegError as exc:
            raise from_av_error(exc, filter=self.label, pts=pts) from exc

    def command(self, node: Any, key: str, value: str) -> None:
        """avfilter_process_command: a runtime option of a configured filter."""
        import av

        try:
            node.process_command(key, value)
        except av.FFmpegError as exc:
            raise from_av_error(exc, filter=self.label) from exc


# -- probes: what PyAV does not report, read by media.libav from the graph's text ----------


def probe_video(text: str, frame: Frame, rate: Fraction | None) -> ChainInfo:
    """What ``buffer,<text>,buffersink`` negotiates for frames like ``frame`` at ``rate``."""
    return bindings.probe_chain(
        text,
        width=frame.width,
        height=frame.height,
        pix_fmt=frame.format,
        time_base=frame.time_base or Fraction(1, 25),
        frame_rate=rate,
        sar=frame.sample_aspect_ratio or Fraction(0, 1),
    )


def probe_audio(text: str, *, sample_fmt: str, sample_rate: int, layout: str) -> AudioChainInfo:
    """What ``abuffer,<text>,abuffersink`` negotiates (before any frame: an encoder opens from it)."""
    return bindings.probe_audio_chain(text, sample_fmt=sample_fmt, sample_rate=sample_rate, layout=layout)


def probe_graph(text: str) -> ChainInfo:
    """What the :data:`SINK` of complete filtergraph text negotiates (several sources)."""
    return pads.probe_graph(text)
