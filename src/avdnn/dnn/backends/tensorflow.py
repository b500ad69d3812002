"""TensorFlow backend: frozen GraphDef ``.pb`` files and SavedModel directories, in a TF1 session.

What FFmpeg's TensorFlow backend does (reference s.3), kept here: the graph is imported
without a name prefix; tensors are named the way FFmpeg names them, by operation name
(``x``), and ``x:0`` is accepted too; an operation named ``init`` is run once after loading;
``sess_config`` takes FFmpeg's ``0x``-prefixed hex string of a serialized ConfigProto (no
``0x`` is AVERROR(EINVAL)); the input layout is NHWC, RGB, float (pixels / 255) or uint8
(bytes); ``device`` is ignored (with a warning), as in FFmpeg.

Deliberate differences: every function type loads, with every named output returned;
``input`` may be left out when the graph has exactly one placeholder, and ``output`` when it
has exactly one operation nobody consumes (FFmpeg requires both; the error lists the
candidates otherwise); SavedModel directories load with the ``serve`` tag and their serving
signature, whose keys may be used as tensor names; ``batch_size > 1`` on a graph with a
fixed batch of 1 runs item by item. Sessions are thread-safe, so async requests run
concurrently.
"""

from __future__ import annotations

import logging
import os
from typing import Any, ClassVar

import numpy as np

from avdnn.dnn.backends._common import (
    ErrorTable,
    check_model_file,
    data_type,
    map_errors,
    split_batch,
    strip_port,
    tensor_scale,
)
from avdnn.dnn.interface import (
    ALL_FUNCTION_TYPES,
    DYNAMIC,
    BackendOption,
    DNNBackendType,
    DNNColorOrder,
    DNNFunctionType,
    DNNLayout,
    ModelConfig,
    ModelIO,
    TensorInfo,
)
from avdnn.errors import (
    ExternalError,
    InvalidArgumentError,
    InvalidDataError,
    NotFoundError,
    NotSupportedError,
    OutOfMemoryError,
)

log = logging.getLogger("avdnn.dnn.tensorflow")

_NOT_OUTPUTS = {
    "NoOp",
    "Const",
    "Placeholder",
    "Assert",
    "SaveV2",
    "RestoreV2",
    "VarHandleOp",
    "VariableV2",
    "AssignVariableOp",
    "Assign",
}


def _table() -> ErrorTable:
    import tensorflow as tf
    from google.protobuf.message import DecodeError

    return [
        (DecodeError, InvalidDataError),
        (tf.errors.InvalidArgumentError, InvalidArgumentError),
        (tf.errors.NotFoundError, NotFoundError),
        (tf.errors.ResourceExhaustedError, OutOfMemoryError),
        (tf.errors.UnimplementedError, NotSupportedError),
        (tf.errors.DataLossError, InvalidDataError),
        (tf.errors.OpError, ExternalError),
        # TF's Python session checks feeds itself ("Cannot feed value of shape ...")
        (ValueError, InvalidArgumentError, "tensorflow"),
        (TypeError, InvalidArgumentError, "tensorflow"),
    ]


def _import_tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up banner is not our log
    import tensorflow as tf

    return tf


def session_config(text: str | None) -> Any:
    """FFmpeg's ``sess_config``: ``0x`` then the hex bytes of a serialized ConfigProto."""
    tf = _import_tf()
    if not text:
        return None
    if not text.lower().startswith("0x"):
        raise InvalidArgumentError("sess_config should start with '0x'", option="sess_config")
    try:
        return tf.compat.v1.ConfigProto.FromString(bytes.fromhex(text[2:]))
    except Exception as exc:
        raise InvalidArgumentError(f"sess_config is not a serialized ConfigProto: {exc}", option="sess_config") from exc


class TensorFlowBackend:
    """One TF1 session over a frozen graph or a SavedModel; ``run`` feeds one NHWC batch."""

    name: ClassVar[str] = "tensorflow"
    flag: ClassVar[DNNBackendType] = DNNBackendType.TF
    func_types: ClassVar[frozenset[DNNFunctionType]] = ALL_FUNCTION_TYPES
    options: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("sess_config", "string", None, help="config for SessionOptions"),
    )
    supports_async = True

    def __init__(self, session: Any, config: ModelConfig, feed: Any, fetches: list[Any], io: ModelIO) -> None:
        self._session = session
        self.config = config
        self._feed = feed
        self._fetches = fetches
        self._io = io
        self._item_by_item = io.input.batch == 1 and config.batch_size > 1

    @classmethod
    def load(cls, config: ModelConfig) -> TensorFlowBackend:
        """Import the graph (or SavedModel), run ``init`` if present, resolve the tensor names."""
        path = config.path
        check_model_file(path, directory_ok=True)
        tf = _import_tf()
        proto = session_config(config.options.get("sess_config"))
        if config.device:
            log.warning("tensorflow backend ignores device '%s'", config.device)
        graph = tf.Graph()
        aliases: dict[str, str] = {}
        with map_errors(f"model '{path}'", path, _table):
            session = tf.compat.v1.Session(graph=graph, config=proto)
            with graph.as_default():
                if os.path.isdir(path):
                    quiet, level = tf.get_logger(), tf.get_logger().level
                    quiet.setLevel(logging.ERROR)  # "loader.load is deprecated": it is the TF1 path we want
                    try:
                        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
                    finally:
                        quiet.setLevel(level)
                    aliases = _signature_aliases(meta)
                else:
                    graph_def = tf.compat.v1.GraphDef()
                    with open(path, "rb") as f:
                        graph_def.ParseFromString(f.read())
                    tf.import_graph_def(graph_def, name="")
                    if any(op.name == "init" for op in graph.get_operations()):
                        session.run("init")
        feed = _tensor(graph, config.input_name or _only_input(graph, aliases, config), aliases, "input", config)
        names = list(config.output_names) or _default_outputs(graph, aliases, config)
        fetches = [_tensor(graph, n, aliases, "output", config) for n in names]
        io = ModelIO((_info(feed),), tuple(_info(t) for t in fetches))
        return cls(session, config, feed, fetches, io)

    def describe(self) -> ModelIO:
        return self._io

    def _run_one(self, batch: np.ndarray) -> list[np.ndarray]:
        with map_errors(f"inference with '{self.config.path}'", self.config.path, _table):
            outs = self._session.run(self._fetches, {self._feed: batch})
        return [np.asarray(o) if np.ndim(o) else np.asarray(o).reshape(1) for o in outs]

    def run(self, batch: np.ndarray) -> list[np.ndarray]:
        """One ``Session.run`` over ``batch`` (NHWC); the named outputs."""
        if self._item_by_item:
            return split_batch(self._run_one, batch)
        return self._run_one(batch)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = None


def _signature_aliases(meta: Any) -> dict[str, str]:
    """SavedModel signature keys -> tensor names (serving_default, or the only signature)."""
    sigs = meta.signature_def
    sig = sigs.get("serving_default") or (next(iter(sigs.values())) if len(sigs) == 1 else None)
    if sig is None:
        return {}
    out = {f"in:{k}": v.name for k, v in sig.inputs.items()}
    out.update({f"out:{k}": v.name for k, v in sig.outputs.items()})
    return out


def _tensor(graph: Any, name: str, aliases: dict[str, str], kind: str, config: ModelConfig) -> Any:
    key = f"{'in' if kind == 'input' else 'out'}:{name}"
    if key in aliases:
        name = aliases[key]
    op_name = strip_port(name)
    port = name[len(op_name) + 1 :] if name != op_name else "0"
    try:
        op = graph.get_operation_by_name(op_name)
        return op.outputs[int(port)]
    except (KeyError, ValueError, IndexError) as exc:
        known = sorted(k.split(":", 1)[1] for k in aliases if k.startswith(key.split(":")[0]))
        if not known:
            ops = graph.get_operations()
            known = [o.name for o in ops if o.type == "Placeholder"] if kind == "input" else _sinks(graph)
        raise InvalidArgumentError(
            f'Could not find "{name}" in model ({kind} candidates: {", ".join(known[:20]) or "none"})',
            option=kind,
            file=config.path,
        ) from exc


def _only_input(graph: Any, aliases: dict[str, str], config: ModelConfig) -> str:
    names = [k[3:] for k in aliases if k.startswith("in:")] or [
        o.name for o in graph.get_operations() if o.type == "Placeholder"
    ]
    if len(names) == 1:
        log.debug("tensorflow: using input '%s'", names[0])
        return names[0]
    raise InvalidArgumentError(
        f"input name of the model is required (placeholders: {', '.join(names) or 'none'})",
        option="input",
        file=config.path,
    )


def _sinks(graph: Any) -> list[str]:
    consumed = {t.op.name for op in graph.get_operations() for t in op.inputs}
    return [
        op.name
        for op in graph.get_operations()
        if op.name not in consumed and op.type not in _NOT_OUTPUTS and op.outputs
    ]


def _default_outputs(graph: Any, aliases: dict[str, str], config: ModelConfig) -> list[str]:
    sig = sorted(k[4:] for k in aliases if k.startswith("out:"))
    if sig:
        return sig
    sinks = _sinks(graph)
    if len(sinks) == 1:
        log.debug("tensorflow: using output '%s'", sinks[0])
        return sinks
    raise InvalidArgumentError(
        f"output name of the model is required (candidates: {', '.join(sinks[:20])})", option="output", file=config.path
    )


def _info(tensor: Any) -> TensorInfo:
    shape = tensor.shape
    dims = (DYNAMIC,) * 4 if shape.rank is None else tuple(d if d is not None else DYNAMIC for d in shape.as_list())
    dtype = data_type(tensor.dtype.as_numpy_dtype) if tensor.dtype.is_numpy_compatible else None
    return TensorInfo(
        tensor.name, dims, dtype, tensor.dtype.name, DNNLayout.NHWC, DNNColorOrder.RGB, tensor_scale(dtype)
    )
