"""Helpers for the DNN tests: frames, filter construction, digests, hang guards.

A plain module, not a conftest, so its name cannot shadow the suite's root conftest.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable
from typing import Any

import av
import numpy as np
import pytest

from avdnn.filters.base import Filter
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter
from avdnn.media.frame import Frame

HANG_LIMIT = 10.0


def lavfi_frames(fmt: str, width: int = 97, height: int = 61, count: int = 4, src: str = "testsrc") -> list[Frame]:
    """``count`` frames of an FFmpeg test source, converted to ``fmt`` by libswscale."""
    rate = 25
    with av.open(f"{src}=s={width}x{height}:r={rate}:d={count / rate}", format="lavfi") as container:
        frames = [Frame.from_av(f.reformat(format=fmt)) for f in container.decode(video=0)]
    assert len(frames) == count
    return frames


def random_frames(fmt: str, width: int, height: int, count: int, seed: int = 0) -> list[Frame]:
    """Frames of random pixels built with numpy (every byte value shows up)."""
    from avdnn.media.pixfmt import lookup

    rng = np.random.default_rng(seed)
    spec = lookup(fmt)
    out = []
    for i in range(count):
        planes = []
        for p in spec.planes:
            w, h = p.size(width, height)
            shape = (h, w) if p.channels == 1 else (h, w, p.channels)
            if spec.dtype == np.float32:
                planes.append(rng.random(shape, dtype=np.float32))
            else:
                planes.append(rng.integers(0, 256, shape, dtype=np.uint8))
        out.append(Frame.from_planes(planes, fmt, pts=i))
    return out


def make_filter(name: str, label: str | None = None, **options: Any) -> Filter:
    """A filter from the registry with options bound the way the graph binds them."""
    cls = get_filter(name)
    items = [(k, str(int(v)) if isinstance(v, bool) else str(v)) for k, v in options.items()]
    values = bind_options(cls.options, items, filter_name=label or name)
    return cls(values, label=label or name)


def run_filter(f: Filter, frames: Iterable[Frame], *, close: bool = True) -> list[Frame]:
    """Push every frame, flush, close; the frames that came out, in order."""
    out: list[Frame] = []
    try:
        for frame in frames:
            out += f.push(frame)
        out += f.flush()
    finally:
        if close:
            f.close()
    return out


def digest(frames: Iterable[Frame]) -> str:
    """MD5 over every plane's pixels (row padding excluded), frame after frame."""
    md5 = hashlib.md5()
    for frame in frames:
        for plane in frame.planes:
            md5.update(np.ascontiguousarray(plane).tobytes())
    return md5.hexdigest()


def frame_digest(frame: Frame) -> str:
    return digest([frame])


def no_hang(fn: Callable[[], Any], limit: float = HANG_LIMIT) -> Any:
    """Run ``fn`` on a thread; fail the test (instead of hanging the suite) past ``limit`` s."""
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
        pytest.fail(f"hung: did not finish within {limit} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
