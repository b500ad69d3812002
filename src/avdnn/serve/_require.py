"""The service's own packages (FastAPI, uvicorn, prometheus_client, Swagger UI's files), checked before use."""

from __future__ import annotations

import importlib.util

from avdnn.errors import BackendUnavailableError

#: what ``avdnn[serve]`` installs, by import name
PACKAGES = ("fastapi", "uvicorn", "prometheus_client", "pydantic", "swagger_ui_bundle")
HINT = "pip install 'avdnn[serve]'"


def require() -> None:
    """Raise :class:`~avdnn.errors.BackendUnavailableError` naming the missing package and the extra."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise BackendUnavailableError(f"avdnn serve needs {', '.join(missing)}: {HINT}")
