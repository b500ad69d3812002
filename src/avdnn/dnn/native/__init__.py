"""FFmpeg's removed "native" DNN backend: its model file format and its layers, in numpy.

FFmpeg 5.1 shipped a small CPU backend (``dnn_backend=native``) that ran ``.model`` files
converted from TensorFlow graphs; FFmpeg 6.0 removed it. This package reads and writes that
format (:mod:`.format`) and runs its eight layer types (:mod:`.layers`) with FFmpeg's exact
float32 arithmetic, so the same model gives MD5-identical frames (:class:`NativeModel`).
It depends on numpy only; the engine reaches it through a thin backend adapter.
"""

from __future__ import annotations

from avdnn.dnn.native.format import NativeFile, Operand, load, parse, save, serialize
from avdnn.dnn.native.layers import (
    LAYER_TYPES,
    AvgPool,
    Conv2D,
    Dense,
    DepthToSpace,
    Layer,
    MathBinary,
    MathUnary,
    Maximum,
    MirrorPad,
)
from avdnn.dnn.native.model import NativeModel, TensorDesc

__all__ = [
    "LAYER_TYPES",
    "AvgPool",
    "Conv2D",
    "Dense",
    "DepthToSpace",
    "Layer",
    "MathBinary",
    "MathUnary",
    "Maximum",
    "MirrorPad",
    "NativeFile",
    "NativeModel",
    "Operand",
    "TensorDesc",
    "load",
    "parse",
    "save",
    "serialize",
]
