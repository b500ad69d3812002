"""The ``avdnn`` command line: argv in, a run, a batch or a listing out, one-line errors, exit codes."""

from __future__ import annotations

from avdnn.cli.command import main

__all__ = ["main"]
