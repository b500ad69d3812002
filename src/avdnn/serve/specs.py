"""The JSON bodies of the service, as pydantic models: what does not fit is a 422 before anything runs.

Ids (a pipeline's name, a source's id) are short names that are safe in a file name, a URL path
and a metric label: letters, digits, ``_`` and ``-``. Argument lists are bounded in count and
length, so a request cannot make the service build an unbounded command line.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, ValidationError

from avdnn.errors import InvalidArgumentError

__all__ = ["ID", "ArgsPipeline", "Id", "PipelineBody", "PipelineSpec", "SourceSpec", "TemplatePipeline", "parse_spec"]

#: a pipeline's or a source's id
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
Id = Annotated[str, StringConstraints(pattern=ID.pattern)]
Arg = Annotated[str, StringConstraints(max_length=8192)]
#: a resource a node must have, as Ray names them (``CPU``, ``GPU``, a custom one), and its amount
ResourceName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$")]
Amount = Annotated[float, Field(ge=0, le=1e6)]


class SourceSpec(BaseModel):
    """One camera of a template pipeline: its id (the template's ``{source}``) and its input URL."""

    model_config = ConfigDict(extra="forbid")

    id: Id
    url: Annotated[str, StringConstraints(min_length=1, max_length=4096)]


class ArgsPipeline(BaseModel):
    """A pipeline given as the argv the ``avdnn`` command takes (``-i INPUT ... OUTPUT``)."""

    model_config = ConfigDict(extra="forbid")

    name: Id | None = None
    args: list[Arg] = Field(min_length=1, max_length=512)


class TemplatePipeline(BaseModel):
    """One chain for many sources: each source runs ``chain`` into its own ``output``.

    ``{source}`` in ``chain`` (in option values), ``output`` and ``input_options`` is the source's
    id, ``{node}`` the id of the node it runs on. ``resources``: what a node must have to run one of
    its sources, as Ray names them (``{"GPU": 1}``): no source goes to a node without them.
    """

    model_config = ConfigDict(extra="forbid")

    name: Id | None = None
    chain: Annotated[str, StringConstraints(max_length=65536)] = ""
    output: list[Arg] = Field(min_length=1, max_length=256)
    input_options: list[Arg] = Field(default_factory=list, max_length=256)
    sources: list[SourceSpec] = Field(default_factory=list)
    resources: dict[ResourceName, Amount] = Field(
        default_factory=dict, max_length=16, json_schema_extra={"additionalProperties": False}
    )


PipelineSpec = ArgsPipeline | TemplatePipeline


def _kind(body: Any) -> str:
    """A body with ``args`` is a command line; any other is a template (its errors say what it lacks)."""
    if isinstance(body, dict):
        return "args" if "args" in body else "template"
    return "args" if isinstance(body, ArgsPipeline) else "template"


#: the body of POST /api/pipelines: one of the two, told apart by ``args`` (so a 422 names one schema)
PipelineBody = Annotated[
    Annotated[ArgsPipeline, Tag("args")] | Annotated[TemplatePipeline, Tag("template")], Discriminator(_kind)
]


def parse_spec(raw: dict[str, Any]) -> PipelineSpec:
    """A kept or configured spec as the API would take it; its errors name the fields, never the values."""
    try:
        return ArgsPipeline(**raw) if "args" in raw else TemplatePipeline(**raw)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise InvalidArgumentError(f"not a valid pipeline spec: {where}") from None
    except TypeError as exc:
        raise InvalidArgumentError(f"not a valid pipeline spec: {exc}") from None
