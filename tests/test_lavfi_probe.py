"""A libavfilter segment's rate probe: one policy with the -filter_complex core's.

The probe reads the chain's output frame rate and aspect ratio (PyAV does not report them).
When libavfilter cannot be probed (an avdnn error), the input's values are kept and a warning
says so, as the core's probe does; any other exception is a bug and keeps its traceback (the
probe caught ``Exception`` and kept the wrong rate silently).
"""

from __future__ import annotations

import logging
from fractions import Fraction

import numpy as np
import pytest

from avdnn.errors import BackendUnavailableError
from avdnn.graph import lavfi
from avdnn.graph.parse import parse_chain
from avdnn.media.frame import Frame


def _frame() -> Frame:
    import av

    frame = av.VideoFrame.from_ndarray(np.zeros((16, 16, 3), dtype=np.uint8), format="rgb24")
    frame.pts, frame.time_base = 0, Fraction(1, 25)
    return Frame.from_av(frame)


def test_a_probe_libavfilter_refuses_keeps_the_input_rate_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*_: object) -> None:
        raise BackendUnavailableError("cannot locate the libavfilter that PyAV loaded")

    monkeypatch.setattr(lavfi, "probe_video", refuse)
    segment = lavfi.LavfiSegment(parse_chain("fps=10"))
    segment.in_rate = Fraction(25)
    with caplog.at_level(logging.WARNING, logger="avdnn"):
        segment.push(_frame())
    assert segment.out_rate == Fraction(25)
    assert any("could not read the frame rate" in r.getMessage() and "fps=10" in r.getMessage() for r in caplog.records)


def test_a_bug_in_the_probe_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(*_: object) -> None:
        raise TypeError("a bug")

    monkeypatch.setattr(lavfi, "probe_video", bug)
    segment = lavfi.LavfiSegment(parse_chain("fps=10"))
    with pytest.raises(TypeError, match="a bug"):
        segment.push(_frame())
