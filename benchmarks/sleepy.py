"""A backend that only waits: a batch of n takes ``fixed + n * per_item`` seconds and uses no CPU.

For measuring the shared engine's scheduling (benchmarks/multistream.py ``--sleep``) on a machine
other processes load: sleeping is not slowed by them, so what changes between two trees of avdnn
is how the engine forms and starts batches. Its output is an SSD-style [N, 1, 1, 7] of zeros (no
detection), so ``dnn_detect`` runs its whole per-frame path. ``AVDNN_SLEEP="FIXED_MS,PER_ITEM_MS"``.

``sleepybox`` waits as long and finds one box per image, in one of 16 places of a 4x4 grid, the
next place every :data:`STAY` seconds: a tracker loses it and finds a new one again and again, so
a chain with ``track`` and ``events`` gives a steady flow of ``new`` and ``end`` events, for
measuring the service's events at no model CPU (benchmarks/serve_cluster.py).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from avdnn.dnn.backends import BackendSpec, register_backend
from avdnn.dnn.backends.mock import MockBackend
from avdnn.dnn.interface import DNNBackendType, DNNDataType, DNNLayout, ModelConfig, TensorInfo

NAME = "sleepy"


def _costs() -> tuple[float, float]:
    fixed, per = (float(v) / 1000 for v in os.environ.get("AVDNN_SLEEP", "0,25").split(","))
    return fixed, per


FLAG = DNNBackendType(1 << 12)


class SleepBackend(MockBackend):
    name = NAME
    flag = FLAG

    @classmethod
    def load(cls, config: ModelConfig) -> SleepBackend:
        fixed, per = _costs()

        def run(batch: np.ndarray) -> Any:
            time.sleep(fixed + per * len(batch))
            return np.zeros((len(batch), 1, 1, 7), np.float32)

        out = TensorInfo("detection_out", (-1, 1, 1, 7), DNNDataType.FLOAT, "tensor(float)")
        inp = TensorInfo("x", (-1, -1, -1, 3), DNNDataType.UINT8, "tensor(uint8)", DNNLayout.NHWC)
        return cls(run, inputs=inp, outputs=[out])


BOX = "sleepybox"
#: seconds the box stays in one place before it moves to the next
STAY = 2.0
BOX_FLAG = DNNBackendType(1 << 13)


class BoxBackend(MockBackend):
    name = BOX
    flag = BOX_FLAG

    @classmethod
    def load(cls, config: ModelConfig) -> BoxBackend:
        fixed, per = _costs()

        def run(batch: np.ndarray) -> Any:
            time.sleep(fixed + per * len(batch))
            cell = int(time.monotonic() / STAY) % 16  # a 4x4 grid of places, each left for long
            x, y = 0.25 * (cell % 4), 0.25 * (cell // 4)
            out = np.zeros((len(batch), 1, 1, 7), np.float32)
            out[:, 0, 0] = [0, 1, 0.9, x, y, x + 0.2, y + 0.2]
            return out

        out = TensorInfo("detection_out", (-1, 1, 1, 7), DNNDataType.FLOAT, "tensor(float)")
        inp = TensorInfo("x", (-1, -1, -1, 3), DNNDataType.UINT8, "tensor(uint8)", DNNLayout.NHWC)
        return cls(run, inputs=inp, outputs=[out])


def register() -> None:
    register_backend(BackendSpec(NAME, FLAG, "sleepy", "SleepBackend", "", "numpy"))
    register_backend(BackendSpec(BOX, BOX_FLAG, "sleepy", "BoxBackend", "", "numpy"))
