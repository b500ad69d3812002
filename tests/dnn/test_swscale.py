"""One libswscale context per parameter set: the same bytes as a fresh one, and no new one per frame."""

from __future__ import annotations

import threading

import av
import numpy as np

from avdnn.dnn import io_analytics
from avdnn.dnn.interface import DNNColorOrder, DNNDataType, DNNLayout, TensorInfo
from avdnn.media import swscale
from avdnn.media.frame import Frame


def _frames(n: int) -> list[Frame]:
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n):
        rgb = av.VideoFrame.from_ndarray(rng.integers(0, 256, (36, 64, 3), dtype=np.uint8), format="rgb24")
        out.append(Frame.from_av(rgb.reformat(format="yuv420p")))
    return out


def test_kept_reformatter_gives_the_fresh_bytes_and_is_reused() -> None:
    def run() -> None:
        info = TensorInfo("x", (1, 30, 30, 3), DNNDataType.UINT8, "uint8", DNNLayout.NHWC, DNNColorOrder.RGB, 1.0)
        spec = io_analytics.input_spec(info, 64, 36)
        geom = io_analytics.geometry(spec, 64, 36, False)
        for frame in _frames(5):
            got = io_analytics.detect_image(frame, spec, geom)
            want = (
                frame.to_av()
                .reformat(
                    width=30,
                    height=30,
                    format="rgb24",
                    interpolation="FAST_BILINEAR",
                    src_colorspace="ITU601",
                    dst_colorspace="ITU601",
                )
                .to_ndarray()
            )
            np.testing.assert_array_equal(got, want)
        box["kept"] = swscale.kept()

    box: dict[str, int] = {}
    thread = threading.Thread(target=run)  # a thread of its own: its table starts empty
    thread.start()
    thread.join()
    assert box["kept"] == 1  # five frames, one parameter set, one reformatter


def test_the_table_is_bounded() -> None:
    def run() -> None:
        src = av.VideoFrame(64, 36, "yuv420p")
        for w in range(2, 2 + swscale.KEEP + 10):  # crops of many sizes
            swscale.reformat(src, width=w, height=8, format="rgb24")
        box["kept"] = swscale.kept()

    box: dict[str, int] = {}
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert box["kept"] == swscale.KEEP
