"""The corpus plan: inputs from paths and globs, one output per input from a template, the job's hash.

Everything here runs on the driver before Ray is touched, so a bad template, two inputs that
would write one output, or a glob that matches nothing fail at once with one line, before a
cluster is started.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import string
from dataclasses import dataclass
from typing import Any

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


def fill_chain(chain: str, values: dict[str, Any]) -> str:
    """The chain with ``{stem}``-style fields replaced (literal tokens only: filter strings keep other braces)."""
    for key in FIELDS:
        chain = chain.replace("{" + key + "}", str(values[key]))
    return chain


def plan(inputs: list[str], template: str, chain: str) -> list[FileTask]:
    """One task per input; two inputs naming the same output is an error naming both."""
    check_template(template)
    tasks: list[FileTask] = []
    seen: dict[str, str] = {}
    for i, path in enumerate(inputs):
        values = fields(path, i)
        out = os.path.abspath(template.format(**values))
        if out in seen:
            raise InvalidArgumentError(
                f"inputs '{seen[out]}' and '{path}' would both write '{out}': "
                "put {name}, {parent} or {index} in the output template"
            )
        if out == path:
            raise InvalidArgumentError(f"output '{out}' is its own input", file=out)
        seen[out] = path
        tasks.append(FileTask(i, path, out, fill_chain(chain, values)))
    return tasks


def job_hash(chain: str, run_options: dict[str, Any]) -> str:
    """What makes two runs the same job: the chain and every option that changes the output's bytes."""
    options = {k: v for k, v in sorted(run_options.items()) if k not in NEUTRAL_OPTIONS}
    text = json.dumps({"chain": chain, "options": options}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def partial_name(output: str, pid: int) -> str:
    """The temporary name an output is written under, in its final directory.

    Hidden, carrying the writer's pid (two attempts never share one), and ending with the
    output's own extension so that the muxer guessed from the name is the final one's.
    """
    head, name = os.path.split(output)
    stem, dot, ext = name.rpartition(".")
    base, suffix = (stem, dot + ext) if stem else (name, "")
    return os.path.join(head, f".{base}.{pid}.partial{suffix}")


def stale_partials(output: str) -> list[str]:
    """Temporary files that earlier attempts at ``output`` left (a worker killed mid-file)."""
    head, name = os.path.split(output)
    stem, dot, ext = name.rpartition(".")
    base, suffix = (stem, dot + ext) if stem else (name, "")
    return glob.glob(os.path.join(glob.escape(head), f".{glob.escape(base)}.*.partial{glob.escape(suffix)}"))
