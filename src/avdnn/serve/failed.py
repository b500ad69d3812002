"""A pipeline the service could not start when it started: listed, explained, deletable.

One bad ``--state`` file (broken JSON, an id that is not a pipeline id, a spec that no longer
parses) or a kept spec that now fails its check (a model gone, a filter renamed) never stops the
service from starting, and never hides: it is a ``failed`` pipeline with its cause in the list and
``GET /api/pipelines/ID``, counted in ``/metrics`` and ``/readyz``, and ``DELETE`` removes it and
its state file. Nothing runs for it; its file is left as it is until then, so a fix and a restart
bring it back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avdnn._util.redact import redact_text
from avdnn.serve.errors import UnknownError
from avdnn.serve.pipeline import shown_spec
from avdnn.serve.placed import PlacedSource
from avdnn.serve.specs import ArgsPipeline, PipelineSpec

__all__ = ["FailedPipeline"]


class FailedPipeline:
    """Pipeline ``pid``, not started: ``cause`` says why; ``path`` is its state file (None: none)."""

    state = "failed"

    def __init__(self, pid: str, cause: str, *, spec: PipelineSpec | None = None, path: Path | None = None) -> None:
        self.id = pid
        self.cause = redact_text(cause)
        self.spec = spec
        self.path = path

    @property
    def kind(self) -> str:
        if self.spec is None:
            return "unknown"
        return "args" if isinstance(self.spec, ArgsPipeline) else "template"

    def source(self, sid: str) -> PlacedSource:
        raise UnknownError(f"pipeline '{self.id}' failed at start: it has no source '{sid}'")

    def current(self) -> list[PlacedSource]:
        return []

    def lingering(self) -> list[str]:
        return []

    def shown(self) -> dict[str, Any] | None:
        return None if self.spec is None else shown_spec(self.spec)

    def status(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "cause": self.cause,
            "traceback": None,
            "sources": [],
            "departed_earlier": None,
            "left_behind": [],
            "instances": [],
            "spec": self.shown(),
        }
