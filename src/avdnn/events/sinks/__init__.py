"""The one table of event sinks: where an ``events`` stage can publish, imported lazily.

Each row names the ``events`` option that selects the sink (``file=``, ``mqtt=``, ``webhook=``),
its class, and the module and extra it needs (``pip install 'avdnn[events]'`` for MQTT). The
``listener`` row is the in-process sink: it is not an option but what :func:`listen` attaches to
the stages built in its scope (the API and ``avdnn serve`` use it). A sink missing its library
is an error naming the pip command when the stage is built, never at the first event.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from avdnn.errors import BackendUnavailableError, InvalidArgumentError
from avdnn.events.sinks.base import Message, Sink, SinkOptions, SinkStats
from avdnn.events.sinks.local import ListenerSink, Subscription, current_listeners, listen


@dataclass(frozen=True)
class SinkSpec:
    """A row of the sink table."""

    kind: str
    target: str  # "module:Class" under avdnn.events.sinks
    description: str
    requires: str | None = None  # an importable module the sink needs
    extra: str | None = None
    option: bool = True  # selected by an events option of its name (the listener is not)

    def installed(self) -> bool:
        return self.requires is None or importlib.util.find_spec(self.requires) is not None


#: sink kind -> spec. The ``events`` filter has one option per row with ``option`` set.
SINKS: dict[str, SinkSpec] = {
    "file": SinkSpec("file", "file:FileSink", "JSON Lines file, one event per line (- for stdout)"),
    "mqtt": SinkSpec(
        "mqtt",
        "mqtt:MqttSink",
        "MQTT broker: mqtt://[user[:password]@]host[:port][/topic template]",
        requires="paho.mqtt",
        extra="events",
    ),
    "webhook": SinkSpec("webhook", "webhook:WebhookSink", "HTTP webhook: POST JSON to http(s)://host[:port]/path"),
    "listener": SinkSpec(
        "listener", "local:ListenerSink", "in-process subscription (avdnn.events.listen)", option=False
    ),
}


def register_sink(spec: SinkSpec) -> None:
    """Add a sink row; a kind may be registered once."""
    if spec.kind in SINKS:
        raise InvalidArgumentError(f"events sink '{spec.kind}' is already registered")
    SINKS[spec.kind] = spec


def list_sinks() -> list[str]:
    return list(SINKS)


#: What a sink row's class is called with: the option's value (URL or path) and the stage's options.
SinkFactory = Callable[[str, SinkOptions], Sink]


def sink_class(kind: str) -> SinkFactory:
    """The class of a sink kind; a missing library is BackendUnavailableError with the pip command."""
    try:
        spec = SINKS[kind]
    except KeyError:
        raise InvalidArgumentError(f"unknown events sink '{kind}' (known: {', '.join(SINKS)})") from None
    if not spec.installed():
        raise BackendUnavailableError(
            f"the {kind} events sink needs {spec.requires}, which is not installed: pip install 'avdnn[{spec.extra}]'",
            option=kind,
        )
    module, _, attr = spec.target.partition(":")
    cls: SinkFactory = getattr(importlib.import_module(f"avdnn.events.sinks.{module}"), attr)
    return cls


def open_sink(kind: str, target: str, options: SinkOptions) -> Sink:
    """A started sink of ``kind`` publishing to ``target``."""
    return sink_class(kind)(target, options)


__all__ = [
    "SINKS",
    "ListenerSink",
    "Message",
    "Sink",
    "SinkFactory",
    "SinkOptions",
    "SinkSpec",
    "SinkStats",
    "Subscription",
    "current_listeners",
    "list_sinks",
    "listen",
    "open_sink",
    "register_sink",
    "sink_class",
]
