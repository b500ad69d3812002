"""The public Python API: ``run``/``open`` for one output, ``run_many``/``open_many`` for several.

The CLI, ``avdnn batch`` and ``avdnn serve`` reach a run through these names only: besides the
ones :mod:`avdnn` exports, ``probe`` (an input without an output), ``command_jobs`` (the outputs
of one command line sharing its ``-filter_complex``), ``exit_status``/``status_of``/``NO_OUTPUT``
(how a run's end reads as the process's exit status) and ``fill_fields`` (a filter-string
template's fields filled as escaped option values); for a long-running service, ``OutputSet``
(outputs started and stopped one by one in one shared model scope, their accounting read live;
``OutputReopen`` reconnects a pushed output whose peer went away),
``check_job``/``check_chain`` (a run refused before it starts), ``fill_text`` (a template's fields
in plain arguments), ``JpegEncoder`` (a frame as a JPEG), ``is_network_url``, and
``Confinement``/``confine_job``/``confine_argv`` (a stranger's job kept under a media root, its
URLs on an allow-list).
"""

from __future__ import annotations

from avdnn.api.confine import (
    ALLOWED_PROTOCOLS,
    ConfinedArgv,
    Confinement,
    ConfinementError,
    confine_argv,
    confine_job,
)
from avdnn.api.many import Job, MultiFrameStream, OutputsFailedError, command_jobs, open_many, run_many
from avdnn.api.running import (
    RUN_TIME_EDGES,
    STOP_GRACE,
    InstanceReport,
    LiveRun,
    OutputReopen,
    OutputSet,
    RunningOutput,
    RunTimes,
)
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
from avdnn.api.template import check_chain, check_job, fill_text
from avdnn.graph.template import Filled, fill_fields
from avdnn.media.input.live import is_network as is_network_url
from avdnn.media.still import JpegEncoder
from avdnn.run.exitstatus import NO_OUTPUT, exit_status, status_of

__all__ = [
    "ALLOWED_PROTOCOLS",
    "NO_OUTPUT",
    "RUN_TIME_EDGES",
    "STOP_GRACE",
    "ConfinedArgv",
    "Confinement",
    "ConfinementError",
    "Filled",
    "FrameStream",
    "InstanceReport",
    "Job",
    "JpegEncoder",
    "LiveRun",
    "MultiFrameStream",
    "OutputReopen",
    "OutputSet",
    "OutputsFailedError",
    "RunOptions",
    "RunTimes",
    "RunningOutput",
    "StreamOptions",
    "check_chain",
    "check_job",
    "command_jobs",
    "confine_argv",
    "confine_job",
    "dump_input",
    "exit_status",
    "fill_fields",
    "fill_text",
    "is_network_url",
    "keep_models",
    "open",
    "open_many",
    "open_source",
    "probe",
    "run",
    "run_many",
    "status_of",
]
