"""The zoo's SSD cut before its post-processor gives the whole graph's boxes.

The reference is the whole TF Object Detection graph run directly on OpenVINO in f32 (its own
resize, decode and 90 per-class NMS loops), parsed as FFmpeg's ``tf`` form. Against it:

* the cut graph in f32 (``tf_ssd``: anchors decoded and NMS done by avdnn, the preprocessor's
  per-image loop made one batch resize) gives the same boxes: every box found, corners within
  0.01 px, scores within 1e-4 (same arrays in);
* the zoo's default (``precision=auto``: bf16 where the CPU has it) meets docs/zoo.md's bar on
  bikes.mp4 and bigbuckbunny.mp4 through ``avdnn.run``: recall >= 0.95 and precision >= 0.9 at IoU 0.7
  on high-score boxes (>= 0.6 on one side, found >= 0.5 on the other), median corner deviation
  <= 3 px.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
import pytest
from spine_util import missing

import avdnn
from avdnn.dnn.backends import cache
from avdnn.dnn.backends.openvino import OpenVINOBackend
from avdnn.dnn.backends.openvino.convert import material
from avdnn.dnn.detect import DetectContext, parse
from avdnn.dnn.interface import DNNFunctionType, ModelConfig
from avdnn.media.detections import Detections
from avdnn.zoo import get, sample
from avdnn.zoo.table import SSD_CUT, SSD_OUTPUTS

pytestmark = pytest.mark.slow

# the matching and the bar as benchmarks/ssd_precision.py measures them; loaded by path so
# benchmarks/ never shadows a module
_spec = importlib.util.spec_from_file_location(
    "avdnn_bench_ssd_precision", Path(__file__).resolve().parents[2] / "benchmarks" / "ssd_precision.py"
)
assert _spec is not None and _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)
pairs, agreement = _bench.pairs, _bench.agreement

#: (clip, every Nth frame): 25 frames of bikes (640x272), 12 of Big Buck Bunny (1280x720)
CLIPS = (("bikes.mp4", 10), ("bigbuckbunny.mp4", 11))


def ssd() -> str:
    path = get("ssd_mobilenet_v2_coco").source_file()
    if path is None:
        missing("models", get("ssd_mobilenet_v2_coco").package.pip)
    if importlib.util.find_spec("openvino") is None:
        missing("extras", "pip install 'avdnn[openvino]'")
    assert path is not None
    return path


def frames(clip: str, step: int) -> Iterator[tuple[int, np.ndarray]]:
    """The frames dnn_detect sees: rgb24 at the frame's size, libswscale BT.601 as io_analytics converts."""
    with av.open(sample(clip)) as container:
        for k, frame in enumerate(container.decode(video=0)):
            if k % step == 0:
                rgb = frame.reformat(
                    format="rgb24", interpolation="FAST_BILINEAR", src_colorspace="ITU601", dst_colorspace="ITU601"
                )
                yield k, rgb.to_ndarray()


@pytest.fixture(scope="module")
def whole_f32() -> dict[tuple[str, int], Detections]:
    """The whole graph, read and compiled by OpenVINO itself in f32: boxes per (clip, frame)."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(ssd()), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    names = SSD_OUTPUTS.split("&")
    out = {}
    for clip, step in CLIPS:
        for k, rgb in frames(clip, step):
            result = compiled({0: rgb[None]})
            tensors = [result[compiled.output(n + ":0")] for n in names]
            out[(clip, k)] = parse("tf", tensors, context(rgb))
    return out


def context(rgb: np.ndarray) -> DetectContext:
    return DetectContext(frame_width=rgb.shape[1], frame_height=rgb.shape[0], confidence=0.5, iou=0.6, max_det=100)


def test_cut_graph_in_f32_gives_the_whole_graphs_boxes(whole_f32: dict[tuple[str, int], Detections]) -> None:
    model = OpenVINOBackend.load(
        ModelConfig(
            path=ssd(),
            func_type=DNNFunctionType.ANALYTICS_DETECT,
            input_name="image_tensor",
            output_names=tuple(SSD_CUT.split("&")),
            options={"precision": "f32"},
        )
    )
    try:
        total = 0
        for clip, step in CLIPS:
            for k, rgb in frames(clip, step):
                ref = whole_f32[(clip, k)]
                got = parse("tf_ssd", model.run(rgb[None]), context(rgb))
                near = np.abs(ref.confidence - 0.5) < 1e-4  # a score on the threshold may go either way
                matched = pairs(ref, got, iou=0.99)
                assert len(matched) >= int((~near).sum()) and len(got) <= len(ref) + int(near.sum()), (clip, k)
                for i, j in matched:
                    assert np.abs(ref.xyxy[i] - got.xyxy[j]).max() <= 0.01, (clip, k, ref[i], got[j])
                    assert abs(float(ref.confidence[i]) - float(got.confidence[j])) <= 1e-4
                total += len(matched)
        assert total >= 10  # the clips do have objects
    finally:
        model.close()
    # the preprocessor's per-image loop became one batch resize (avdnn.dnn.backends.openvino.tfod)
    entry = cache.lookup("openvino", material(ssd(), tuple(SSD_CUT.split("&"))))
    assert entry is not None
    ir = entry.file("model.xml").read_text()
    assert 'type="Loop"' not in ir and ir.count('type="Interpolate"') == 1


def test_the_zoo_default_meets_the_documented_bar(whole_f32: dict[tuple[str, int], Detections]) -> None:
    refs: list[Detections] = []
    tests: list[Detections] = []
    for clip, step in CLIPS:
        chain = f"select=not(mod(n\\,{step})),dnn_detect=model=zoo/ssd_mobilenet_v2_coco"
        got = [f.detections for f in avdnn.run(sample(clip), chain)]
        want = [whole_f32[(clip, k)] for k, _ in frames(clip, step)]
        assert len(got) == len(want)
        refs += want
        tests += got
    bar = agreement(refs, tests, high=0.6)  # docs/zoo.md's bar, measured as the benchmark prints it
    assert bar["high_score_boxes"] >= 15
    assert bar["recall"] >= 0.95 and bar["precision"] >= 0.9, bar
    assert bar["deviation_px_median"] <= 3.0, bar
