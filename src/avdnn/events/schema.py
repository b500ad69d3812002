"""The event schema: its version, the JSON Schema file, and a validator for tests and users.

The file ``avdnn/events/data/event-v1.schema.json`` is the contract of every event avdnn
publishes; ``version`` in each event names the file. Adding a field keeps the version (readers
ignore what they do not know; the file lists it); changing or removing one makes a v2 file.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from avdnn.errors import BackendUnavailableError, InvalidDataError

#: The ``version`` of the events avdnn writes (the schema file's number).
SCHEMA_VERSION = 1
SCHEMA_FILE = f"event-v{SCHEMA_VERSION}.schema.json"


@cache
def event_schema() -> dict[str, Any]:
    """The JSON Schema of an event, as shipped in the package."""
    text = resources.files("avdnn.events").joinpath("data", SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_event(event: dict[str, Any]) -> None:
    """Raise InvalidDataError when ``event`` does not follow the schema (needs ``jsonschema``)."""
    try:
        import jsonschema
    except ImportError:
        raise BackendUnavailableError("validating events needs jsonschema: pip install 'avdnn[test]'") from None
    validator = jsonschema.Draft202012Validator(event_schema())
    errors = sorted(validator.iter_errors(event), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(the event)"
        raise InvalidDataError(f"event does not follow {SCHEMA_FILE}: {where}: {errors[0].message}")


__all__ = ["SCHEMA_FILE", "SCHEMA_VERSION", "event_schema", "validate_event"]
