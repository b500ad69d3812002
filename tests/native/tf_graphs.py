"""The same network as a TensorFlow frozen graph (``.pb``): the file FFmpeg's sr/derain lines name.

FFmpeg's native ``.model`` files were converted from such graphs (FFmpeg's
convert_from_tensorflow.py), layer for layer: Conv2D (kernel [Cout][k][k][Cin] -> TF's HWIO,
SAME = zero padding, SAME_CLAMP_TO_EDGE = edge padding then VALID, which for k=3 is TF's
SYMMETRIC pad of 1), the activation, and DepthToSpace (both TensorFlow's DCR order). Only
those layers are converted: the ESPCN and derain shapes the tests use.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from builders import Built

from avdnn.dnn.native import Conv2D, DepthToSpace
from avdnn.dnn.native.layerbase import NONE, RELU, SAME, SAME_CLAMP_TO_EDGE, SIGMOID, TANH, VALID


def save_pb(built: Built, folder: str | os.PathLike[str], name: str | None = None) -> Path:
    """Write ``built`` as a frozen GraphDef with input ``x`` [1,?,?,cin] and output ``y``."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        t = tf.compat.v1.placeholder(tf.float32, [1, None, None, built.cin], name="x")
        layers = built.nf.layers
        for i, layer in enumerate(layers):
            last = i == len(layers) - 1
            if isinstance(layer, Conv2D):
                k = layer.kernel.shape[1]
                w = tf.constant(np.ascontiguousarray(layer.kernel.transpose(1, 2, 3, 0)))
                if layer.padding == SAME_CLAMP_TO_EDGE:
                    assert k == 3, "edge padding converts to SYMMETRIC only for 3x3 kernels"
                    t = tf.pad(t, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="SYMMETRIC")
                    pad = "VALID"
                else:
                    pad = {SAME: "SAME", VALID: "VALID"}[layer.padding]
                t = tf.nn.conv2d(t, w, strides=1, padding=pad, dilations=layer.dilation)
                if layer.bias is not None:
                    t = tf.nn.bias_add(t, tf.constant(layer.bias))
                act = {RELU: tf.nn.relu, TANH: tf.tanh, SIGMOID: tf.sigmoid, NONE: tf.identity}[layer.activation]
                t = act(t, name="y" if last else None)
            elif isinstance(layer, DepthToSpace):
                t = tf.nn.depth_to_space(t, layer.block_size, name="y" if last else None)
            else:
                raise NotImplementedError(type(layer).__name__)
    path = Path(folder) / f"{name or built.name}.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path
