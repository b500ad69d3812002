"""Nothing leaves the machine on avdnn's account: the runtimes' own phoning home turned off.

OpenVINO's Python package sends a usage event to Google Analytics when it is imported
(``openvino.tools.ovc``, through ``openvino_telemetry``, unless a consent file in the user's
home says no): it forks the importing process from a thread and opens an HTTPS connection. In
``avdnn serve`` that fork copies a process full of threads and sockets; on a closed network it
is a DNS query that goes nowhere. Both OpenVINO's converter and NNCF fall back to their own
no-op stubs when ``openvino_telemetry`` cannot be imported, so :func:`no_telemetry` makes it
unimportable for this process before avdnn imports OpenVINO (a program that imported it
already keeps it). Ray's usage statistics (sent to usage-stats.ray.io by a cluster a driver
starts) are off unless ``RAY_USAGE_STATS_ENABLED`` is set.
"""

from __future__ import annotations

import os
import sys

__all__ = ["no_telemetry"]


def no_telemetry() -> None:
    """Before OpenVINO, NNCF or Ray is imported: their usage reporting off for this process."""
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type] # None: ImportError on import
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
