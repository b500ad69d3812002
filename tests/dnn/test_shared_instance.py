"""model_instance: one model and one engine shared by several streams (avdnn.dnn.shared).

The engine's side on a MockBackend driven from one thread (deterministic batches: mixing,
per-stream order, the fill deadline, fault isolation, refcounts, interrupts), then the real
filters on threads over a tiny ONNX model and over a real clip, byte-equal to solo runs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dnnutil import digest, make_filter, no_hang, random_frames
from onnx_models import conv3x3

from avdnn.dnn import DnnConfig, faults
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Item
from avdnn.dnn.interface import DNNAsyncStatusType as S
from avdnn.dnn.interface import DNNFunctionType
from avdnn.dnn.shared import InstanceScope, SharedModel, attach, current_scope, default_scope
from avdnn.errors import AvdnnError, ExitRequestedError, ExternalError, InvalidArgumentError
from avdnn.filters.base import Filter
from avdnn.media.frame import Frame

F32 = np.dtype(np.float32)
HANG = 10.0


def item(value: float, shape: tuple[int, ...] = (1, 2, 2)) -> Item:
    return Item(shape, F32, lambda dst: dst.fill(value), lambda outs: float(outs[0].mean()))


class Recording(MockBackend):
    """A mock that remembers the first value of every item of every batch it ran."""

    def __init__(self) -> None:
        super().__init__(lambda b: b * 2)
        self.seen: list[list[float]] = []
        self.cancelled = 0

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        with self._lock:
            self.seen.append([float(x) for x in batch.reshape(len(batch), -1)[:, 0]])
        return super().run(batch)

    def cancel(self) -> None:  # Cancellable: a shared instance must never be cancelled for one stream
        self.cancelled += 1


def config(**kw: Any) -> DnnConfig:
    kw.setdefault("model", "mock")
    kw.setdefault("model_instance", "x")
    kw.setdefault("batch_size", 4)
    kw.setdefault("nireq", 1)
    kw.setdefault("batch_timeout", 5.0)  # long: batches here fill by count or by flush only
    return DnnConfig(**kw)


def drain(model: SharedModel) -> list:
    out = []
    while (r := model.get_result(wait=True, timeout=HANG)).status != S.EMPTY_QUEUE:
        assert r.status != S.NOT_READY, "a submitted task never completed"
        out.append(r)
    return out


def test_batches_mix_streams_and_each_gets_its_own_results_in_order() -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope() as scope:
        a = attach(config(), backend=cls, name="a")
        b = attach(config(), backend=cls, name="b")
        assert current_scope() is scope and a.instance is b.instance
        for i in range(8):
            a.execute(("a", i), [item(i)])
            b.execute(("b", i), [item(100 + i)])
        a.flush()
        b.flush()
        ra, rb = no_hang(lambda: drain(a)), no_hang(lambda: drain(b))
        assert [r.payload for r in ra] == [("a", i) for i in range(8)]
        assert [r.results[0] for r in ra] == [2.0 * i for i in range(8)]
        assert [r.payload for r in rb] == [("b", i) for i in range(8)]
        assert [r.results[0] for r in rb] == [2.0 * (100 + i) for i in range(8)]
        assert mock.batch_sizes == [4, 4, 4, 4]
        assert all(min(b) < 100 <= max(b) for b in mock.seen)  # every batch held both streams
        (report,) = scope.reports()
        assert (report.name, report.streams, report.inferences, report.batches) == ("x", ("a", "b"), 16, 4)
        assert report.mixed_batches == 4
        assert report.batch_sizes == (0, 0, 0, 4)  # batches by size: four of 4
        assert (
            report.line()
            == "model_instance x: 2 streams, 16 inferences in 4 batches (4.00 per batch, 4 with several streams)"
        )
        a.close()
        b.close()
    assert mock.closed


def test_batch_timeout_runs_a_partial_batch_while_the_other_stream_is_idle() -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope():
        a = attach(config(batch_timeout=0.01), backend=cls, name="a")
        b = attach(config(batch_timeout=0.01), backend=cls, name="b")  # attached, never submits
        a.execute("a0", [item(1)])
        r = no_hang(lambda: a.get_result(wait=True, timeout=HANG))  # no flush: the deadline dispatches it
        assert (r.status, r.payload, r.results) == (S.SUCCESS, "a0", (2.0,))
        b.close()  # an ended stream: a goes on alone
        for i in range(5):
            a.execute(i, [item(i)])
        assert [r.payload for r in no_hang(lambda: drain(a))] == list(range(5))
        assert mock.batch_sizes[0] == 1 and sum(mock.batch_sizes) == 6
        a.close()


def test_flush_ends_only_its_own_stream() -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope():
        a = attach(config(), backend=cls, name="a")
        b = attach(config(), backend=cls, name="b")
        a.execute("a0", [item(1)])
        b.execute("b0", [item(2)])
        a.flush()  # dispatches the pending group at once (b's item rides along), not after 5 s
        assert [r.payload for r in no_hang(lambda: drain(a))] == ["a0"]
        b.execute("b1", [item(3)])
        b.flush()
        assert [r.payload for r in no_hang(lambda: drain(b))] == ["b0", "b1"]
        a.close()
        b.close()


def test_streams_of_different_sizes_batch_among_themselves() -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope():
        a = attach(config(), backend=cls, name="a")
        b = attach(config(), backend=cls, name="b")
        for i in range(4):
            a.execute(i, [item(i, (1, 2, 2))])
            b.execute(i, [item(i, (1, 4, 4))])
        assert [r.payload for r in no_hang(lambda: drain(a))] == list(range(4))
        assert [r.payload for r in no_hang(lambda: drain(b))] == list(range(4))
        assert mock.batch_sizes == [4, 4]  # two full batches, no shape change broke them
        a.close()
        b.close()


def test_a_failing_frame_fails_only_its_stream_and_only_that_frame() -> None:
    """The run of a mixed batch raises: the batch is rerun per stream, then item by item."""
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope() as scope:
        with faults.inject(faults.Fault("inference", stream="b", at=2)):  # seen by the engine made here
            a = attach(config(), backend=cls, name="a")
            b = attach(config(), backend=cls, name="b")
        for i in range(4):
            a.execute(i, [item(i)])
            b.execute(i, [item(100 + i)])
        a.flush()
        b.flush()
        ra, rb = no_hang(lambda: drain(a)), no_hang(lambda: drain(b))
        assert [r.status for r in ra] == [S.SUCCESS] * 4
        assert [r.results[0] for r in ra] == [0.0, 2.0, 4.0, 6.0]
        assert [r.status for r in rb] == [S.SUCCESS, S.SUCCESS, S.FAIL, S.SUCCESS]
        assert isinstance(rb[2].error, ExternalError) and "injected inference failure" in rb[2].error.message
        assert b.shared_engine.faults.fired["inference"] == 3  # the mixed batch, b's part, b's frame 2 alone
        (report,) = scope.reports()
        assert (report.failures, report.reruns) == (1, 1)
        assert report.line().endswith(", 1 failed")
        a.close()
        b.close()


def test_interrupt_stops_one_stream_never_the_shared_backend() -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope():
        a = attach(config(batch_size=1), backend=cls, name="a")
        b = attach(config(batch_size=1), backend=cls, name="b")
        a.execute("a0", [item(1)])
        a.interrupt()
        with pytest.raises(ExitRequestedError):
            a.get_result(wait=True, timeout=HANG)
        with pytest.raises(ExitRequestedError):
            a.execute("a1", [item(1)])
        for i in range(3):
            b.execute(i, [item(i)])
        assert [r.payload for r in no_hang(lambda: drain(b))] == [0, 1, 2]
        a.close()
        b.execute(3, [item(3)])
        assert [r.payload for r in no_hang(lambda: drain(b))] == [3]
        b.close()
    assert mock.closed and mock.cancelled == 0


def test_a_run_scope_holds_its_instance_until_it_ends() -> None:
    """One output's filters close before another's attach: still one load, one report."""
    mock = Recording()
    loads: list[Any] = []

    class Counting(mock.as_backend()):  # type: ignore[misc]
        @classmethod
        def load(cls, config: Any) -> Any:
            loads.append(config)
            return super().load(config)

    cls = Counting
    with InstanceScope() as scope:
        a = attach(config(), backend=cls, name="f")
        b = attach(config(), backend=cls, name="f")  # the same label twice: made unique
        assert (a.label, b.label) == ("f", "f#2")
        for i in range(4):
            a.execute(i, [item(i)])
        a.flush()
        assert [r.payload for r in no_hang(lambda: drain(a))] == [0, 1, 2, 3]
        b.close()
        b.close()  # idempotent
        a.close()
        assert not mock.closed  # the scope holds it: the run's next output uses the same model
        c = attach(config(), backend=cls, name="g")
        assert c.instance is a.instance and len(loads) == 1
        with pytest.raises(InvalidArgumentError, match="batch_size"):  # still one name, one instance
            attach(config(batch_size=2), backend=cls, name="h")
        c.execute(0, [item(7)])
        c.flush()
        assert [r.results for r in no_hang(lambda: drain(c))] == [(14.0,)]
        (report,) = scope.reports()
        assert (report.streams, report.inferences, report.batches) == (("f", "f#2", "g"), 5, 2)
    assert mock.closed and len(loads) == 1  # the scope's end frees it
    c.close()  # after the scope: nothing more to do
    assert [r.streams for r in scope.reports()] == [("f", "f#2", "g")]


def test_the_default_scope_frees_at_the_last_close_and_keeps_few_reports() -> None:
    """No scope entered: the last close frees the instance, a later filter loads it anew, and
    the process-wide scope keeps only live instances and the newest few reports."""
    from avdnn.dnn.shared.scope import DEFAULT_SCOPE_REPORTS

    mock = Recording()
    cls = mock.as_backend()
    assert current_scope() is default_scope()
    a = attach(config(model_instance="dflt"), backend=cls, name="a")
    b = attach(config(model_instance="dflt"), backend=cls, name="b")
    b.close()
    assert not mock.closed
    a.close()
    assert mock.closed
    mock.closed = False
    c = attach(config(model_instance="dflt"), backend=cls, name="c")
    assert c.instance is not a.instance
    for k in range(3 * DEFAULT_SCOPE_REPORTS):
        attach(config(model_instance=f"dflt{k}"), backend=cls, name="x").close()
    reports = default_scope().reports()
    assert len(reports) == DEFAULT_SCOPE_REPORTS + 1  # the live one and the newest closed ones
    assert [r.streams for r in reports if r.name == "dflt"] == [("c",)]
    assert reports[-1].name == f"dflt{3 * DEFAULT_SCOPE_REPORTS - 1}"
    c.close()
    assert mock.closed
    assert all(r.name != "dflt" or r.streams == ("c",) for r in default_scope().reports())


def test_scope_labels_streams_and_default_scope_serves_other_threads() -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope() as scope, scope.stream("out1"):
        a = attach(config(), backend=cls, name="dnn_detect")
        assert a.label == "out1:dnn_detect"
        a.close()
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("scope", current_scope()))
    thread.start()
    thread.join(HANG)
    assert box["scope"] is default_scope()


@pytest.mark.parametrize(
    "change, option",
    [
        ({"batch_size": 2}, "batch_size"),
        ({"nireq": 3}, "nireq"),
        ({"async_mode": False}, "async"),
        ({"batch_timeout": 0.5}, "batch_timeout"),
        ({"outputs": ("y",)}, "output"),
        ({"backend_options": {"threads": 2}}, "threads"),
    ],
)
def test_options_that_differ_are_refused_naming_both_filters(change: dict, option: str) -> None:
    mock = Recording()
    cls = mock.as_backend()
    with InstanceScope():
        first = attach(config(), backend=cls, name="dnn_processing@a")
        with pytest.raises(InvalidArgumentError) as info:
            attach(config(**change), backend=cls, name="dnn_processing@b")
        err = info.value
        assert err.option == option
        assert "dnn_processing@a" in err.message and "dnn_processing@b" in err.message and option in err.message
        with pytest.raises(InvalidArgumentError, match="dnn_processing@a"):
            attach(config(), DNNFunctionType.ANALYTICS_DETECT, backend=cls, name="dnn_detect@b")
        first.close()


# -- the real filters ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return conv3x3(tmp_path_factory.mktemp("shared"))


def run_collect(
    f: Filter, frames: list[Frame], step: Callable[[], Any] | None = None
) -> tuple[list[Frame], AvdnnError | None]:
    """Push (calling ``step`` before each frame), flush, close; the frames out and the error the
    filter raised, if any."""
    out: list[Frame] = []
    err: AvdnnError | None = None
    try:
        for frame in frames:
            if step is not None:
                step()
            out += f.push(frame)
        out += f.flush()
    except AvdnnError as exc:
        err = exc
    try:
        f.close()  # an error at EOF that flush left for close (its frames came out first)
    except AvdnnError as exc:
        err = err or exc
    return out, err


def run_threads(
    filters: list[Filter], inputs: list[list[Frame]], *, lockstep: bool = False
) -> list[tuple[list[Frame], AvdnnError | None]]:
    """Each filter on its own thread; ``lockstep``: every thread pushes its next frame only when
    all have pushed the previous one (the inputs have one length), so batches must mix them."""
    results: list[Any] = [None] * len(filters)
    step = threading.Barrier(len(filters), timeout=HANG).wait if lockstep else None

    def work(k: int) -> None:
        results[k] = run_collect(filters[k], inputs[k], step)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(len(filters))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG * 3)
        assert not t.is_alive(), "a stream of the shared instance hung"
    return results


@pytest.mark.parametrize("sizes", [((48, 32), (48, 32), (48, 32)), ((48, 32), (40, 30))])
def test_filters_on_threads_share_and_match_their_solo_runs(model: str, sizes: tuple) -> None:
    inputs = [random_frames("rgb24", w, h, 13, seed=k) for k, (w, h) in enumerate(sizes)]
    solo = [digest(run_collect(make_filter("dnn_processing", model=model, batch_size=4), f)[0]) for f in inputs]
    with InstanceScope() as scope:
        opts = {"model": model, "batch_size": 4, "nireq": 2, "model_instance": "x", "batch_timeout": "1"}
        filters = [make_filter("dnn_processing", f"dnn_processing@{k}", **opts) for k in range(len(sizes))]
        results = run_threads(filters, inputs, lockstep=True)
    for (out, err), want, frames in zip(results, solo, inputs, strict=True):
        assert err is None
        assert [o.pts for o in out] == [f.pts for f in frames]
        assert digest(out) == want
    (report,) = scope.reports()
    assert len(report.streams) == len(sizes) and report.inferences == 13 * len(sizes)
    assert report.batches < report.inferences and report.mean_batch > 1
    if len(set(sizes)) == 1:  # in lockstep, every full batch holds 2 streams at least
        assert report.mixed_batches > 0, report
    else:  # other geometries batch among themselves: never mixed
        assert report.mixed_batches == 0, report


def test_one_name_is_one_load_for_the_run_when_the_first_filter_closes_first(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 3: one output's filter ends and closes before another output's filter is built;
    the run's scope still holds the model: one load, one report naming both streams."""
    from avdnn.dnn.shared import instance

    loads: list[str] = []
    real = instance.load_backend
    monkeypatch.setattr(instance, "load_backend", lambda c, *a: (loads.append(c.model), real(c, *a))[1])
    inputs = [random_frames("rgb24", 48, 32, 6, seed=k) for k in range(2)]
    solo = [digest(run_collect(make_filter("dnn_processing", model=model, batch_size=4), f)[0]) for f in inputs]
    opts = {"model": model, "batch_size": 4, "model_instance": "x", "batch_timeout": "1"}
    with InstanceScope() as scope:
        with scope.stream("out#0"):
            first, err = run_collect(make_filter("dnn_processing", "dnn_processing", **opts), inputs[0])
        assert err is None
        with scope.stream("out#1"):
            second, err = run_collect(make_filter("dnn_processing", "dnn_processing", **opts), inputs[1])
        assert err is None
    assert [digest(first), digest(second)] == solo
    assert loads == [model]
    (report,) = scope.reports()
    assert report.streams == ("out#0:dnn_processing", "out#1:dnn_processing")
    assert (report.inferences, report.batches, report.mixed_batches) == (12, 4, 0)  # one after the other


def test_a_fault_in_one_stream_fails_that_filter_at_its_frame_only(model: str) -> None:
    inputs = [random_frames("rgb24", 48, 32, 12, seed=k) for k in range(2)]
    solo = [run_collect(make_filter("dnn_processing", model=model, batch_size=4), f)[0] for f in inputs]
    opts = {"model": model, "batch_size": 4, "model_instance": "x", "batch_timeout": "1"}
    with InstanceScope() as scope:
        with faults.inject(faults.Fault("inference", stream="dnn_processing@b", at=5)):
            filters = [make_filter("dnn_processing", f"dnn_processing@{k}", **opts) for k in "ab"]
        (out_a, err_a), (out_b, err_b) = run_threads(filters, inputs)
    assert err_a is None and digest(out_a) == digest(solo[0])
    assert isinstance(err_b, ExternalError) and err_b.filter == "dnn_processing@b" and err_b.pts == inputs[1][5].pts
    assert digest(out_b) == digest(solo[1][:5])  # every frame before the failing one came out
    assert scope.reports()[0].failures == 1


def test_filter_options_model_instance_and_batch_timeout(model: str) -> None:
    with pytest.raises(InvalidArgumentError, match="model_instance") as info:
        make_filter("dnn_processing", model=model, batch_timeout="10ms")
    assert info.value.option == "batch_timeout"
    with InstanceScope():
        f = make_filter("dnn_processing", model=model, model_instance="m", batch_timeout="10ms")
        assert f.config.batch_timeout == pytest.approx(0.01) and f.config.model_instance == "m"
        with pytest.raises(InvalidArgumentError, match="dnn_detect"):  # another function on the same instance
            make_filter("dnn_detect", model=model, model_instance="m", batch_timeout="10ms")
        f.close()
    from avdnn.filters.registry import get_filter

    for name in ("dnn_processing", "sr", "derain", "dnn_detect", "dnn_classify"):
        rows = {o.name: o for o in get_filter(name).options}
        assert rows["model_instance"].default is None and rows["batch_timeout"].default == 0.005
    assert "<duration>" in get_filter("sr").option("batch_timeout").describe()


def test_two_pipelines_over_a_real_clip_share_and_match_the_single_stream_run(model: str, clip: dict) -> None:
    """The Python API, two runs built on this thread inside one scope, iterated on two threads."""
    from avdnn.api import single as api

    counts = (6, 15)  # one stream ends (and leaves the instance) while the other goes on
    chain = f"format=rgb24,dnn_processing=model={model}:batch_size=4"
    paths = [clip["carphone"], clip["bikes"]]
    solo = [digest(list(api.run(p, chain, frames=n))) for p, n in zip(paths, counts, strict=True)]
    shared = f"{chain}:model_instance=clips"
    got: list[str | None] = [None, None]
    with InstanceScope() as scope:
        streams = [api.run(p, shared, frames=n) for p, n in zip(paths, counts, strict=True)]

        def work(k: int) -> None:
            with streams[k] as s:
                got[k] = digest(list(s))

        threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
            assert not t.is_alive()
    assert got == solo
    (report,) = scope.reports()
    assert len(report.streams) == 2 and report.inferences >= sum(counts)
    assert report.line().startswith("model_instance clips: 2 streams, ")


def test_a_model_file_given_two_ways_is_one_model(tmp_path: Path, model: str) -> None:
    mock_dir = tmp_path / "d"
    mock_dir.mkdir()
    link = mock_dir / "same.onnx"
    link.symlink_to(model)
    with InstanceScope() as scope:
        a = make_filter("dnn_processing", "a", model=model, model_instance="m")
        b = make_filter("dnn_processing", "b", model=str(link), model_instance="m")
        a.close()
        b.close()
    assert [r.streams for r in scope.reports()] == [("a", "b")]


def test_cli_single_stream_on_an_instance_is_byte_identical(model: str, clip: dict, avdnn_cli: Any) -> None:
    """One filter on an instance (in the run's scope) writes what the plain filter writes."""
    vf = f"format=rgb24,dnn_processing=model={model}:batch_size=4"
    head, tail = ["-hide_banner", "-i", clip["carphone"]], ["-frames:v", "9", "-f", "framemd5", "-"]
    plain = avdnn_cli([*head, "-vf", vf, *tail])
    shared = avdnn_cli([*head, "-vf", f"{vf}:model_instance=cli:batch_timeout=2ms", *tail])
    assert plain.rc == shared.rc == 0, shared.err
    assert shared.out == plain.out and plain.out.count(b"\n0, ") == 9


def test_an_output_stopping_early_leaves_the_other_running(
    model: str, clip: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """api.run to framemd5 on two threads: the -frames:v output stops (its writer interrupts its
    filter) while the other runs to its end; both equal their single-stream runs."""
    from avdnn.api import single as api
    from avdnn.dnn.shared.engine import SharedEngine

    stopped: list[str] = []
    real = SharedEngine.interrupt_for
    monkeypatch.setattr(SharedEngine, "interrupt_for", lambda self, c: (stopped.append(c.label), real(self, c))[1])

    chain = f"format=rgb24,dnn_processing=model={model}:batch_size=4:nireq=1"
    src, caps = clip["carphone"], (3, None)

    def out(name: str, vf: str, frames: int | None, progress: Any = None) -> bytes:
        path = tmp_path / f"{name}.framemd5"
        api.run(src, vf, output=str(path), format="framemd5", frames=frames, progress=progress)
        return path.read_bytes()

    solo = [out(f"solo{k}", chain, n) for k, n in enumerate(caps)]
    barrier = threading.Barrier(2, timeout=HANG)  # both filters have attached before either ends
    got: list[bytes | None] = [None, None]
    with InstanceScope() as scope:

        def work(k: int) -> None:
            met = [False]

            def progress(*_: Any) -> None:
                if not met[0]:
                    met[0] = True
                    barrier.wait()

            with scope:  # api.run builds its chain on this thread
                got[k] = out(f"shared{k}", f"{chain}:model_instance=io", caps[k], progress)

        threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
            assert not t.is_alive()
    assert got == solo
    (report,) = scope.reports()
    assert len(report.streams) == 2
    assert len(stopped) == 1 and stopped[0] in report.streams  # only the capped stream was interrupted
    assert solo[1].count(b"\n0, ") > 4 * solo[0].count(b"\n0, ") == 12


def test_stream_scoped_faults_parse_and_match_only_their_stream() -> None:
    (fault,) = faults.parse_env("inference:stream=dnn_detect@b:at=3")
    assert (fault.point, fault.stream, fault.at) == ("inference", "dnn_detect@b", 3)
    plan = faults.FaultPlan((fault,))
    plan.hit("inference", 3)  # a batch number: never a stream's fault
    plan.hit("inference", 3, stream="dnn_detect@a")
    with pytest.raises(ExternalError):
        plan.hit("inference", 3, stream="dnn_detect@b")
    anyone = faults.FaultPlan((faults.Fault("post_process", at=1),))
    with pytest.raises(ExternalError):
        anyone.hit("post_process", 1, stream="dnn_detect@a")  # an unscoped fault hits every stream


def test_two_clips_through_one_instance_in_one_cli_run(model: str, clip: dict, tmp_path: Path, avdnn_cli: Any) -> None:
    """The issue's check: two outputs of one run share ``model_instance`` (batch_size=4); each
    output's framemd5 equals that clip's single-stream run, and the summary names the instance
    with its two streams."""
    vf = f"format=rgb24,scale=96:64,dnn_processing=model={model}:batch_size=4"
    clips = [clip["carphone"], clip["bikes"]]
    solo = []
    for k, path in enumerate(clips):
        out = tmp_path / f"solo{k}.framemd5"
        res = avdnn_cli(["-hide_banner", "-y", "-i", path, "-frames:v", "40", "-vf", vf, "-f", "framemd5", str(out)])
        assert res.rc == 0, res.err
        solo.append(out.read_bytes())
    argv = ["-hide_banner", "-y", "-i", clips[0], "-i", clips[1]]
    for k in range(2):
        out = tmp_path / f"shared{k}.framemd5"
        argv += ["-map", f"{k}:v", "-frames:v", "40", "-vf", f"{vf}:model_instance=det", "-f", "framemd5", str(out)]
    res = avdnn_cli(argv)
    assert res.rc == 0, res.err
    assert [(tmp_path / f"shared{k}.framemd5").read_bytes() for k in range(2)] == solo
    assert solo[0].count(b"\n0, ") == 40
    line = next(ln for ln in res.err.splitlines() if "model_instance det" in ln)
    m = re.search(
        r"model_instance det: 2 streams, (\d+) inferences in (\d+) batches \(.*, (\d+) with several streams\)", line
    )
    assert m is not None, line
    inferences, batches, mixed = map(int, m.groups())
    assert inferences >= 80 and batches < inferences  # the chains ran past -frames:v
    # whether a batch mixes the clips here is the scheduler's call (one reader may run ahead and
    # fill whole batches alone: seen in CI); that batches do mix streams is shown deterministically
    # by the lockstep tests above (test_filters_on_threads_share_and_match_their_solo_runs)
    assert 0 <= mixed <= batches
