"""FFmpeg's documented sr/derain lines, unchanged: ``model=x.pb`` with no ``dnn_backend`` runs on TensorFlow.

FFmpeg's default backend for sr and derain is TensorFlow, and its docs give the lines without
``dnn_backend``. avdnn takes the backend from the model file, so the same lines run here. The
bytes are checked against FFmpeg: the same weights as a native ``.model`` through Debian's
ffmpeg 5.1 (whose native backend is FFmpeg's own port of those TensorFlow layers; FFmpeg
master with TensorFlow is not installable here).
"""

from __future__ import annotations

import hashlib

import builders
import pytest
from test_filters_vs_ffmpeg51 import _avdnn, _ffmpeg51, _input
from tf_graphs import save_pb

LINES = [
    # (FFmpeg's line without dnn_backend, builder, input format, output format)
    ("sr=model={pb}:input=x:output=y", lambda: builders.espcn(2), "yuv420p", "yuv420p"),
    ("derain=model={pb}:input=x:output=y", lambda: builders.conv_probe(3, "sigmoid", "same"), "rgb24", "rgb24"),
]


@pytest.mark.parametrize(("line", "build", "in_fmt", "out_fmt"), LINES, ids=["sr", "derain"])
def test_ffmpeg_line_with_a_pb_and_no_dnn_backend(line, build, in_fmt, out_fmt, tmp_path, ffmpeg51) -> None:
    built = build()
    model, pb = built.save(tmp_path), save_pb(built, tmp_path, "espcn")
    inp = _input(tmp_path, in_fmt)
    name = line.split("=", 1)[0]
    want = _ffmpeg51(inp, f"{name}=dnn_backend=native:model={model}:input=x:output=y", out_fmt)
    got = _avdnn(inp, line.format(pb=pb), out_fmt, tmp_path / "out.raw", [])
    assert len(got) == len(want) and len(want) > 0
    assert hashlib.md5(got).hexdigest() == hashlib.md5(want).hexdigest()
