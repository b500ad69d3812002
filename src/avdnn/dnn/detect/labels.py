"""Labels files, read with the rules of FFmpeg's dnn_detect/dnn_classify (reference s.4.5).

FFmpeg reads with ``fgets(buf, 256)``: a line is taken in chunks of at most 255 bytes, cut at
the first NUL (``strlen``), stripped of trailing ``\\n``, ``\\r`` and spaces; empty results are
skipped (which shifts the ids of later lines); a label of 64 bytes or more, or a file that
cannot be opened, is AVERROR(EINVAL). An id with no line gets its decimal number as label.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence

import numpy as np

from avdnn.errors import AVERROR, InvalidArgumentError
from avdnn.media.detections import LABEL_MAX_SIZE

#: fgets(buf, 256, f) returns at most 255 bytes per call.
_FGETS_CHUNK = 255


def parse_labels(data: bytes, *, path: str | None = None) -> tuple[str, ...]:
    """The labels in ``data`` (a labels file's bytes), by FFmpeg's rules."""
    labels: list[str] = []
    parts = data.split(b"\n")  # fgets ends a line at \n only; a lone \r stays inside it
    lines = [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    for line in lines:
        for start in range(0, len(line), _FGETS_CHUNK):
            chunk = line[start : start + _FGETS_CHUNK].split(b"\0", 1)[0]
            chunk = chunk.rstrip(b"\n\r ")
            if not chunk:
                continue
            if len(chunk) >= LABEL_MAX_SIZE:
                raise InvalidArgumentError(
                    f"label {chunk.decode('utf-8', 'replace')} too long: expected at most {LABEL_MAX_SIZE - 1} "
                    f"bytes, got {len(chunk)}",
                    code=AVERROR(errno.EINVAL),
                    file=path,
                )
            labels.append(chunk.decode("utf-8", errors="replace"))
    return tuple(labels)


def read_labels(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Read a labels file as FFmpeg does.

    Raises:
        InvalidArgumentError: the file cannot be opened (FFmpeg's code is AVERROR(EINVAL) here, not
            ENOENT; the message still says why) or a label is 64 bytes or longer.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as exc:
        why = exc.strerror or os.strerror(exc.errno or errno.EIO)
        raise InvalidArgumentError(f"failed to open file {name}: {why}", code=AVERROR(errno.EINVAL), file=name) from exc
    return parse_labels(data, path=name)


def label_names(ids: np.ndarray | Sequence[int], labels: Sequence[str] | None) -> tuple[str, ...]:
    """The label of each class id: ``labels[id]`` when it exists, else the decimal id (FFmpeg's %d)."""
    arr = np.asarray(ids, dtype=np.int64).reshape(-1)
    if not labels:
        return tuple(str(i) for i in arr.tolist())
    table = np.asarray([*labels, ""], dtype=object)
    ok = (arr >= 0) & (arr < len(labels))
    names = table[np.where(ok, arr, len(labels))]
    if not ok.all():
        bad = np.flatnonzero(~ok)
        names[bad] = [str(i) for i in arr[bad].tolist()]
    return tuple(names.tolist())


__all__ = ["label_names", "parse_labels", "read_labels"]
