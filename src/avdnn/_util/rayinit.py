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

import errno
import ipaddress
import os
import socket
import sys
from typing import Any

from avdnn._util.offline import no_telemetry
from avdnn.errors import BackendUnavailableError, InvalidArgumentError, from_errno

__all__ = ["import_ray", "is_loopback", "probe"]

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
    no_telemetry()
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError(f"this needs Ray, which is not installed: {hint}") from exc
    return ray


def probe(address: str) -> None:
    """Fail at once, with the socket's errno, when nothing listens at HOST:PORT (Ray itself retries
    a dead address for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidArgumentError(f"Ray address '{address}' is not auto or HOST:PORT", option="address")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except TimeoutError as exc:
        raise from_errno(errno.ETIMEDOUT, f"cannot reach the Ray cluster at '{address}': timed out") from exc
    except OSError as exc:
        raise from_errno(
            exc.errno or errno.ECONNREFUSED, f"cannot reach the Ray cluster at '{address}': {exc.strerror or exc}"
        ) from exc
