"""The seam a service reconnects a pushed output with: ``Sink.reopen_output()``.

A peer takes two connections in turn; the output writes frames, is reopened, writes more. The
second connection must be a stream of its own (a new header: ffmpeg decodes it alone), and a
file output, which cannot be reopened, says so by name.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from outputs_util import Peer, hashes
from spine_util import run_ffmpeg

from avdnn.errors import NotSupportedError
from avdnn.media.frame import Frame
from avdnn.media.output.sink import Sink
from avdnn.media.output.videolane import VideoSettings


def _frames(n: int, start: int) -> list[Frame]:
    import av

    out = []
    rng = np.random.default_rng(start)
    for k in range(start, start + n):
        img = rng.integers(0, 256, (144, 176, 3), dtype=np.uint8)  # noise: packets big enough to probe
        frame = av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format="yuv420p")
        frame.pts, frame.time_base = k, Fraction(1, 25)
        out.append(Frame.from_av(frame))
    return out


def test_a_reopened_network_output_starts_a_stream_of_its_own(ffmpeg: str, tmp_path: Path) -> None:
    with Peer("keep", connections=2) as peer:
        sink = Sink(f"tcp://127.0.0.1:{peer.port}", format="mpegts", codec="mpeg2video", codec_options={"g": "1"})
        sink.set_streams((), [(0, VideoSettings())])
        sink.begin()
        for frame in _frames(10, 0):
            sink.write(frame, Fraction(25))
        sink.reopen_output()  # the first connection ends (its trailer), the second one gets a header
        for frame in _frames(10, 10):
            sink.write(frame, Fraction(25))
        sink.close()
        peer.join()
    assert len(peer.received) == 2
    counts = []
    for k, data in enumerate(peer.received):
        assert data[:1] == b"\x47", "each connection starts with a transport packet"
        path = tmp_path / f"conn{k}.ts"
        path.write_bytes(data)
        res = run_ffmpeg(ffmpeg, ["-i", str(path), "-f", "framemd5", "-"])
        assert res.rc == 0, res.err
        counts.append(len(hashes(res.out.decode())))
    assert sum(counts) == 20 and counts[1] >= 9, counts  # the encoder's delay may carry a frame over


def test_a_file_output_cannot_be_reopened(tmp_path: Path) -> None:
    sink = Sink(str(tmp_path / "a.mkv"), codec="mpeg2video")
    sink.set_streams((), [(0, VideoSettings())])
    sink.begin()
    with pytest.raises(NotSupportedError, match="not a network output"):
        sink.reopen_output()
    sink.close()
