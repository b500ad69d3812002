"""dnn_classify through the real filter + engine + ONNX backend; the analytics io_proc."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from analytics_models import F32, U8, channel_means, constant, make_filter, mean_classifier, run_filter

from avdnn.dnn import io_analytics
from avdnn.dnn.interface import DNNColorOrder, DNNDataType, DNNLayout, TensorInfo
from avdnn.errors import AVERROR_INVALIDDATA, InvalidDataError
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame


def boxed_frame(
    boxes: list[tuple[int, int, int, int]],
    labels: list[str],
    values: list[int] | None = None,
    size: tuple[int, int] = (96, 64),
    pts: int = 0,
) -> Frame:
    """An rgb24 frame painted ``values[i]`` inside box i, with a Detections record of those boxes."""
    w, h = size
    img = np.zeros((h, w, 3), np.uint8)
    for (x, y, bw, bh), v in zip(boxes, values or [0] * len(boxes), strict=True):
        img[max(y, 0) : y + bh, max(x, 0) : x + bw] = v
    frame = Frame.from_ndarray(img, "rgb24", pts=pts)
    frame.side_data.detections = Detections(
        xyxy=[[x, y, x + bw, y + bh] for x, y, bw, bh in boxes],
        confidence=[0.9] * len(boxes),
        class_id=list(range(len(boxes))),
        labels=tuple(labels),
        frame_size=size,
        source="det.onnx",
    )
    return frame


def labels_file(tmp: Path, names: list[str]) -> str:
    path = tmp / "cls_labels.txt"
    path.write_text("\n".join(names) + "\n")
    return str(path)


def const_classifier(tmp: Path, scores: list[float], name: str = "cls") -> str:
    return constant(tmp, name, [np.array([scores], np.float32)], shape=["N", 3, 8, 8])


def test_constant_classifier_appends_label(tmp_path: Path) -> None:
    model = const_classifier(tmp_path, [0.1, 0.05, 0.8, 0.05])
    frame = boxed_frame([(8, 8, 16, 16), (40, 20, 30, 30)], ["face", "face"])
    out = run_filter(
        make_filter("dnn_classify", model=model, labels=labels_file(tmp_path, ["angry", "sad", "happy", "neutral"])),
        [frame],
    )
    det = out[0].detections
    assert [b.classify for b in det] == [(("happy", np.float32(0.8)),)] * 2
    assert [b.classify_confidences for b in det] == [((8000, 10000),)] * 2
    assert det.source == f"det.onnx, {model}"


def test_below_confidence_records_nothing_but_source(tmp_path: Path) -> None:
    model = const_classifier(tmp_path, [0.3, 0.4])
    out = run_filter(make_filter("dnn_classify", model=model), [boxed_frame([(0, 0, 8, 8)], ["a"])])
    assert out[0].detections[0].classify == () and out[0].detections.source.endswith(model)


def test_target_is_case_insensitive(tmp_path: Path) -> None:
    model = const_classifier(tmp_path, [0.9, 0.1])
    frame = boxed_frame([(0, 0, 8, 8), (10, 10, 8, 8), (20, 20, 8, 8)], ["Face", "car", "FACE"])
    out = run_filter(make_filter("dnn_classify", model=model, target="face"), [frame])
    assert [len(b.classify) for b in out[0].detections] == [1, 0, 1]


def test_frames_without_boxes_pass_unchanged(tmp_path: Path) -> None:
    model = const_classifier(tmp_path, [0.9, 0.1])
    plain = Frame.from_ndarray(np.zeros((16, 16, 3), np.uint8), "rgb24", pts=0)
    empty = Frame.from_ndarray(np.zeros((16, 16, 3), np.uint8), "rgb24", pts=1)
    empty.side_data.detections = Detections.empty((16, 16), source="det.onnx")
    out = run_filter(make_filter("dnn_classify", model=model), [plain, empty])
    assert out[0] is plain and out[0].detections is None
    assert out[1] is empty and out[1].detections.source == "det.onnx"


@pytest.mark.parametrize("batch_size", [1, 4])
@pytest.mark.parametrize("async_", [0, 1])
def test_many_boxes_keep_order(tmp_path: Path, batch_size: int, async_: int) -> None:
    model = mean_classifier(tmp_path)
    values = [10, 40, 70, 100, 130, 160, 190]
    boxes = [(i * 12, 4 + i, 10, 10) for i in range(len(values))]
    frames = [boxed_frame(boxes, ["obj"] * len(values), values, pts=p) for p in range(3)]
    f = make_filter("dnn_classify", model=model, confidence=0, batch_size=batch_size, nireq=2, **{"async": async_})
    out = run_filter(f, frames)
    assert [fr.pts for fr in out] == [0, 1, 2]
    for fr in out:
        got = [int(b.classify[0][0]) for b in fr.detections]
        assert got == values


def test_edge_boxes_are_clipped_not_skipped(tmp_path: Path) -> None:
    model = mean_classifier(tmp_path)
    frame = boxed_frame([(-5, -5, 20, 20), (80, 50, 30, 30)], ["a", "b"], [50, 200])
    out = run_filter(make_filter("dnn_classify", model=model, confidence=0), [frame])
    assert [int(b.classify[0][0]) for b in out[0].detections] == [50, 200]


def test_nan_classifier_output_is_invaliddata(tmp_path: Path) -> None:
    model = const_classifier(tmp_path, [float("nan")] * 3)
    f = make_filter("dnn_classify", model=model)
    with pytest.raises(InvalidDataError, match="NaN") as info:
        run_filter(f, [boxed_frame([(0, 0, 8, 8)], ["a"])])
    assert info.value.code == AVERROR_INVALIDDATA and info.value.filter == "dnn_classify"


# -- io_analytics ---------------------------------------------------------------------------------------------


def _info(nhwc: bool, dtype: DNNDataType, order: DNNColorOrder = DNNColorOrder.RGB, size: int = 16) -> TensorInfo:
    dims = (1, size, size, 3) if nhwc else (1, 3, size, size)
    return TensorInfo("x", dims, dtype, layout=DNNLayout.NHWC if nhwc else DNNLayout.NCHW, order=order)


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("dtype", [DNNDataType.FLOAT, DNNDataType.UINT8])
@pytest.mark.parametrize("order", [DNNColorOrder.RGB, DNNColorOrder.BGR])
def test_detect_input_layout_order_and_range(nhwc: bool, dtype: DNNDataType, order: DNNColorOrder) -> None:
    img = np.zeros((16, 16, 3), np.uint8)
    img[..., 0], img[..., 1], img[..., 2] = 200, 100, 7
    frame = Frame.from_ndarray(img, "rgb24")
    spec = io_analytics.input_spec(_info(nhwc, dtype, order), 16, 16)
    dst = np.zeros(spec.shape, spec.dtype)
    io_analytics.detect_fill(frame, spec, io_analytics.geometry(spec, 16, 16, False))(dst)
    per_channel = dst.reshape(-1, 3).mean(0) if nhwc else dst.reshape(3, -1).mean(1)
    want = [200, 100, 7] if order == DNNColorOrder.RGB else [7, 100, 200]
    np.testing.assert_array_equal(per_channel, want)  # float stays 0..255 (FFmpeg: no /255)
    assert dst.dtype == dtype.numpy


def test_detect_input_is_one_fast_bilinear_swscale() -> None:

    rng = np.random.default_rng(1)
    frame = Frame.from_ndarray(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8), "rgb24")
    spec = io_analytics.input_spec(_info(True, DNNDataType.UINT8), 53, 37)
    got = io_analytics.detect_image(frame, spec, io_analytics.geometry(spec, 53, 37, False))
    want = frame.to_av().reformat(16, 16, "rgb24", interpolation="FAST_BILINEAR").to_ndarray()
    np.testing.assert_array_equal(got, want)


def test_letterbox_canvas_is_padded_grey() -> None:
    frame = Frame.from_ndarray(np.full((8, 16, 3), 255, np.uint8), "rgb24")
    spec = io_analytics.input_spec(_info(True, DNNDataType.UINT8), 16, 8)
    img = io_analytics.detect_image(frame, spec, io_analytics.geometry(spec, 16, 8, True))
    assert (img[:4] == io_analytics.LETTERBOX_FILL).all() and (img[12:] == io_analytics.LETTERBOX_FILL).all()
    assert (img[4:12] == 255).all()


def test_crop_uses_ffmpeg_chroma_offsets() -> None:
    y = np.arange(64 * 64, dtype=np.uint8).reshape(64, 64)
    u = np.arange(32 * 32, dtype=np.uint8).reshape(32, 32)
    frame = Frame.from_planes([y, u, u.T.copy()], "yuv420p")
    part = io_analytics.crop(frame, 5, 7, 9, 11)
    np.testing.assert_array_equal(part.planes[0], y[7:18, 5:14])
    np.testing.assert_array_equal(part.planes[1], u[4:10, 3:8])  # ceil(5/2)=3, ceil(7/2)=4, 5x6 chroma
    edge = io_analytics.crop(frame, 63, 63, 1, 1)  # chroma offset 32 is past the plane: edge sample repeated
    assert edge.planes[1].shape == (1, 1) and edge.planes[1][0, 0] == u[31, 31]


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize("elem", [F32, U8])
def test_classify_crop_reaches_the_model(tmp_path: Path, nhwc: bool, elem: int) -> None:
    model = channel_means(tmp_path, nhwc=nhwc, elem=elem)
    img = np.zeros((32, 48, 3), np.uint8)
    img[8:24, 16:40] = (30, 60, 90)
    frame = Frame.from_ndarray(img, "rgb24", pts=0)
    frame.side_data.detections = Detections(xyxy=[[16, 8, 40, 24]], confidence=[0.9], class_id=[0], frame_size=(48, 32))
    f = make_filter("dnn_classify", model=model, confidence=0, labels=labels_file(tmp_path, ["r", "g", "b"]))
    out = run_filter(f, [frame])
    ((label, conf),) = out[0].detections[0].classify
    # top-1 of the channel means (30, 60, 90): the crop only (the black around it would pull the mean far
    # down), in RGB order; FAST_BILINEAR's fixed-point rounding may take one off a flat area
    assert label == "b" and 89.0 <= conf <= 90.0
