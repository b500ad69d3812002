"""One router per resource, as Frigate's ``frigate/api/`` is: pipelines, sources, previews, metrics, health."""
