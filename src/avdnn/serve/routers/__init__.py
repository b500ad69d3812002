"""One router per resource, as Frigate's ``frigate/api/`` is: pipelines, sources, previews, events,
metrics, health, nodes, and the web page (``/`` and its session)."""
