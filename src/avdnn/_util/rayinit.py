"""Ray, imported and joined the way a cluster on loopback needs (``avdnn batch``, ``avdnn serve --ray``).

A node started on 127.0.0.1 (``ray.cluster_utils.Cluster`` with ``node_ip_address="127.0.0.1"``: a
test cluster, or a one-machine cluster kept off the network) listens on loopback only. A driver of
its own process joining it looks for its machine's node at the machine's own address (on Linux,
unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is set when Ray is first imported), where that node
does not listen, and gives up a minute later. So for an address on loopback that switch is set
before Ray is imported (when it is not yet). The driver's ``_node_ip_address`` is left alone:
127.0.0.1 there would miss a node that ``ray start --node-ip-address 127.0.0.1`` registered at the
machine's address (as it does while the switch is on).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import Any

from avdnn.errors import BackendUnavailableError

__all__ = ["import_ray", "is_loopback"]

#: Ray's switch, read once when Ray is imported: 0 lets a local driver's address be 127.0.0.1
_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def is_loopback(address: str | None) -> bool:
    """Whether a Ray address (``HOST:PORT``, ``ray://HOST:PORT``, ``auto``: ``RAY_ADDRESS``) is on loopback."""
    if address in (None, "auto"):
        address = os.environ.get("RAY_ADDRESS")
    if not address or address in ("auto", "local"):
        return False
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def import_ray(*, loopback: bool = False, hint: str = "pip install 'avdnn[ray]'") -> Any:
    """Ray, or :class:`~avdnn.errors.BackendUnavailableError` with ``hint``.

    ``loopback``: this process starts or joins a node on 127.0.0.1 (see the module docstring);
    a Ray imported earlier keeps the setting it was imported with."""
    if loopback and "ray" not in sys.modules:
        os.environ.setdefault(_SWITCH, "0")
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError(f"this needs Ray, which is not installed: {hint}") from exc
    return ray
