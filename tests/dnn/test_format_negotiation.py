"""Frames reach an avdnn filter in a format it takes, as libavfilter's negotiation would do.

fillborders outputs gbrp, which dnn_processing does not take: the segment before it must end with
format=<dnn_processing's formats> (libavfilter then lets fillborders output yuv444p, as it would
for FFmpeg's own dnn_processing); a filter first in the chain gets its gbrp input converted the
same way (to rgb24: no filter before it can change its output format). Without the conversion
both cases fail with "pixel format gbrp is not supported".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx_models import identity

import avdnn


def _frames(src: str, chain: str) -> list:
    return list(avdnn.run(src, chain, input_format="lavfi"))


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) > 0 and all(
        x.format == y.format and all(np.array_equal(p, q) for p, q in zip(x.planes, y.planes, strict=True))
        for x, y in zip(a, b, strict=True)
    )


def test_segment_before_an_avdnn_filter_ends_in_a_format_it_takes(tmp_path: Path) -> None:
    model = identity(tmp_path, 1)
    src = "testsrc=s=64x48:d=0.2"
    got = _frames(src, f"fillborders=left=2:mode=smear,dnn_processing=model={model}")
    assert got[0].format == "yuv444p"
    assert _same(got, _frames(src, "fillborders=left=2:mode=smear,format=yuv444p"))


def test_first_filter_gets_its_input_converted(tmp_path: Path) -> None:
    model = identity(tmp_path, 3)
    src = "testsrc=s=64x48:d=0.2,format=gbrp"
    got = _frames(src, f"dnn_processing=model={model}")
    assert got[0].format == "rgb24"
    assert _same(got, _frames(src, "format=rgb24"))
