"""One encoded video stream of an output, fed by one chain: what a pipeline writes its frames to.

An output holds as many video streams as it maps (ffmpeg's ``-map 0:v -map 0:v``, a
``-filter_complex`` split to two pads of one file, an HLS ladder), each with its own chain and
its own encoder settings (``-c:v:1``, ``-s:v:1``, ``-b:v:1``, ``-filter:v:1``:
:class:`VideoSettings`). Each is a :class:`VideoLane` of the output's
:class:`~avdnn.media.output.sink.Sink`: its encoder opens on its chain's first frame, and the
output's header is written once every lane's encoder is open (ffmpeg waits for every encoder
before the header too); packets of all lanes meet in the output's one interleaver. The first
lane is the sink's own (the output's other streams go with it); every other lane is driven by a
pipeline of its own (:mod:`avdnn.run.lanes`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from avdnn.media.frame import Frame
from avdnn.media.output.videoenc import VideoEncoder

__all__ = ["FirstVideo", "VideoLane", "VideoOutput", "VideoSettings"]


@dataclass(frozen=True)
class VideoSettings:
    """What one output video stream is encoded with: ffmpeg's options with a stream specifier
    (``-c:v:1``, ``-pix_fmt``, ``-r``, ``-s:v:1``, ``-b:v:1 ...``); None: the output's own."""

    codec: str | None = None
    pix_fmt: str | None = None
    rate: Fraction | None = None
    size: tuple[int, int] | None = None
    #: The encoder's AVOptions for this stream (added to the output's ``codec_options``).
    options: dict[str, str] = field(default_factory=dict)


class VideoOutput(Protocol):
    """What a pipeline writes its chain's frames to: an output's (first) video stream, or a lane."""

    @property
    def size(self) -> tuple[int, int] | None: ...
    @property
    def video_index(self) -> int | None: ...
    @property
    def max_packets(self) -> int | None: ...
    @max_packets.setter
    def max_packets(self, value: int | None) -> None: ...
    @property
    def sides(self) -> list[Any]: ...
    @property
    def started(self) -> bool: ...
    @property
    def packets_encoded(self) -> int: ...
    @property
    def frames_written(self) -> int: ...
    @property
    def frames_past_time(self) -> int: ...
    @property
    def frames_dropped(self) -> int: ...
    @property
    def frames_duplicated(self) -> int: ...
    def stream_ended(self, side: Any) -> bool: ...
    def accepted_pix_fmts(self) -> list[str] | None: ...
    def accepted_color_ranges(self) -> list[str] | None: ...
    def trim_filter(self, audio: bool = False) -> tuple[str, str] | None: ...
    def write(self, frame: Frame, rate: Fraction | None = None) -> None: ...
    def start(
        self, width: int, height: int, pix_fmt: str, *, sar: Fraction | None = None, rate: Fraction | None = None
    ) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


class LaneHost(Protocol):
    """What a lane needs of its output (its :class:`~.videostreams.VideoStreams`)."""

    def open_lane(self, lane: VideoLane, frame: Frame, rate: Fraction | None) -> None: ...
    def end_lane(self, lane: VideoLane) -> None: ...
    def check_failed(self) -> None: ...


class VideoLane:
    """One video stream of an output (output index ``video_index``) and its encoder.

    ``nth`` is its rank among the output's video streams (``v:nth``); ``source`` says where its
    frames come from for the ``Stream mapping:`` lines: (input file, stream index, decoder name).
    """

    def __init__(
        self,
        host: LaneHost,
        encoder: VideoEncoder,
        *,
        video_index: int,
        nth: int,
        size: tuple[int, int] | None,
        trim: tuple[str, str] | None = None,
    ) -> None:
        self._host = host
        self._trim = trim
        self.encoder = encoder
        self.video_index: int | None = video_index
        self.nth = nth
        self.size = size
        self.source: tuple[int, int, str | None] | None = None
        #: Gives the display matrix the stream carries (its input's, with -noautorotate).
        self.display_matrix: Callable[[], Sequence[int] | None] | None = None
        #: The chain's first frame (or the negotiated format), held until every lane has one.
        self.first: tuple[Frame, Fraction, Fraction] | None = None
        self.ended = False

    @property
    def codec_name(self) -> str:
        return self.encoder.codec_name

    # -- the pipeline's side of it ----------------------------------------------------------

    @property
    def sides(self) -> list[Any]:
        return []  # the output's other streams go with its first video stream

    def stream_ended(self, side: Any) -> bool:
        return True

    @property
    def max_packets(self) -> int | None:
        return self.encoder.max_packets

    @max_packets.setter
    def max_packets(self, value: int | None) -> None:
        self.encoder.max_packets = value

    def accepted_pix_fmts(self) -> list[str] | None:
        return self.encoder.accepted_pix_fmts()

    def accepted_color_ranges(self) -> list[str] | None:
        return self.encoder.accepted_color_ranges()

    def trim_filter(self, audio: bool = False) -> tuple[str, str] | None:
        """The output's -ss/-t as the trim ffmpeg appends to the stream's chain (None: none)."""
        return self._trim

    @property
    def started(self) -> bool:
        return self.encoder.started

    def start(
        self, width: int, height: int, pix_fmt: str, *, sar: Fraction | None = None, rate: Fraction | None = None
    ) -> None:
        """Open the encoder without a frame, from what the chain negotiated (as Sink.start)."""
        if not self.encoder.started:
            self._host.open_lane(self, Frame(None, pix_fmt, width, height, sample_aspect_ratio=sar), rate)

    def write(self, frame: Frame, rate: Fraction | None = None) -> None:
        self._host.check_failed()
        if not self.encoder.started:
            self._host.open_lane(self, frame, rate)
        self.encoder.write(frame)

    def close(self) -> None:
        """This stream ends: what the encoder holds is written, the output's other streams go on."""
        if not self.ended:
            self.ended = True
            self._host.end_lane(self)

    def abort(self) -> None:
        self.close()

    # -- counters (as the Sink's) -------------------------------------------------------------

    @property
    def packets_encoded(self) -> int:
        return self.encoder.packets_encoded

    @property
    def frames_written(self) -> int:
        return self.encoder.frames_received - self.encoder.frames_dropped

    @property
    def frames_past_time(self) -> int:
        return self.encoder.frames_past_time

    @property
    def frames_dropped(self) -> int:
        return self.encoder.frames_dropped

    @property
    def frames_duplicated(self) -> int:
        return self.encoder.frames_duplicated


class FirstVideo:
    """An output's first video stream, as the pipeline of its first chain writes to it.

    The :class:`~avdnn.media.output.sink.Sink` is one (so the output's side streams, which go
    with its first video stream, and its end are the pipeline's too); the output's other video
    streams are written through their own :class:`VideoLane`. Without a video stream it counts
    nothing and takes no frame.
    """

    lanes: list[VideoLane]
    _size: tuple[int, int] | None
    _max_packets: int | None

    @property
    def video_lane(self) -> VideoLane:
        """The first video stream."""
        assert self.lanes, "the output has no video stream"
        return self.lanes[0]

    @property
    def video(self) -> VideoEncoder:
        """The first video stream's encoder (its codec, pixel formats, counters)."""
        return self.video_lane.encoder

    @property
    def codec_name(self) -> str:
        return self.video.codec_name

    @property
    def size(self) -> tuple[int, int] | None:
        """Output -s WxH of the first video stream: its frames are scaled to it (ffmpeg's autoscale)."""
        return self.lanes[0].size if self.lanes else self._size

    def accepted_pix_fmts(self) -> list[str] | None:
        """Pixel formats the encoder takes (the ffmpeg CLI appends format= with these); None: any."""
        return self.video.accepted_pix_fmts() if self.lanes else None

    def accepted_color_ranges(self) -> list[str] | None:
        """Colour ranges the encoder takes ("tv", "pc"), as ffmpeg adds them to its format=."""
        return self.video.accepted_color_ranges() if self.lanes else None

    @property
    def started(self) -> bool:
        """Whether the first video encoder is open (a first frame came, or :meth:`start` was called)."""
        return bool(self.lanes) and self.video.started

    def start(
        self, width: int, height: int, pix_fmt: str, *, sar: Fraction | None = None, rate: Fraction | None = None
    ) -> None:
        """Open the encoder without a frame: ffmpeg still writes header and trailer when
        no frame reaches the output (``select=0``), from what the filter graph negotiated."""
        self.video_lane.start(width, height, pix_fmt, sar=sar, rate=rate)

    def write(self, frame: Frame, rate: Fraction | None = None) -> None:
        """Encode one frame of the first video stream (rate: the chain's output frame rate)."""
        self.video_lane.write(frame, rate)

    @property
    def max_packets(self) -> int | None:
        """-frames:v: stop handing frames to the encoder after this many."""
        return self.video.max_packets if self.lanes else self._max_packets

    @max_packets.setter
    def max_packets(self, value: int | None) -> None:
        self._max_packets = value
        if self.lanes:
            self.video.max_packets = value

    @property
    def packets_encoded(self) -> int:
        """Frames handed to the encoder, duplicates included (what -frames:v counts)."""
        return self.video.packets_encoded if self.lanes else 0

    @property
    def frames_past_time(self) -> int:
        """Frames the encoder did not take because they lie past the output's -t (check_recording_time)."""
        return self.video.frames_past_time if self.lanes else 0

    @property
    def frames_written(self) -> int:
        """Input frames that reached the output at least once."""
        return self.video_lane.frames_written if self.lanes else 0

    @property
    def frames_dropped(self) -> int:
        """Frames never encoded: dropped by the video sync, or past the output's -t."""
        return self.video.frames_dropped if self.lanes else 0

    @property
    def frames_duplicated(self) -> int:
        return self.video.frames_duplicated if self.lanes else 0
