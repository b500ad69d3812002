"""Engine overhead and dnn_processing throughput on generated models (prints a table).

PYTHONPATH=src:tests/dnn python benchmarks/dnn_engine.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "dnn"))

import onnx_models as models
from dnnutil import make_filter, random_frames, run_filter

from avdnn.dnn import faults
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.engine import Engine, Item
from avdnn.dnn.interface import DNNAsyncStatusType


def engine_overhead(n: int = 2000) -> None:
    for async_mode in (False, True):
        for batch in (1, 8):
            mock = MockBackend(lambda b: b)
            e = Engine(mock.run, nireq=2, batch_size=batch, async_mode=async_mode, faults=faults.FaultPlan())
            t0 = time.perf_counter()
            for i in range(n):
                e.submit(i, [Item((1, 4, 4), np.dtype(np.float32), lambda d: None, lambda o: None)])
                while e.get_result().status == DNNAsyncStatusType.SUCCESS:
                    pass
            e.flush()
            while e.get_result(wait=True).status != DNNAsyncStatusType.EMPTY_QUEUE:
                pass
            dt = time.perf_counter() - t0
            e.close()
            print(f"engine no-op   async={int(async_mode)} batch={batch}: {dt / n * 1e6:7.1f} us/frame")


def throughput(size: int = 256, count: int = 40) -> None:
    tmp = Path(tempfile.mkdtemp())
    path = models.conv3x3(tmp, 3)
    frames = random_frames("rgb24", size, size, count)
    for async_, nireq, batch in ((0, 1, 1), (1, 1, 1), (1, 2, 1), (1, 2, 4), (0, 1, 4)):
        f = make_filter("dnn_processing", model=path, **{"async": async_}, nireq=nireq, batch_size=batch)
        t0 = time.perf_counter()
        run_filter(f, frames)
        dt = time.perf_counter() - t0
        print(f"conv3x3 {size}x{size} rgb24 async={async_} nireq={nireq} batch={batch}: {count / dt:6.1f} fps")


if __name__ == "__main__":
    engine_overhead()
    throughput()
