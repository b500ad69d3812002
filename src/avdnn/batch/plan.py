"""The corpus plan: inputs from paths and globs, one output per input from a template, the job's hash.

Everything here runs on the driver before Ray is touched, so a bad template, two inputs that
would write one output, an output that is an input, or a glob that matches nothing fail at
once with one line, before a cluster is started. Template fields in the chain are filled as
escaped option values (:func:`avdnn.api.fill_fields`): a file name is never read as syntax.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import string
from dataclasses import dataclass
from typing import Any

from avdnn.api import fill_fields
from avdnn.errors import InvalidArgumentError, NotFoundError

#: The template fields, and what each is for an input ``/data/cams/a.mp4`` at index 3.
FIELDS = ("stem", "name", "parent", "index")  # a, a.mp4, cams, 3
#: run() keywords that change no byte of an output: left out of the job's hash.
NEUTRAL_OPTIONS = frozenset({"overwrite", "progress"})
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class FileTask:
    """One input of the corpus and where its output goes (picklable: it travels to a worker)."""

    index: int
    input: str
    output: str
    chain: str  # the job's chain with this file's template fields filled in (metadata_jsonl=file=...)
    #: the files the chain's filters write for this input (absolute; written like the output)
    sidecars: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file this input writes: the output, then the sidecars."""
        return (self.output, *self.sidecars)


def expand_inputs(patterns: str | list[str]) -> list[str]:
    """Paths in the order given, each glob expanded (sorted, ``**`` recursive), duplicates dropped."""
    items = [patterns] if isinstance(patterns, str) else list(patterns)
    if not items:
        raise InvalidArgumentError("No input specified: give at least one -i PATH_OR_GLOB")
    out: list[str] = []
    for item in items:
        if _GLOB_CHARS & set(item) and not os.path.exists(item):
            matches = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
            if not matches:
                raise NotFoundError(f"no file matches '{item}'", file=item)
            out += matches
        else:
            out.append(item)  # a missing file fails alone, with its ENOENT, like any bad input
    return list(dict.fromkeys(os.path.abspath(p) for p in out))


def fields(path: str, index: int) -> dict[str, Any]:
    """The template fields of one input."""
    name = os.path.basename(path)
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return {"stem": stem, "name": name, "parent": os.path.basename(os.path.dirname(path)), "index": index}


def check_template(template: str) -> None:
    """Refuse a template that names an unknown field or could not give one output per input."""
    if template == "-":
        raise InvalidArgumentError("a batch writes one output per input: '-' (stdout) cannot be the output template")
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise InvalidArgumentError(f"output template '{template}': {exc}") from exc
    unknown = sorted(n for n in names if n.split(".")[0].split("[")[0] not in FIELDS)
    if unknown:
        raise InvalidArgumentError(
            f"output template '{template}': unknown field {{{unknown[0]}}}; "
            f"the fields are {', '.join('{' + f + '}' for f in FIELDS)}"
        )


def plan(inputs: list[str], template: str, chain: str) -> list[FileTask]:
    """One task per input, its fields filled in the output template and the chain.

    Every file written (outputs and the files the chain's filters write) must be distinct, and
    none may be an input (ffmpeg: "Output ... same as Input"): each is an error naming both.
    """
    check_template(template)
    tasks: list[FileTask] = []
    sources = {os.path.realpath(p): p for p in inputs}
    seen: dict[str, str] = {}
    for i, path in enumerate(inputs):
        values = fields(path, i)
        out = os.path.abspath(template.format(**values))
        filled = fill_fields(chain, values, place=os.path.abspath)
        task = FileTask(i, path, out, filled.chain, filled.writes)
        for written in task.files:
            key = os.path.realpath(written)
            if key in sources:
                raise InvalidArgumentError(
                    f"Output '{written}' same as Input '{sources[key]}': a batch never writes over an input",
                    file=written,
                )
            if key in seen:
                raise InvalidArgumentError(
                    f"inputs '{seen[key]}' and '{path}' would both write '{written}': "
                    "put {name}, {parent} or {index} in the output template and in the chain's file names"
                    if seen[key] != path
                    else f"input '{path}' would write '{written}' twice",
                    file=written,
                )
            seen[key] = path
        tasks.append(task)
    return tasks


def job_hash(chain: str, run_options: dict[str, Any]) -> str:
    """What makes two runs the same job: the chain and every option that changes the output's bytes."""
    options = {k: v for k, v in sorted(run_options.items()) if k not in NEUTRAL_OPTIONS}
    text = json.dumps({"chain": chain, "options": options}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
