"""dnn_processing end to end on ONNX Runtime: determinism, fault table, sizes, options, errors."""

from __future__ import annotations

import errno
import itertools

import numpy as np
import onnx_models as models
import pytest
from dnnutil import digest, lavfi_frames, make_filter, no_hang, random_frames, run_filter

from avdnn.dnn import faults
from avdnn.errors import (
    AVERROR,
    AVERROR_EXTERNAL,
    AVERROR_INVALIDDATA,
    AvdnnError,
    BackendUnavailableError,
    ExternalError,
    InvalidArgumentError,
    InvalidDataError,
    IOFailureError,
    NotFoundError,
    NotSupportedError,
    OptionNotFoundError,
    OutOfRangeError,
    PermissionDeniedError,
)

COUNT = 10  # divisible by neither 3 nor 7


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory) -> str:
    return models.conv3x3(tmp_path_factory.mktemp("m"), 3)


@pytest.fixture(scope="module")
def clip() -> list:
    return lavfi_frames("rgb24", 40, 24, COUNT)


def test_one_digest_for_every_async_nireq_batch(conv_model: str, clip: list) -> None:
    digests = {}
    for async_, nireq, batch in itertools.product((0, 1), (1, 2, 4), (1, 3, 7)):
        f = make_filter("dnn_processing", model=conv_model, **{"async": async_}, nireq=nireq, batch_size=batch)
        out = no_hang(lambda f=f: run_filter(f, clip))
        assert len(out) == COUNT and [o.pts for o in out] == [c.pts for c in clip]
        digests[(async_, nireq, batch)] = digest(out)
    assert len(set(digests.values())) == 1, digests
    assert digests[(0, 1, 1)] != digest(clip)  # the model really changed the pixels


def _run_until_error(f, frames):
    """Drive like the pipeline: frames returned before the error, and the error."""
    out = []
    try:
        for frame in frames:
            out += f.push(frame)
        out += f.flush()
        out += f.flush()  # a pending error surfaces on the next call
    except Exception as exc:  # noqa: BLE001
        f.close()
        return out, exc
    f.close()
    return out, None


@pytest.mark.parametrize(
    "err,code,cls",
    [
        (errno.EAGAIN, AVERROR_EXTERNAL, ExternalError),
        (errno.EINVAL, AVERROR(errno.EINVAL), InvalidArgumentError),
        (errno.EPERM, AVERROR(errno.EPERM), PermissionDeniedError),
    ],
    ids=["EAGAIN", "EINVAL", "EPERM"],
)
def test_worker_cannot_start_while_flushing(conv_model: str, clip: list, err: int, code: int, cls: type) -> None:
    with faults.inject(faults.Fault("worker_start", errno=err, in_flush=True)):
        f = make_filter("dnn_processing", label="dnn_processing@0", model=conv_model, batch_size=3, nireq=2)
    ref = run_filter(make_filter("dnn_processing", model=conv_model), clip)
    out, exc = no_hang(lambda: _run_until_error(f, clip))
    assert isinstance(exc, cls) and exc.code == code
    assert exc.filter == "dnn_processing@0" and "Unable to start async inference" in str(exc)
    assert digest(out) == digest(ref[:9])  # 3 full batches came out, the partial one failed
    assert f.failed == {exc.message: 1}


def test_error_at_eof_is_not_lost_with_a_single_flush(monkeypatch: pytest.MonkeyPatch, clip: list) -> None:
    """A driver that calls flush once and then close still hears the error (from close).

    A gated mock backend holds every result back until flush, so flush has frames to return.
    """
    import threading

    from avdnn.dnn.backends.mock import MockBackend
    from avdnn.filters import dnn_common

    gate = threading.Event()
    mock = MockBackend(lambda b: (b.any() and gate.wait(10), 1.0 - b)[1])  # the blank size probe passes
    real = dnn_common.load_model
    monkeypatch.setattr(dnn_common, "load_model", lambda *a, **kw: real(*a, backend=mock.as_backend(), **kw))
    with faults.inject(faults.Fault("worker_start", errno=errno.EPERM, in_flush=True)):
        f = make_filter("dnn_processing", model="gated", batch_size=3, nireq=4)
    out = []
    for frame in clip:
        out += f.push(frame)
    assert out == []
    gate.set()
    out += no_hang(f.flush)
    assert [o.pts for o in out] == [c.pts for c in clip[:9]]
    assert np.array_equal(out[0].planes[0], 255 - clip[0].planes[0])
    with pytest.raises(PermissionDeniedError) as info:
        f.close()
    assert info.value.filter == "dnn_processing" and info.value.pts == clip[9].pts
    f.close()  # idempotent, and quiet the second time


def test_flush_failure_is_its_own_error(conv_model: str, clip: list) -> None:
    with faults.inject(faults.Fault("flush", errno=errno.EIO)):
        f = make_filter("dnn_processing", model=conv_model, batch_size=4, nireq=1)
    out, exc = no_hang(lambda: _run_until_error(f, clip))
    assert isinstance(exc, IOFailureError) and exc.code == AVERROR(errno.EIO)
    assert "injected flush failure" in exc.message
    assert len(out) == 8


@pytest.mark.parametrize("async_", [0, 1])
def test_post_processing_failure_on_frame_k(conv_model: str, clip: list, async_: int) -> None:
    k = 4
    with faults.inject(faults.Fault("post_process", at=k)) as plan:
        f = make_filter("dnn_processing", model=conv_model, **{"async": async_}, nireq=2)
    ref = run_filter(make_filter("dnn_processing", model=conv_model), clip)
    out, exc = no_hang(lambda: _run_until_error(f, clip))
    assert isinstance(exc, ExternalError) and "post_process" in exc.message
    assert exc.pts == clip[k].pts
    assert digest(out) == digest(ref[:k])  # frame k is not forwarded, nothing after it either
    assert plan.faults[0].point == "post_process"
    assert f.failed[exc.message] == 1


@pytest.mark.parametrize("async_", [0, 1])
def test_inference_raising_in_a_worker(conv_model: str, clip: list, async_: int) -> None:
    with faults.inject(faults.Fault("inference", at=1, error=ExternalError("runtime exploded"))):
        f = make_filter("dnn_processing", model=conv_model, **{"async": async_}, nireq=2, batch_size=2)
    out, exc = no_hang(lambda: _run_until_error(f, clip))
    assert isinstance(exc, ExternalError) and "runtime exploded" in exc.message
    assert len(out) == 2


def test_early_stop_with_requests_in_flight(conv_model: str, clip: list) -> None:
    f = make_filter("dnn_processing", model=conv_model, nireq=4, batch_size=2)
    for frame in clip[:7]:
        f.push(frame)
    assert f.model is not None and f.model.engine.queued > 0
    engine = f.model.engine
    no_hang(f.close)
    assert engine.queued == 0 and engine.stats.buffer_bytes == 0
    f.close()


def test_resolution_jump_grows_the_buffer_once(tmp_path) -> None:
    frames = lavfi_frames("rgb24", 128, 128, 3) + lavfi_frames("rgb24", 256, 256, 3)
    for i, fr in enumerate(frames):
        fr.pts = i
    f = make_filter("dnn_processing", model=models.invert(tmp_path, 3), nireq=1)
    engine = f.model.engine
    out = run_filter(f, frames)
    assert [(o.width, o.height) for o in out] == [(128, 128)] * 3 + [(256, 256)] * 3
    for a, b in zip(frames, out, strict=True):
        assert np.array_equal(b.planes[0], 255 - a.planes[0])
    assert engine.stats.buffer_allocations == 2 and engine.stats.buffer_grows == 1


def test_output_size_from_a_trial_run(tmp_path) -> None:
    frames = random_frames("yuv420p", 40, 30, 2)
    out = run_filter(make_filter("dnn_processing", model=models.pool2(tmp_path, 1)), frames)
    for a, b in zip(frames, out, strict=True):
        assert (b.width, b.height) == (20, 15)
        assert np.array_equal(b.planes[0], a.planes[0].reshape(15, 2, 20, 2).max(axis=(1, 3)))
        assert b.planes[1].shape == (8, 10)  # chroma bicubic-resized to the output


def test_static_output_size_and_fixed_input_mismatch(tmp_path) -> None:
    path = models.fixed_pool2(tmp_path, 48, 32)
    out = run_filter(make_filter("dnn_processing", model=path), random_frames("rgb24", 48, 32, 1))
    assert (out[0].width, out[0].height) == (24, 16)
    f = make_filter("dnn_processing", model=path)
    with pytest.raises(IOFailureError) as info:
        run_filter(f, random_frames("rgb24", 50, 32, 1))
    assert "48x32" in info.value.message and "scale=48:32" in info.value.message


def test_channel_mismatch_is_eio(tmp_path) -> None:
    f = make_filter("dnn_processing", model=models.identity(tmp_path, 3))
    with pytest.raises(IOFailureError) as info:
        run_filter(f, random_frames("gray", 8, 8, 1))
    assert "channel" in info.value.message and info.value.code == AVERROR(errno.EIO)


def test_unsupported_input_type_is_eio(tmp_path) -> None:
    f = make_filter("dnn_processing", model=models.int64_input(tmp_path))
    with pytest.raises(IOFailureError) as info:
        run_filter(f, random_frames("gray", 8, 8, 1))
    assert "int64" in info.value.message


def test_unsupported_pixel_format_is_einval(tmp_path) -> None:
    f = make_filter("dnn_processing", model=models.identity(tmp_path, 3))
    with pytest.raises(InvalidArgumentError):
        run_filter(f, random_frames("rgba", 8, 8, 1))


def test_missing_model_file(tmp_path) -> None:
    with pytest.raises(NotFoundError) as info:
        make_filter("dnn_processing", model="x.onnx")
    assert str(info.value) == "dnn_processing: model 'x.onnx': No such file or directory"
    assert info.value.code == AVERROR(errno.ENOENT)


def test_model_not_specified() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        make_filter("dnn_processing")
    assert info.value.option == "model" and "not specified" in info.value.message


def test_corrupt_model_file(tmp_path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(InvalidDataError) as info:  # docs/dnn.md: an unreadable model file
        make_filter("dnn_processing", model=str(bad))
    assert info.value.code == AVERROR_INVALIDDATA and info.value.filter == "dnn_processing"
    assert info.value.file == str(bad) and "bad.onnx" in str(info.value)
    assert info.value.__cause__ is not None and not isinstance(info.value.__cause__, AvdnnError)  # the runtime's


def test_backend_not_available(monkeypatch) -> None:
    from avdnn.dnn import backends

    monkeypatch.delitem(backends.KNOWN_BACKENDS, "tensorflow")  # a backend avdnn does not have
    with pytest.raises(NotSupportedError) as info:
        make_filter("dnn_processing", dnn_backend="tensorflow", model="m.pb")
    assert "tensorflow" in info.value.message and "onnx" in info.value.message


def test_option_ranges_and_names(tmp_path) -> None:
    path = models.identity(tmp_path, 3)
    with pytest.raises(OutOfRangeError):
        make_filter("dnn_processing", model=path, batch_size=1001)
    with pytest.raises(OptionNotFoundError):
        make_filter("dnn_processing", model=path, bacth_size=2)
    with pytest.raises(InvalidArgumentError):
        make_filter("dnn_processing", model=path, output="a&b&c&d&e")
    with pytest.raises(InvalidArgumentError) as info:
        make_filter("dnn_processing", model=path, input="nope")
    assert "inputs: x" in info.value.message
    f = make_filter("dnn_processing", model=path)
    assert (f.config.nireq, f.config.batch_size, f.config.async_mode, f.config.backend) == (0, 1, True, "onnx")
    f.close()


def test_backend_options_direct_and_deprecated(tmp_path) -> None:
    path = models.identity(tmp_path, 3)
    f = make_filter("dnn_processing", model=path, threads_per_operation=1)
    assert f.config.backend_options["threads_per_operation"] == 1
    f.close()
    f = make_filter("dnn_processing", model=path, backend_configs="threads_per_operation=2&optimization=basic")
    assert f.config.backend_options == {
        "threads_per_operation": 2,
        "inter_op_threads": 0,
        "optimization": 1,
        "extra_inputs": None,
        "scale": 0.0,
        "mean": 0.0,
    }
    f.close()
    with pytest.raises(OptionNotFoundError):  # base options cannot go through backend_configs
        make_filter("dnn_processing", model=path, options="async=0")


def test_several_outputs_use_the_first(tmp_path) -> None:
    path = models.two_outputs(tmp_path)
    frames = random_frames("rgb24", 12, 10, 2)
    assert digest(run_filter(make_filter("dnn_processing", model=path, output="y&z"), frames)) == digest(frames)
    out = run_filter(make_filter("dnn_processing", model=path, output="z&y"), frames)
    assert np.array_equal(out[0].planes[0], 255 - frames[0].planes[0])
    with pytest.raises(InvalidArgumentError):
        make_filter("dnn_processing", model=path, output="y&w")


def test_unknown_device_and_missing_provider(tmp_path, caplog) -> None:
    path = models.identity(tmp_path, 3)
    with pytest.raises(InvalidArgumentError):
        make_filter("dnn_processing", model=path, device="tpu")
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        with caplog.at_level("WARNING", logger="avdnn"):
            f = make_filter("dnn_processing", model=path, device="cuda")
        assert "CPU" in caplog.text
        f.close()


def test_missing_runtime_names_the_extra(monkeypatch) -> None:
    from avdnn.dnn import backends

    spec = backends.KNOWN_BACKENDS["onnx"]
    monkeypatch.setitem(backends.KNOWN_BACKENDS, "onnx", type(spec)(**{**spec.__dict__, "requires": "no_such_rt"}))
    with pytest.raises(BackendUnavailableError) as info:
        make_filter("dnn_processing", model="m.onnx")
    assert "pip install 'avdnn[onnxruntime]'" in info.value.message


def test_extra_model_inputs_get_constant_values(tmp_path) -> None:
    """A second model input (multistyle26's style_weights) is fed from extra_inputs."""
    path = models.scaled(tmp_path)
    frames = random_frames("rgb24", 12, 8, 2)
    out = run_filter(make_filter("dnn_processing", model=path, extra_inputs="s=0.5"), frames)
    x = frames[1].planes[0].astype(np.float32) * np.float32(1 / 255)
    want = np.clip(np.rint((x * np.float32(0.5)) * np.float32(255)), 0, 255).astype(np.uint8)
    assert np.array_equal(out[1].planes[0], want)
    with pytest.raises(NotSupportedError) as info:
        make_filter("dnn_processing", model=path)
    assert "extra_inputs=s=" in info.value.message
    with pytest.raises(InvalidArgumentError):
        make_filter("dnn_processing", model=path, extra_inputs="s=0.5&t=1")
