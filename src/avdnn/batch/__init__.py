"""Corpus runs on Ray: one chain over many files (``avdnn batch``, :func:`avdnn.batch`).

The driver (:mod:`.runner`) plans one task per input from the output template (:mod:`.plan`),
skips what the ledger beside the outputs records as done (:mod:`.ledger`), and feeds a pool of
Ray actors (:mod:`.worker`), each holding the chain's loaded models, one file in flight per
actor; it owns the report (:mod:`.report`) and the progress display (:mod:`.progress`).
Ray is imported only when a run starts (the ``avdnn[ray]`` extra).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from avdnn.batch.report import BatchReport, FileReport
from avdnn.batch.runner import batch


class _CallableModule(types.ModuleType):
    """``avdnn.batch(...)`` is the public entry point (issue 15), and ``avdnn.batch`` is this package.

    The top-level package exposes it lazily (``avdnn.__getattr__``): the API layer below never
    imports it. Calling the package calls :func:`.runner.batch`, so ``avdnn.batch(...)`` and
    ``from avdnn.batch import batch`` are the same thing.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> BatchReport:
        return batch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["BatchReport", "FileReport", "batch"]
