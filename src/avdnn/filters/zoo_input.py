"""What a ``model=zoo:NAME`` entry asks of the DNN filter running it: options, pixel format, padding.

The entry is resolved before anything reads the options (:func:`resolve`), so every DNN filter
takes zoo models alike. An entry may also name the pixel format its model wants (the filter
then declares it, and the graph's format negotiation converts before the filter, as
libavfilter's would) and an edge padding for valid-convolution models (:func:`pad_edges`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from avdnn.dnn import backend_class
from avdnn.errors import AvdnnError, InvalidArgumentError
from avdnn.filters.options import Option
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import lookup
from avdnn.zoo.resolve import ZooRef, apply, is_zoo_ref


def resolve(
    values: dict[str, Any], options: Sequence[Option], *, filter_name: str, label: str | None
) -> tuple[dict[str, Any], ZooRef | None]:
    """``values`` with ``model=zoo:NAME`` resolved (:func:`avdnn.zoo.resolve.apply`) and the entry."""
    if not is_zoo_ref(values.get("model")):
        return values, None
    try:
        return apply(
            values, options, filter_name=filter_name, backend_name=lambda v: backend_class(v, check_runtime=False).name
        )
    except AvdnnError as exc:
        exc.with_context(filter=label or filter_name)
        raise


def pad_edges(frame: Frame, pad: int) -> Frame:
    """``frame`` with its edge pixels repeated ``pad`` times on every side (fillborders=mode=smear).

    For valid-convolution models (waifu2x upconv_7 loses 7 px per side): numpy's edge mode per
    plane; a chroma plane gets ``pad`` shifted by its subsampling (which must divide it).
    """
    spec = lookup(frame.format)
    planes = []
    for pspec, plane in zip(spec.planes, frame.planes, strict=True):
        px, py = pad >> pspec.log2_w, pad >> pspec.log2_h
        if px << pspec.log2_w != pad or py << pspec.log2_h != pad:
            raise InvalidArgumentError(f"cannot pad {frame.format} frames by {pad} px (chroma subsampling)")
        widths = [(py, py), (px, px)] + [(0, 0)] * (plane.ndim - 2)
        planes.append(np.pad(plane, widths, mode="edge"))
    return frame.with_planes(planes)
