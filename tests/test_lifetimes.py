"""Lifetimes bounded: every join of a run has a bound, and what a thread left behind still uses
(its input, its output, its shared models) is released when it really ends, never under it.

The bound (``avdnn._util.joins.JOIN_TIMEOUT``, 10 s) is made small here; the threads left
behind are then let go (a peer connects, a pipe is read) and seen to release what they held.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import avdnn
from avdnn._util import joins
from avdnn.dnn import DnnConfig
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Item
from avdnn.dnn.interface import DNNFunctionType
from avdnn.dnn.shared import attach
from avdnn.filters.base import Filter
from avdnn.filters.options import Option
from avdnn.media.frame import Frame
from avdnn.run import parallel
from avdnn.run.threads import Writer, WriterStuckError, prefetch

WAIT = 20.0  # a bound for what must happen, never a measured time
SMALL = 0.3  # the join bound in these tests


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(joins, "JOIN_TIMEOUT", SMALL)
    return SMALL


def bounded(fn: Callable[[], Any], limit: float = WAIT) -> Any:
    """``fn()`` on a thread; the test fails (instead of hanging the suite) when it does not return."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        pytest.fail(f"hung: did not return within {limit} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class Hung(Exception):
    """Raised in the main thread by :func:`deadline` when the code under test did not return."""


@contextlib.contextmanager
def deadline(seconds: float = WAIT) -> Iterator[None]:
    """For code that must run on the main thread (it gets the SIGINT): fail instead of hanging,
    by a SIGALRM that raises :class:`Hung` there (again each second, past cleanups that hang too)."""

    def expire(signum: int, frame: Any) -> None:
        raise Hung(f"hung: did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- the run's own threads --------------------------------------------------------------------


def test_prefetch_close_is_bounded_and_releases_after_the_producer_ends() -> None:
    stuck, ended = threading.Event(), threading.Event()

    def source() -> Iterator[int]:
        yield 1
        stuck.wait(WAIT)  # a read nobody answers
        yield 2

    it = prefetch(source(), 2, name="test-prefetch")
    it._join_timeout = SMALL  # type: ignore[attr-defined]
    assert next(it) == 1
    assert bounded(it.close) is False  # left behind, not waited for for ever
    it.then(ended.set)  # type: ignore[attr-defined]
    assert not ended.is_set()
    stuck.set()
    assert ended.wait(WAIT)


def test_writer_finish_is_bounded_and_the_output_released_after(small_bound: float) -> None:
    stuck, released = threading.Event(), threading.Event()
    w = Writer(lambda item: stuck.wait(WAIT), 2, name="test-writer")
    assert w.put(1)
    with pytest.raises(WriterStuckError, match=r"still writing after 0\.3 s"):
        bounded(w.finish)
    assert w.left_behind
    w.then(released.set)
    assert not released.is_set()
    stuck.set()
    assert released.wait(WAIT)


def test_a_run_whose_output_blocks_stops_on_ctrl_c(clip: dict[str, str], small_bound: float) -> None:
    """A pipe nobody reads: once it is full the writer blocks in its write; Ctrl-C then ends the run
    within the bound, and the writer finishes the output once the pipe is read again."""
    read_fd, write_fd = os.pipe()

    def interrupt_when_blocked() -> None:
        """SIGINT once the kernel says the encoder thread sleeps in a write to the full pipe."""
        while True:
            writer = next((t for t in threading.enumerate() if t.name == "avdnn-encode"), None)
            if writer is not None and writer.native_id is not None:
                with contextlib.suppress(OSError), open(f"/proc/self/task/{writer.native_id}/wchan") as fh:
                    if "pipe_write" in fh.read():
                        break
            threading.Event().wait(0.01)  # polling the kernel's view of a thread: there is nothing to wait on
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_blocked, daemon=True).start()
    try:
        with deadline(), pytest.raises(KeyboardInterrupt):
            avdnn.run(clip["carphone"], output=f"pipe:{write_fd}", format="rawvideo")
        writers = [t for t in threading.enumerate() if t.name == "avdnn-encode"]
        assert writers  # left behind, blocked in its write
        threading.Thread(target=_drain, args=(read_fd,), daemon=True).start()
        for t in writers:
            t.join(WAIT)  # the left-behind writer ends once its write goes through, and finishes the output
        assert not any(t.is_alive() for t in writers)
    finally:
        os.close(write_fd)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 1 << 16):
            pass
    finally:
        os.close(fd)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_open_many_close_does_not_hang_on_a_listening_input(clip: dict[str, str], small_bound: float) -> None:
    """A source listening for a sender that never comes cannot stop at a frame: close() leaves it
    behind after the bound; it ends (and closes its input) once a peer connects."""
    port = _free_port()
    frames = avdnn.open_many(
        [clip["carphone"], f"tcp://127.0.0.1:{port}?listen=1"], source_options={"reconnect_attempts": 0}
    )
    first = [next(frames) for _ in range(3)]
    assert all(k == 0 for k, _ in first)
    bounded(frames.close)
    assert frames.stats.outputs[1].interrupted
    streams = [t for t in threading.enumerate() if t.name == "avdnn-stream-1"]
    assert streams and streams[0].is_alive()
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT):
        pass  # a peer that says nothing: the open fails and the thread ends
    streams[0].join(WAIT)
    assert not streams[0].is_alive()


def test_a_second_input_stuck_in_a_read_is_left_behind(
    clip: dict[str, str], tmp_path: Path, small_bound: float
) -> None:
    """Audio from a pipe whose writer stops writing (and never closes): at the video's end the
    second input's demuxer is left behind after the bound, the output is finished with the audio
    read so far, and the run fails naming the input (AVERROR(ETIMEDOUT))."""
    read_fd, write_fd = os.pipe()
    rate, seconds = 8000, 8
    header = b"RIFF\xff\xff\xff\xffWAVEfmt " + (16).to_bytes(4, "little") + (1).to_bytes(2, "little")
    header += (1).to_bytes(2, "little") + rate.to_bytes(4, "little") + (2 * rate).to_bytes(4, "little")
    header += (2).to_bytes(2, "little") + (16).to_bytes(2, "little") + b"data\xff\xff\xff\xff"
    feeder = threading.Thread(target=os.write, args=(write_fd, header + bytes(2 * rate * seconds)), daemon=True)
    feeder.start()  # 8 s of silence (more than the 4 s video), then nothing, the pipe left open
    out = tmp_path / "o.mkv"
    try:
        with pytest.raises(avdnn.AvdnnError) as info:
            bounded(
                lambda: avdnn.run(
                    clip["carphone"],
                    output=str(out),
                    codec="ffv1",
                    more_inputs=[(f"pipe:{read_fd}", "wav", {})],
                    map=["0:v", "1:a"],
                    audio_codec="pcm_s16le",
                )
            )
        assert "still reading after 0.3 s" in str(info.value) and info.value.code == -110
        import av

        with av.open(str(out)) as c:  # finished: the video, and the audio read before the bound
            assert sum(1 for _ in c.decode(video=0)) == 120
        with av.open(str(out)) as c:
            assert 0 < sum(f.samples for f in c.decode(audio=0)) <= rate * seconds
        demuxers = [t for t in threading.enumerate() if t.name.startswith("avdnn-demux-")]
        assert demuxers
    finally:
        os.close(write_fd)  # the demuxer reads its end of file, ends, and closes its input
    for t in demuxers:
        t.join(WAIT)
        assert not t.is_alive()


# -- shared models after Ctrl-C's grace -------------------------------------------------------


class _Gated(MockBackend):
    gate = threading.Event()
    blocked = threading.Event()
    freed = threading.Event()

    def __init__(self) -> None:
        super().__init__(self._run)

    def _run(self, batch: np.ndarray) -> np.ndarray:
        if batch.max() > 0.5:  # the blocking output's frames
            _Gated.blocked.set()
            assert _Gated.gate.wait(WAIT)
        return batch

    @classmethod
    def load(cls, config: Any) -> MockBackend:
        return cls()

    def close(self) -> None:
        super().close()
        _Gated.freed.set()


class _SharedTest(Filter):
    """Test-only: one inference per frame on the shared instance "lifetimes" (a gated mock), inline
    (async=0); two requests, so the output blocked in one never holds the other output back."""

    name: ClassVar[str] = "avdnn_test_shared"
    description: ClassVar[str] = "Test-only: an inference per frame on a shared mock model."
    options: ClassVar[tuple[Option, ...]] = (Option("block", "bool", False, 0, 1, help="wait for the test's gate"),)
    results: ClassVar[list[str]] = []

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(values, label=label)
        self.value = 1.0 if values.get("block") else 0.0
        config = DnnConfig(model="mock", model_instance="lifetimes", nireq=2, batch_size=1, async_mode=False)
        self.model = attach(config, DNNFunctionType.PROCESS_FRAME, backend=_Gated, name=self.label)

    def filter(self, frame: Frame) -> Sequence[Frame]:
        value = self.value
        self.model.execute(frame, [Item((1, 2, 2), np.dtype(np.float32), lambda dst: dst.fill(value), lambda o: 0)])
        result = self.model.get_result(wait=True, timeout=WAIT)
        _SharedTest.results.append(result.status.name)
        return (frame,)

    def close(self) -> None:
        self.model.close()


def test_an_output_left_behind_after_ctrl_c_keeps_its_shared_model(
    clip: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, register: Callable[[type], type]
) -> None:
    """Output #1 is inside an inference of the shared model when Ctrl-C's grace ends: the run
    returns without it, and the model stays loaded until that output really ends."""
    register(_SharedTest)
    monkeypatch.setattr(parallel, "STOP_GRACE", SMALL)
    _Gated.gate.clear()
    _Gated.blocked.clear()
    _Gated.freed.clear()
    _SharedTest.results.clear()
    sent: list[bool] = []

    def interrupt(stats: avdnn.RunStats, frame: Frame) -> None:
        if stats.frames_written == 3 and not sent:
            assert _Gated.blocked.wait(WAIT)  # output #1 is in its inference by now
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    loop = {"stream_loop": -1}
    jobs = [
        avdnn.Job(
            clip["carphone"],
            "avdnn_test_shared",
            output=str(tmp_path / "a.md5"),
            format="framemd5",
            source_options=loop,
            progress=interrupt,
        ),
        avdnn.Job(clip["carphone"], "avdnn_test_shared=block=1", output=str(tmp_path / "b.md5"), format="framemd5"),
    ]
    try:
        with deadline(), pytest.raises(KeyboardInterrupt) as info:
            avdnn.run_many(jobs)
        report: avdnn.MultiRunStats = info.value.stats  # type: ignore[attr-defined]
        assert report.outputs[1].interrupted and not report.outputs[1].ended
        assert not _Gated.freed.is_set()  # before: the run's scope freed it under output #1's inference
    finally:
        _Gated.gate.set()
    assert _Gated.freed.wait(WAIT)  # output #1 ended: the last one out of the scope freed it
    assert "FAIL" not in _SharedTest.results
