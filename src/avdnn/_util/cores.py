"""The cores this process may run on: what avdnn's defaults for requests and threads divide."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """CPUs in this process's affinity mask (``taskset``, cgroup cpusets), else the machine's count.

    ``os.cpu_count()`` counts the machine; a container or ``taskset -c 0,1`` may give the
    process fewer, and sizing thread pools by the machine then oversubscribes them.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)
