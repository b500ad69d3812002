"""The public Python API: ``run``/``open`` for one output, ``run_many``/``open_many`` for several.

The CLI, ``avdnn batch`` and ``avdnn serve`` reach a run through these names only
(``fill_fields``: a filter-string template's fields filled as escaped option values).
"""

from __future__ import annotations

from avdnn.api.many import Job, MultiFrameStream, OutputsFailedError, open_many, run_many
from avdnn.api.single import (
    FrameStream,
    RunOptions,
    StreamOptions,
    dump_input,
    keep_models,
    open,  # noqa: A004 - avdnn.open, as av.open
    open_source,
    run,
)
from avdnn.graph.template import Filled, fill_fields

__all__ = [
    "Filled",
    "FrameStream",
    "Job",
    "MultiFrameStream",
    "OutputsFailedError",
    "RunOptions",
    "StreamOptions",
    "dump_input",
    "fill_fields",
    "keep_models",
    "open",
    "open_many",
    "open_source",
    "run",
    "run_many",
]
