"""A loaded native-format model: describe its tensors, infer shapes, run it on numpy arrays.

Runs exactly like FFmpeg 5.1's native backend (every layer in file order, float32 NHWC), with
its crashes and out-of-bounds reads turned into errors. Two differences by design:

* Shapes are inferred symbolically (``-1`` = set by the frame) instead of by FFmpeg's dry run
  on an uninitialised buffer, so a FloorMod by a tensor no longer crashes at configuration.
* A batch axis ``N > 1`` runs every image independently and loop-free (FFmpeg only ever feeds
  N = 1; its conv/pool/dense would read only the first image). Models that pad along N cannot
  be batched that way and say so.

``conv2d_threads`` is accepted for FFmpeg compatibility and ignored: numpy's vectorised ops
(and whatever BLAS/threading numpy is built with) decide the parallelism, and FFmpeg's threads
never changed a value anyway.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from avdnn.dnn.native.format import DT_FLOAT, IO_INPUT, IO_OUTPUT, NativeFile, Operand, load, parse
from avdnn.dnn.native.layerbase import Dims
from avdnn.dnn.native.layers import MirrorPad
from avdnn.errors import AvdnnError, InvalidArgumentError, InvalidDataError, NotSupportedError


@dataclass(frozen=True)
class TensorDesc:
    """A model input or output: dims N, H, W, C with -1 where the frame decides."""

    name: str
    index: int
    dims: Dims
    dtype: str = "float32"
    layout: str = "NHWC"


class NativeModel:
    """FFmpeg's native DNN model, executed with numpy."""

    def __init__(self, nf: NativeFile, *, path: str | None = None, conv2d_threads: int = 0) -> None:
        self.file = nf
        self.path = path
        #: FFmpeg's ``conv2d_threads`` backend option; accepted, numpy decides threading.
        self.conv2d_threads = int(conv2d_threads)
        self.inputs: tuple[TensorDesc, ...] = tuple(
            TensorDesc(op.name, op.index, op.dims, _dtype_name(op.dtype))
            for op in nf.operands
            if op.io_type == IO_INPUT
        )
        try:
            dims = self._infer({op.index: op.dims for op in nf.operands if op.io_type == IO_INPUT})
        except AvdnnError as exc:
            raise InvalidDataError(f"native model is inconsistent: {exc.message}", file=path) from exc
        self.outputs: tuple[TensorDesc, ...] = tuple(
            TensorDesc(op.name, op.index, dims.get(op.index, op.dims)) for op in nf.operands if op.io_type == IO_OUTPUT
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, conv2d_threads: int = 0) -> NativeModel:
        """Read a ``.model`` file (errors: NotFoundError, InvalidDataError)."""
        return cls(load(path), path=os.fspath(path), conv2d_threads=conv2d_threads)

    @classmethod
    def from_bytes(cls, data: bytes, *, conv2d_threads: int = 0) -> NativeModel:
        return cls(parse(data), conv2d_threads=conv2d_threads)

    def operand(self, name: str) -> Operand:
        """FFmpeg's lookup: exact, case-sensitive name, the lowest slot wins."""
        for op in self.file.operands:
            if op.name == name:
                return op
        raise InvalidArgumentError(f'Could not find "{name}" in model', file=self.path)

    def _input_operand(self, name: str) -> Operand:
        op = self.operand(name)
        if op.io_type != IO_INPUT:
            raise InvalidArgumentError(f'Found "{name}" in model, but it is not input node', file=self.path)
        if op.dtype != DT_FLOAT:
            raise NotSupportedError(
                f"input '{name}': data type rather than DNN_FLOAT is not implemented", file=self.path
            )
        return op

    def _infer(self, dims: dict[int, Dims]) -> dict[int, Dims]:
        """Operand dims after every layer, from the dims of the fed operands (no maths run)."""
        dims = dict(dims)
        for i, layer in enumerate(self.file.layers):
            try:
                ins = [dims[idx] for idx in layer.inputs()]
            except KeyError as exc:
                raise InvalidArgumentError(
                    f"layer {i} reads operand {exc.args[0]}, which is neither fed nor written by an earlier layer",
                    file=self.path,
                ) from None
            dims[layer.output] = layer.output_dims(*ins)  # type: ignore[attr-defined]
        return dims

    def output_dims(
        self,
        input_dims: Mapping[str, Sequence[int]],
        outputs: Sequence[str] | None = None,
    ) -> dict[str, Dims]:
        """Output dims for the given input dims (-1 allowed), without running the model."""
        fed = {self._input_operand(name).index: tuple(d) for name, d in input_dims.items()}
        dims = self._infer(fed)  # type: ignore[arg-type]
        names = list(outputs) if outputs is not None else [t.name for t in self.outputs]
        out = {}
        for name in names:
            op = self.operand(name)
            if op.index not in dims:
                raise InvalidArgumentError(f"output '{name}' is not produced from the given inputs", file=self.path)
            out[name] = dims[op.index]
        return out

    def _feed(self, name: str, value: np.ndarray) -> tuple[int, np.ndarray]:
        op = self._input_operand(name)
        x = np.asarray(value)
        if x.ndim != 4 or not np.issubdtype(x.dtype, np.floating):
            raise InvalidArgumentError(
                f"input '{name}' must be a 4-D NHWC float array, got shape {list(x.shape)} {x.dtype}", file=self.path
            )
        _, mh, mw, mc = op.dims
        n, h, w, c = x.shape
        for what, want, got in (("height", mh, h), ("width", mw, w), ("channel", mc, c)):
            if want != -1 and want != got:
                raise InvalidArgumentError(
                    f"input '{name}': the model requires {what} {want} but got {got}", file=self.path
                )
        if n > 1 and any(isinstance(ly, MirrorPad) and any(ly.paddings[0]) for ly in self.file.layers):
            raise NotSupportedError(
                f"this model pads along N, so it cannot run a batch of {n} images; run them one at a time",
                file=self.path,
            )
        return op.index, np.ascontiguousarray(x, dtype=np.float32)

    def run(
        self,
        inputs: Mapping[str, np.ndarray],
        outputs: Sequence[str] | None = None,
    ) -> dict[str, np.ndarray]:
        """Run every layer on ``inputs`` (name -> NHWC float array, cast to float32) and return ``outputs``.

        ``outputs`` defaults to the operands the file marks as outputs (io type 2); any operand
        name works, as in FFmpeg (naming the input gives it back unchanged).
        """
        fed = dict(self._feed(name, value) for name, value in inputs.items())
        shapes = {idx: x.shape for idx, x in fed.items()}
        self._infer(shapes)  # shape and consistency errors before any maths
        values = dict(fed)
        for layer in self.file.layers:
            try:
                values[layer.output] = layer.forward(*(values[idx] for idx in layer.inputs()))  # type: ignore
            except AvdnnError as exc:  # shapes were checked above: anything else is a bug, kept as raised
                raise exc.with_context(file=self.path) from None
        names = list(outputs) if outputs is not None else [t.name for t in self.outputs]
        result = {}
        for name in names:
            op = self.operand(name)
            if op.index not in values:
                raise InvalidArgumentError(f"output '{name}' is not produced from the given inputs", file=self.path)
            result[name] = values[op.index]
        return result


def _dtype_name(dtype: int) -> str:
    return {1: "float32", 4: "uint8"}.get(dtype, f"unknown({dtype})")


__all__ = ["NativeModel", "TensorDesc"]
