"""The streams that go around the DNN chain: what every side path is, and what it needs of its output.

Audio, subtitle and data streams never enter the video chain. The demuxer that reads the
video hands their packets here, on its own thread, and each output stream takes one path:

* :class:`~.streamcopy.CopyPath` (``-c:a copy``, ``-c:s copy``...): timestamps shifted as the
  ffmpeg CLI shifts them (the input's start time, ``-itsoffset``), packets straight to the muxer;
* :class:`~.audio.AudioEncodePath`: decode, ffmpeg's audio timestamp handling, a
  libavfilter graph built once (``-af`` then the ``aformat`` ffmpeg appends for the encoder),
  the encoder's fixed frame size, encode;
* :class:`~.subtitles.SubtitleEncodePath`: decode and encode subtitles (SubRip to ASS...).

The encoding paths share their encoder's set-up (:mod:`.encoding`). Each hands packets to its
output (:class:`SideOutput`, the :class:`~avdnn.media.output.sink.Sink`), whose interleaver
orders them with the video, so a slow model delays them with the video instead of
desynchronising them, and they never buffer more than the video pipeline's depth (plus
libavformat's interleave bound); before the output's header (the chain's first frame) what they
hold is bounded as ffmpeg's muxing queue is (:mod:`avdnn.media.output.muxqueue`). Each path
counts what it read, wrote, dropped and failed, by cause (:class:`StreamStats`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from avdnn.media.output.muxqueue import MuxingQueue

__all__ = ["SideOutput", "SidePath", "StreamStats"]


@dataclass
class StreamStats:
    """Packets and frames of one stream that does not go through the chain."""

    label: str
    media_type: str
    codec: str
    packets_read: int = 0
    frames_decoded: int = 0
    packets_written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)

    def drop(self, cause: str, n: int = 1) -> None:
        self.dropped[cause] = self.dropped.get(cause, 0) + n


class SideOutput(Protocol):
    """What a side path needs of the output it feeds: its limits, its lock, where its packets go."""

    #: Output -ss and -t (-to minus -ss), in microseconds.
    start_time: int | None
    recording_time: int | None
    #: -frames:v (a copied video stops there).
    max_packets: int | None
    #: Held by every thread that encodes or muxes into the output.
    lock: threading.RLock

    def push_side(self, side: SidePath, packet: Any, tb: Fraction) -> None:
        """A packet of ``side`` (``tb``: its time base), to be interleaved with the others."""

    def finish_side_at(self, side: SidePath, end: Fraction) -> None:
        """``side`` (a copied video) reached -frames:v at ``end`` (s): the other streams end there."""

    def end_side(self, side: SidePath) -> None:
        """``side`` sends no more packets."""

    def trim_filter(self, audio: bool = False) -> tuple[str, str] | None:
        """The trim/atrim ffmpeg appends for output -ss/-t (None: none)."""

    def past_cut(self, end: Fraction) -> bool:
        """Whether something ending at ``end`` (s) lies past where a frame limit ended the output."""

    def sync_hold(self, end: Fraction) -> bool:
        """Whether something ending at ``end`` (s) must wait for the video (ffmpeg's sync queue)."""


class SidePath:
    """One output stream fed from one input stream, around the chain."""

    media_type: str
    codec_name: str
    #: The time base of the packets this path hands to the output.
    time_base: Fraction

    def __init__(
        self,
        stream: Any,
        out_index: int,
        *,
        offset: Fraction = Fraction(0),
        label: str = "",
        input_trim: tuple[int | None, int | None] = (None, None),
    ) -> None:
        self.stream = stream
        #: The input's own trim (-ss with accurate seek, -t/-to), in microseconds: (start, duration).
        self.input_trim = input_trim
        self.in_index: int = stream.index
        #: The input file the stream comes from (its demuxer feeds the path).
        self.input_file = 0
        self.out_index = out_index
        #: Seconds added to every timestamp (minus the input start time, plus -itsoffset).
        self.offset = offset
        self.sink: SideOutput | None = None
        self.stats = StreamStats(label or f"{stream.index}:{stream.type}", stream.type, "copy")
        self.ended = False
        #: what this stream may hold before the output's header (ffmpeg's -max_muxing_queue_size,
        #: -muxing_queue_data_threshold; set by the run from the output's options)
        self.muxing_queue = MuxingQueue()

    @property
    def output_stream(self) -> str:
        """The output stream as errors name it: its index and the input stream it comes from."""
        return f"#{self.out_index} ({self.stats.label})"

    def hold_before_header(self, nbytes: int) -> None:
        """One more packet (of ``nbytes``) held until the output's header: ffmpeg's muxing queue
        bound, whose overflow fails this packet (counted) and the output (raised)."""
        if self.muxing_queue.full_for(nbytes):
            cause = "Too many packets buffered (before the output's header)"
            self.stats.failed[cause] = self.stats.failed.get(cause, 0) + 1
        self.muxing_queue.hold(nbytes, self.output_stream)

    def attach(self, sink: SideOutput) -> None:
        self.sink = sink

    def add_output(self, container: Any) -> Any:
        """Create this path's stream in the output container."""
        raise NotImplementedError

    def hash_stream(self) -> Any:
        """This path's stream as a hash muxer's header describes it (no container)."""
        raise NotImplementedError

    def on_ready(self) -> None:
        """The output's header is written: anything held may now be encoded."""

    def on_video(self) -> None:
        """The video stream advanced or ended (only paths that wait on it care)."""

    #: Whether this path decodes audio (ffmpeg then takes a -stream_loop round's end from the decoder).
    decodes_audio = False

    def loop(self) -> tuple[int, Fraction] | None:
        """-stream_loop rewinds the input: reset for the next round; the end (ts, tb) it decoded, if any."""
        return None

    def packet(self, packet: Any) -> None:
        raise NotImplementedError

    def end(self) -> None:
        """No more packets: the path ends its output stream (once)."""
        if not self.ended and self.sink is not None:
            self.ended = True
            self.sink.end_side(self)
