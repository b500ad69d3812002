"""Runs refused before they start, and a template's fields in plain arguments.

A service takes chains from requests: it must refuse one that does not parse (naming the filter
and option) when it is asked, not once a camera has connected. A template's fields go into a
chain as escaped option values (:func:`avdnn.graph.template.fill_fields`); into the output's own
arguments (argv words, never parsed as filter syntax) they go as they are (:func:`fill_text`).
"""

from __future__ import annotations

from collections.abc import Mapping

from avdnn.api.many import Job
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter, list_filters
from avdnn.graph.chain import takes
from avdnn.graph.lavfi import check_lavfi_filter
from avdnn.graph.parse import parse_chain, split_options
from avdnn.media.output.muxer import check_output_name
from avdnn.run.builder import RunBuilder

__all__ = ["check_chain", "check_job", "fill_text"]


def fill_text(text: str, fields: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` of ``fields`` replaced by its value (nothing else is a field)."""
    for name, value in fields.items():
        text = text.replace("{" + name + "}", value)
    return text


def check_chain(chain: str) -> None:
    """Refuse a chain that would not build: its syntax, an unknown filter, option or value, each
    error naming the filter. No model is loaded and nothing is opened."""
    avdnn_names = list_filters()
    for spec in parse_chain(chain):
        if takes(spec):
            cls = get_filter(spec.name)
            items = split_options(spec.args, cls.joins) if spec.args else []
            bind_options(cls.options, items, filter_name=spec.label)
        else:
            check_lavfi_filter(spec, avdnn_names)


def check_job(job: Job) -> None:
    """Refuse a job whose options or chain are wrong before it starts (what its run checks first),
    or whose output's muxer cannot be chosen (``""``, a name with no known extension and no ``-f``)."""
    request = job.request()
    RunBuilder(request)
    if isinstance(request.output, str):
        check_output_name(request.output, request.format)
    if request.filter_complex is None:
        check_chain(request.filters)
