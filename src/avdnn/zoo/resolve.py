"""``model=zoo:NAME``: turn a zoo reference into the filter's options.

A reference is ``zoo:NAME`` or ``zoo/NAME``, optionally followed by ``?key=value&key=value``
choices the entry declares (``zoo:multistyle26?style=7``). In a filter string ``:`` separates
options, so ``zoo:NAME`` must be escaped there as FFmpeg requires for every colon in a value
(``model=zoo\\:blazeface`` at option level, ``model='zoo\\:blazeface'`` inside -vf); ``zoo/NAME``
needs no escaping and means the same. A file path is never taken for a reference: a value that
starts with ``zoo/`` and names no zoo entry is an error naming the entries (use ``./zoo/...`` for
a file).

Resolution fills, for options the user left at their default: ``model`` (the file inside the
installed package, or its one-time export), ``dnn_backend``, ``input``/``output``, ``model_type``,
``anchors``, ``labels`` (a path or the list itself), pre-processing (``mean``/``scale``,
``letterbox``) and the entry's other defaults. An option the user gave keeps the user's value,
also when it equals the option's default (bound options record which ones were given).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from avdnn.errors import InvalidArgumentError, NotFoundError, did_you_mean
from avdnn.zoo.export import exported
from avdnn.zoo.labels import avdnn_data_file
from avdnn.zoo.spec import ModelSpec
from avdnn.zoo.table import BY_NAME

log = logging.getLogger("avdnn.zoo")

PREFIXES = ("zoo:", "zoo/")
#: ``model=zoo:NAME`` unescaped in a filter string: the ``model`` option takes the bare ``NAME``
#: after the value ``zoo`` (FFmpeg refuses a bare value after a key, so nothing valid changes)
COLON_FORM = "zoo"


@dataclass(frozen=True)
class ZooRef:
    """A resolved reference: the entry, the text the user wrote and the chosen params."""

    spec: ModelSpec
    text: str
    params: Mapping[str, str]


def is_zoo_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIXES)


def get_spec(name: str) -> ModelSpec:
    """The zoo entry ``name``; InvalidArgumentError naming the entries (and the closest) otherwise."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise InvalidArgumentError(
            f"zoo has no model '{name}'{did_you_mean(name, BY_NAME)}; "
            f"models: {', '.join(BY_NAME)} (avdnn models lists them)",
            option="model",
        )
    return spec


def parse_ref(text: str) -> ZooRef:
    """``zoo:NAME?k=v&k2=v2`` -> the entry and its params (defaults filled, unknown keys refused)."""
    body = text[len("zoo:") :]
    name, _, query = body.partition("?")
    spec = get_spec(name.strip())
    params = dict(spec.params)
    for pair in filter(None, query.split("&")):
        key, sep, value = pair.partition("=")
        if not sep or key not in spec.params:
            allowed = ", ".join(spec.params) or "none"
            raise InvalidArgumentError(
                f"zoo:{spec.name}: '{pair}' is not a choice of this model (choices: {allowed})", option="model"
            )
        params[key] = value
    return ZooRef(spec, text, params)


def model_file(spec: ModelSpec, backend: str) -> str:
    """The file ``backend`` loads for ``spec``: the shipped one or its export.

    Raises:
        NotFoundError: the package is not installed; the one-line message is the pip command.
        BackendUnavailableError: the file needs a one-time export and torch is missing.
    """
    source = spec.source_file()
    if source is None:
        raise NotFoundError(
            f"zoo:{spec.name} needs the {spec.package.dist} package: {spec.package.pip}", option="model"
        )
    if spec.export:
        return exported(spec, source, backend)
    return source


def labels_of(spec: ModelSpec) -> str | tuple[str, ...] | None:
    """The entry's labels: a file path (package or avdnn data) or the list itself."""
    if spec.labels is None or isinstance(spec.labels, tuple):
        return spec.labels
    if spec.labels.startswith("avdnn:"):
        return avdnn_data_file(spec.labels[len("avdnn:") :])
    path = spec.package.file(spec.labels)
    if path is None:
        raise NotFoundError(f"zoo:{spec.name}: labels {spec.labels} missing; {spec.package.pip}", option="labels")
    return path


def style_weights(text: str) -> str:
    """multistyle26's ``style``: ``7`` (one style) or ``3+12`` (an even blend), as extra_inputs text."""
    weights = np.zeros(26, np.float32)
    try:
        picks = [int(p) for p in text.split("+")]
    except ValueError:
        picks = []
    if not picks or any(not 0 <= p < 26 for p in picks):
        raise InvalidArgumentError(
            f"zoo:multistyle26: style '{text}' must be 0..25 or a blend like 3+12", option="model"
        )
    for p in picks:
        weights[p] += 1.0 / len(picks)
    return "style_weights=" + "|".join(f"{w:g}" for w in weights)


def param_options(ref: ZooRef) -> dict[str, str]:
    """Filter options (as text) that the entry's params map to."""
    out: dict[str, str] = {}
    if "style" in ref.params:
        out["extra_inputs"] = style_weights(ref.params["style"])
    return out


def apply(
    values: dict[str, Any], options: Sequence[Any], *, filter_name: str, backend_name: Any = None
) -> tuple[dict[str, Any], ZooRef | None]:
    """The filter's bound option values with a zoo reference in ``model`` resolved.

    ``options`` are the filter's option rows (:class:`avdnn.filters.options.Option`): the zoo's
    defaults are parsed by them, as if the user had typed them. ``backend_name`` maps a bound
    ``dnn_backend`` value to a backend name. Values that are not a zoo reference pass as they are.
    """
    text = values.get("model")
    if not isinstance(text, str) or not is_zoo_ref(text):
        return values, None
    ref = parse_ref(text)
    spec = ref.spec
    if filter_name not in spec.filters:
        raise InvalidArgumentError(
            f"zoo:{spec.name} is a {spec.task} model for {', '.join(spec.filters)}, not {filter_name}", option="model"
        )
    rows = {o.name: o for o in options}
    out = dict(values)
    # options the user gave win; without that record (a plain dict), a default value counts as unset
    given = getattr(values, "given", None)

    def unset(key: str) -> bool:
        row = rows.get(key)
        return key not in given if given is not None else out.get(key) == row.default if row else False

    # the backend first: the entry's defaults may differ per backend (the SSD's cut on OpenVINO)
    chosen = spec.backend if unset("dnn_backend") or not backend_name else backend_name(out["dnn_backend"])
    defaults = {**spec.options, **spec.backend_options.get(chosen, {}), **param_options(ref)}
    for key, raw in defaults.items():
        row = rows.get(key)
        if row is not None and unset(key):
            out[key] = row.parse(raw)
    if "labels" in rows and out.get("labels") is None:
        out["labels"] = labels_of(spec)
    backend = backend_name(out["dnn_backend"]) if backend_name and "dnn_backend" in out else spec.backend
    if backend not in spec.backends:
        log.warning("zoo:%s is made for %s; trying dnn_backend=%s", spec.name, "/".join(spec.backends), backend)
    out["model"] = model_file(spec, backend)
    return out, ref


__all__ = [
    "COLON_FORM",
    "PREFIXES",
    "ZooRef",
    "apply",
    "get_spec",
    "is_zoo_ref",
    "labels_of",
    "model_file",
    "param_options",
    "parse_ref",
    "style_weights",
]
