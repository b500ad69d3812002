"""``NAME.N.EXT``: where a served source's run writes, so that no run writes over an earlier one's files.

A run writes its output and the files its filters write (``metadata_jsonl=file=``,
``events=file=``). When one of them is there already (an earlier run of the source: it
restarted, or the service did and restored the pipeline from ``--state``), every file of the
run moves beside its name as ``NAME.N.EXT`` (``cam.mkv`` -> ``cam.3.mkv``, ``cam.jsonl`` ->
``cam.3.jsonl``), one ``N`` for all of them: the run's files stay together, and ``N`` is above
every ``N`` any of them has used so far, so the numbering goes on across restarts of the
service and never falls back into a gap. What is not a regular file (``/dev/null``, a fifo, a
network output, ``-``) is written as it is. ``-y`` lets the source's first run replace its
files, as the command would.
"""

from __future__ import annotations

import dataclasses
import os
import re

from avdnn import api

__all__ = ["numbered", "segment"]


def numbered(path: str, n: int) -> str:
    """``path`` as ``NAME.N.EXT``."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.{n}{ext}"


def segment(job: api.Job, k: int) -> api.Job:
    """The job of run ``k`` (0: the source's first), every file it writes numbered when one of them is there."""
    out = job.output
    files = [out] if isinstance(out, str) and _local(out) else []
    files += [path for text, graph in _chains(job) for path in api.fill_fields(text, {}, graph=graph).writes]
    files = list(dict.fromkeys(p for p in files if not os.path.exists(p) or os.path.isfile(p)))
    if not any(os.path.exists(p) for p in files) or (k == 0 and job.options.get("overwrite")):
        return job
    n = 1 + max(_highest(p) for p in files)
    while any(os.path.lexists(numbered(p, n)) for p in files):
        n += 1  # named so by someone else
    return _renamed(job, {p: numbered(p, n) for p in files})


def _local(output: str) -> bool:
    return output not in ("-", "") and not output.startswith("pipe:") and not api.is_network_url(output, None)


def _chains(job: api.Job) -> list[tuple[str, bool]]:
    """The job's filter strings, each with whether it is a -filter_complex graph."""
    chains = [(job.filters, False), (job.options.get("filter_complex") or "", True)]
    streams = job.options.get("stream_options")
    if streams is not None:  # -filter:v:1 ...: another video stream's chain
        chains += [(text, False) for (name, _), text in streams.per_stream.items() if name == "filter"]
    return [(text, graph) for text, graph in chains if text]


def _highest(path: str) -> int:
    """The highest N of a ``NAME.N.EXT`` of ``path`` there is (0: none)."""
    folder, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    pattern = re.compile(re.escape(stem) + r"\.([0-9]{1,18})" + re.escape(ext) + r"\Z")
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return 0
    return max((int(m.group(1)) for f in names if (m := pattern.match(f))), default=0)


def _renamed(job: api.Job, moved: dict[str, str]) -> api.Job:
    """``job`` writing each file of ``moved`` under its new name (its output, its filters' options)."""

    def fill(text: str, graph: bool = False) -> str:
        return api.fill_fields(text, {}, place=lambda p: moved.get(p, p), graph=graph).chain if text else text

    options = job.options.copy()
    if options.get("filter_complex"):
        options["filter_complex"] = fill(options["filter_complex"] or "", graph=True)
    streams = options.get("stream_options")
    if streams is not None:
        per_stream = {key: fill(text) if key[0] == "filter" else text for key, text in streams.per_stream.items()}
        options["stream_options"] = dataclasses.replace(streams, per_stream=per_stream)
    out = job.output
    return api.Job(job.input, fill(job.filters), output=moved.get(out, out) if isinstance(out, str) else out, **options)
