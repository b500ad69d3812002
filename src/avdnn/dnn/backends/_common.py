"""What the runtime backends share: error mapping at the seam, tensor naming, layouts, pools.

Nothing here imports a runtime. Each backend module passes its own table of foreign
exception types (looked up lazily, when an error actually happens) to :func:`map_errors`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Generic, TypeVar

import numpy as np

from avdnn.dnn.interface import (
    DYNAMIC,
    BackendOption,
    DNNDataType,
    DNNFunctionType,
    DNNLayout,
    DoneCallback,
    ModelConfig,
    TensorInfo,
)
from avdnn.errors import AvdnnError, InvalidArgumentError, NotFoundError, NotSupportedError, OutOfMemoryError

#: One row: a runtime's own exception type, avdnn's error for it and, for built-in types the
#: runtime shares with everyone (ValueError, RuntimeError), the package whose code must have
#: raised it (a ValueError from avdnn's own code is a bug, never the runtime's EINVAL).
ErrorRow = tuple[type[BaseException], type[AvdnnError]] | tuple[type[BaseException], type[AvdnnError], str]
ErrorTable = Sequence[ErrorRow]
T = TypeVar("T")


def _no_table() -> ErrorTable:
    return ()


@contextmanager
def map_errors(what: str, model: str, table: Callable[[], ErrorTable] = _no_table) -> Iterator[None]:
    """Translate a runtime's own exceptions into avdnn's tree, most specific first, ``from exc``.

    ``table()`` is called only when an exception arrives, so the runtime's exception types
    are imported only then. Anything the table does not name (a bug in avdnn, a
    KeyboardInterrupt) passes through untouched, with its type and traceback.
    """
    try:
        yield
    except AvdnnError:
        raise
    except Exception as exc:
        ours = mapped(exc, (*table(), (MemoryError, OutOfMemoryError)))
        if ours is None:
            raise
        raise ours(f"{what}: {_first_lines(exc)}", file=model) from exc


def mapped(exc: BaseException, table: ErrorTable) -> type[AvdnnError] | None:
    """The avdnn class of the first row ``exc`` matches (type, and origin where the row names one)."""
    for row in table:
        if isinstance(exc, row[0]) and (len(row) == 2 or raised_in(exc, row[2])):
            return row[1]
    return None


def raised_in(exc: BaseException, package: str) -> bool:
    """Whether the innermost Python frame of ``exc``'s traceback belongs to ``package``."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = str(tb.tb_frame.f_globals.get("__name__", ""))
    return name == package or name.startswith(package + ".")


def _first_lines(exc: BaseException, limit: int = 600) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "..."


#: OpenVINO's ``scale``/``mean`` options (FFmpeg's dnn_openvino), also the tflite backend's
SCALE_MEAN_OPTIONS = (
    BackendOption(
        "scale",
        "float",
        0.0,
        -(2**31),
        2**31 - 1,
        "Add scale preprocess operation. Divide each element of input by specified value.",
    ),
    BackendOption(
        "mean",
        "float",
        0.0,
        -(2**31),
        2**31 - 1,
        "Add mean preprocess operation. Subtract specified value from each element of input.",
    ),
)

_stderr_lock = threading.Lock()


@contextmanager
def quiet_stderr(active: bool) -> Iterator[None]:
    """Silence file descriptor 2 while a runtime's C++ code prints what no Python option turns off
    (LiteRT's "Created TensorFlow Lite XNNPACK delegate"); a no-op when ``active`` is False."""
    if not active:
        yield
        return
    with _stderr_lock:
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(devnull)


def check_model_file(path: str, *, directory_ok: bool = False) -> None:
    """FFmpeg's load failure for a missing model, as AVERROR(ENOENT) before any runtime runs."""
    if os.path.isfile(path) or (directory_ok and os.path.isdir(path)):
        return
    raise NotFoundError(f"model '{path}': No such file or directory", file=path)


def dims_of(shape: Iterable[Any]) -> tuple[int, ...]:
    """Runtime shape -> avdnn dims: positive ints kept, anything open becomes ``-1``."""
    out = []
    for d in shape:
        try:
            v = int(d)
        except (TypeError, ValueError):
            v = DYNAMIC
        out.append(v if v > 0 else DYNAMIC)
    return tuple(out)


def guess_layout(dims: Sequence[int]) -> DNNLayout:
    """NCHW unless the tensor plainly is NHWC: last dim 1 or 3 and dim 1 neither 1 nor 3.

    FFmpeg's OpenVINO rule (``dim1 <= 3`` -> NCHW) reads a dynamic dim 1 (-1) as NCHW,
    which is wrong for the usual ``[?,?,?,3]`` image input; this rule is not fooled by it.
    """
    if len(dims) == 4 and dims[3] in (1, 3) and dims[1] not in (1, 3):
        return DNNLayout.NHWC
    return DNNLayout.NCHW


def data_type(dtype: Any) -> DNNDataType | None:
    """numpy dtype -> the io_proc type (None when io_proc cannot convert it)."""
    dt = np.dtype(dtype)
    if dt == np.float32:
        return DNNDataType.FLOAT
    if dt == np.uint8:
        return DNNDataType.UINT8
    return None


def tensor_scale(dtype: DNNDataType | None) -> float:
    """FFmpeg's DNNData.scale for a plain tensor: bytes pass (1), floats are /255 (0)."""
    return 1.0 if dtype == DNNDataType.UINT8 else 0.0


def strip_port(name: str) -> str:
    """``'x:0'`` -> ``'x'`` (TensorFlow's output-port suffix)."""
    base, sep, port = name.rpartition(":")
    return base if sep and port.isdigit() else name


def pick(
    kind: str,
    wanted: str,
    available: Sequence[str],
    config: ModelConfig,
    match: Callable[[str, str], bool] | None = None,
) -> int:
    """Index of the tensor named ``wanted``; InvalidArgumentError listing the real names."""
    same = match or (lambda a, b: a == b or strip_port(a) == strip_port(b))
    for i, name in enumerate(available):
        if same(name, wanted):
            return i
    raise InvalidArgumentError(
        f"{kind} '{wanted}' is not in the model ({kind}s: {', '.join(available) or 'none'})",
        option="input" if kind == "input" else "output",
        file=config.path,
    )


def warn_ignored_names(log: logging.Logger, backend: str, config: ModelConfig) -> None:
    """FFmpeg's torch backend: input/output names are ignored, with a warning."""
    if config.input_name:
        log.warning("%s backend does not need the input name; '%s' is ignored", backend, config.input_name)
    if config.output_names:
        log.warning(
            "%s backend does not need the output names; '%s' is ignored", backend, "&".join(config.output_names)
        )


class Pool(Generic[T]):
    """Reusable per-thread runtime objects (TFLite interpreters, OpenVINO requests).

    ``take`` hands out an idle one or makes a new one; the engine already bounds how many
    run at once (``nireq``), so the pool never grows past that.
    """

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._idle: list[T] = []
        self._busy: list[T] = []
        self._lock = threading.Lock()
        self.created = 0

    def take(self) -> T:
        with self._lock:
            if self._idle:
                obj = self._idle.pop()
                self._busy.append(obj)
                return obj
            self.created += 1
        obj = self._make()
        with self._lock:
            self._busy.append(obj)
        return obj

    def give(self, obj: T) -> None:
        with self._lock:
            self._busy = [b for b in self._busy if b is not obj]
            self._idle.append(obj)

    def busy(self) -> list[T]:
        """The objects taken and not given back (the runs in flight), for cancelling them."""
        with self._lock:
            return list(self._busy)

    @contextmanager
    def use(self) -> Iterator[T]:
        obj = self.take()
        try:
            yield obj
        finally:
            self.give(obj)

    def clear(self) -> None:
        with self._lock:
            self._idle.clear()


def split_batch(run_one: Callable[[np.ndarray], list[np.ndarray]], batch: np.ndarray) -> list[np.ndarray]:
    """Run a fixed-batch-1 model over ``batch`` item by item and stack the outputs."""
    if batch.shape[0] == 1:
        return run_one(batch)
    parts = [run_one(batch[k : k + 1]) for k in range(batch.shape[0])]
    return [np.concatenate([p[i] for p in parts]) for i in range(len(parts[0]))]


class OnceDone:
    """One started request's completion: ``done`` runs once, whoever learns the outcome first."""

    def __init__(self, done: DoneCallback) -> None:
        self._done = done
        self._lock = threading.Lock()
        self._finished = threading.Event()

    def finish(self, outputs: Sequence[np.ndarray] | None, error: BaseException | None) -> None:
        with self._lock:
            if self._finished.is_set():
                return
            self._finished.set()
        self._done(outputs, error)

    def wait(self, timeout: float) -> bool:
        return self._finished.wait(timeout)


def run_and_report(run: Any, batch: np.ndarray, done: DoneCallback) -> None:
    try:
        outputs = run(batch)
    except BaseException as exc:  # noqa: BLE001 - handed to the engine
        done(None, exc)
    else:
        done(outputs, None)


def normalised_input(info: TensorInfo, config: ModelConfig) -> tuple[TensorInfo, tuple[float, float] | None]:
    """Apply the ``mean``/``scale`` options (OpenVINO's semantics) to the input description.

    Returns the TensorInfo to report and, for dnn_processing, the (mean, scale) the backend
    applies itself to io_proc's ``v/255`` batch.
    """
    mean = float(config.options.get("mean", 0.0) or 0.0)
    scale = float(config.options.get("scale", 0.0) or 0.0)
    if mean == 0.0 and scale == 0.0:
        return info, None
    if info.dtype != DNNDataType.FLOAT:
        raise NotSupportedError(
            f"scale/mean need a float model input; {info.describe()} is not",
            option="scale" if scale else "mean",
            file=config.path,
        )
    process = config.func_type == DNNFunctionType.PROCESS_FRAME
    if scale == 0.0:
        scale = 255.0 if process else 1.0
    if process:
        return info, (mean, scale)
    return replace(info, scale=scale, mean=mean), None
