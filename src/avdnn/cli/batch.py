"""``avdnn batch``'s own flags; cli.command hands everything else to the main CLI's option parser.

    avdnn batch [--workers N] [--address auto|HOST:PORT] [--resume] [--report FILE] [--retries N]
                [--num-cpus X] [--num-gpus X] -i PATH_OR_GLOB... -vf CHAIN [output options] -o TEMPLATE

``-i`` takes every path after it up to the next option (so a shell glob works unquoted), and may
be repeated; a quoted glob is expanded by avdnn. The double-dash flags are batch's own (ffmpeg has
none), so they can never be mistaken for an ffmpeg option.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Any

from avdnn.batch.runner import batch
from avdnn.errors import InvalidArgumentError

USAGE = """usage: avdnn batch [--workers N] [--address auto|HOST:PORT] [--resume] [--report FILE] [--retries N]
                   [--num-cpus X] [--num-gpus X] -i PATH_OR_GLOB... -vf CHAIN [output options] -o TEMPLATE

One chain over many files on Ray, one output per input. TEMPLATE takes {stem}, {name}, {parent}
and {index}; the output options are the main command's (-f, -c:v, -frames:v, -y...).
  --workers N          Ray actors, each holding the chain's models (default 2)
  --address A          join the Ray cluster at A (auto or HOST:PORT); default: a local Ray for the run
  --resume             skip the inputs the ledger beside their outputs records as done by this job
  --report FILE        write the JSON report (status, frames, error and code, seconds, node per input)
  --retries N          run a file again when its worker process died, up to N times (default 3)
  --num-cpus X         CPUs per worker (default 1; fractions allowed)
  --num-gpus X         GPUs per worker (default 0; 0.5 puts two workers on one GPU)
See docs/batch.md.
"""


@dataclass
class BatchFlags:
    """The flags only ``avdnn batch`` has."""

    inputs: list[str] = field(default_factory=list)
    output: str | None = None
    workers: int = 2
    address: str | None = None
    resume: bool = False
    report: str | None = None
    retries: int = 3
    num_cpus: float = 1.0
    num_gpus: float = 0.0


_VALUE_FLAGS = {
    "--workers": ("workers", int),
    "--address": ("address", str),
    "--report": ("report", str),
    "--retries": ("retries", int),
    "--num-cpus": ("num_cpus", float),
    "--num-gpus": ("num_gpus", float),
}


def split_argv(argv: list[str]) -> tuple[BatchFlags, list[str]]:
    """Batch's flags, ``-i`` and ``-o``; and the rest (the main CLI's filter and output options)."""
    flags = BatchFlags()
    rest: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--resume":
            flags.resume = True
        elif tok in _VALUE_FLAGS or tok in ("-o", "-i"):
            if i + 1 >= len(argv):
                raise InvalidArgumentError(f"Missing argument for option '{tok.lstrip('-')}'.")
            if tok == "-i":
                while i + 1 < len(argv) and (not argv[i + 1].startswith("-") or argv[i + 1] == "-"):
                    i += 1
                    flags.inputs.append(argv[i])
            elif tok == "-o":
                i += 1
                flags.output = argv[i]
            else:
                i += 1
                name, kind = _VALUE_FLAGS[tok]
                try:
                    setattr(flags, name, kind(argv[i]))
                except ValueError:
                    raise InvalidArgumentError(f"Invalid value '{argv[i]}' for {tok}", option=tok[2:]) from None
        elif tok.startswith("--"):
            raise InvalidArgumentError(
                f"Unrecognized option '{tok}' (avdnn batch takes --workers, --address, "
                f"--resume, --report, --retries, --num-cpus, --num-gpus)"
            )
        else:
            rest.append(tok)
        i += 1
    if not flags.inputs:
        raise InvalidArgumentError("No input specified: use -i PATH_OR_GLOB... (see docs/batch.md)")
    if flags.output is None:
        raise InvalidArgumentError("No output template specified: use -o TEMPLATE, e.g. -o 'out/{stem}.mp4'")
    return flags, rest


def run_command(flags: BatchFlags, chain: str, run_options: dict[str, Any], *, stats: bool | None, level: int) -> int:
    """Run the corpus; print the summary (and each failure); 0 only when every input succeeded."""
    report = batch(
        flags.inputs,
        chain,
        output=flags.output or "",
        workers=flags.workers,
        address=flags.address,
        resume=flags.resume,
        retries=flags.retries,
        report=flags.report,
        num_cpus=flags.num_cpus,
        num_gpus=flags.num_gpus,
        progress_bar=stats if level <= logging.INFO else False,
        **run_options,
    )
    if level <= logging.ERROR:
        sys.stderr.write(report.summary() + "\n")
    failed = report.failed
    if not failed:
        return 0
    code = (failed[0].error or {}).get("code", -1)
    return (int(code) & 0xFF) or 1
