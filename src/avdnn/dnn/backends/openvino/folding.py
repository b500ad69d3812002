"""Outputs that depend on the input's shape only, evaluated once per shape in f32 (an SSD's anchors).

A graph cut before its post-processor (:mod:`.convert`) may name an output that no pixel value
reaches, only shapes: the SSD's anchor grid, built from the feature maps' sizes. Run with the
rest of the network it would be recomputed every frame, and in bf16 or int8 it would lose the
precision every box is decoded with. So such an output is split off into its own small f32 model,
run once per input shape (on zeros: its value cannot depend on them) and given to every result.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Folded", "shape_only", "split"]

#: nodes whose value does not depend on their inputs' values
_SHAPE_NODES = frozenset({"ShapeOf", "Constant"})


def shape_only(output: Any) -> bool:
    """Whether no input value reaches this model output (only shapes, through ShapeOf, or constants)."""
    stack = [output.get_node()]
    seen: set[str] = set()
    while stack:
        node = stack.pop()
        name = node.get_name()
        if name in seen:
            continue
        seen.add(name)
        kind = node.get_type_name()
        if kind == "Parameter":
            return False
        if kind in _SHAPE_NODES:
            continue
        stack.extend(inp.get_source_output().get_node() for inp in node.inputs())
    return True


class Folded:
    """The shape-only outputs' model, compiled in f32; their values, kept per input shape."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self._values: dict[tuple[tuple[int, ...], str], list[np.ndarray]] = {}
        self._lock = threading.Lock()

    def values(self, batch: np.ndarray) -> list[np.ndarray]:
        """The outputs for a batch of this shape, each with the batch's first axis (read-only views)."""
        key = (tuple(batch.shape), batch.dtype.str)
        with self._lock:
            found = self._values.get(key)
            if found is None:
                outs = self._run(batch.shape, batch.dtype)
                # an output with a batch axis follows the batch; one without gets it (shared)
                ones = outs if batch.shape[0] == 1 else self._run((1, *batch.shape[1:]), batch.dtype)
                n = batch.shape[0]
                found = [
                    o if o.ndim and o1.ndim and o.shape[0] == n and o1.shape[0] == 1 else _batched(o, n)
                    for o, o1 in zip(outs, ones, strict=True)
                ]
                self._values[key] = found
            return found

    def _run(self, shape: tuple[int, ...], dtype: np.dtype) -> list[np.ndarray]:
        request = self.compiled.create_infer_request()
        request.infer({0: np.zeros(shape, dtype)})
        return [np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(self.compiled.outputs))]


def _batched(value: np.ndarray, n: int) -> np.ndarray:
    """``value`` with a new first axis of ``n`` (an anchor grid [N, 4] becomes [n, N, 4], shared)."""
    return np.broadcast_to(value[None], (n, *value.shape))


def split(selected: Sequence[int], model: Any) -> tuple[list[int], list[int]]:
    """The selected output indices whose value comes from the input, and those from its shape only."""
    folded = [i for i in selected if shape_only(model.outputs[i])]
    if len(folded) == len(selected):  # nothing left to run: keep the model whole
        return list(selected), []
    return [i for i in selected if i not in folded], folded
