"""The public Python API: ``run``/``open`` for one output, ``run_many``/``open_many`` for several.

The CLI, ``avdnn batch`` and ``avdnn serve`` reach a run through these names only: besides the
ones :mod:`avdnn` exports, ``probe`` (an input without an output), ``command_jobs`` (the outputs
of one command line sharing its ``-filter_complex``), ``exit_status``/``status_of``/``NO_OUTPUT``
(how a run's end reads as the process's exit status) and ``fill_fields`` (a filter-string
template's fields filled as escaped option values).
"""

from __future__ import annotations

from avdnn.api.many import Job, MultiFrameStream, OutputsFailedError, command_jobs, open_many, run_many
from avdnn.api.single import (
    FrameStream,
    RunOptions,
    StreamOptions,
    dump_input,
    keep_models,
    open,  # noqa: A004 - avdnn.open, as av.open
    open_source,
    probe,
    run,
)
from avdnn.graph.template import Filled, fill_fields
from avdnn.run.exitstatus import NO_OUTPUT, exit_status, status_of

__all__ = [
    "NO_OUTPUT",
    "Filled",
    "FrameStream",
    "Job",
    "MultiFrameStream",
    "OutputsFailedError",
    "RunOptions",
    "StreamOptions",
    "command_jobs",
    "dump_input",
    "exit_status",
    "fill_fields",
    "keep_models",
    "open",
    "open_many",
    "open_source",
    "probe",
    "run",
    "run_many",
    "status_of",
]
