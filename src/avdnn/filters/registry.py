"""The one table of avdnn filters.

The graph looks filters up here and nowhere else. Filter modules are imported lazily from
the table of names below, so ``import avdnn`` stays light and a filter whose backend is not
installed still shows up in ``-filters``. Names not in the table go to libavfilter.
"""

from __future__ import annotations

import importlib

from avdnn.errors import InvalidArgumentError
from avdnn.filters.base import Filter

#: filter name -> "module:Class" relative to avdnn.filters
KNOWN_FILTERS: dict[str, str] = {
    "dnn_processing": "dnn_processing:DnnProcessingFilter",
    "sr": "sr:SrFilter",
    "derain": "derain:DerainFilter",
    "dnn_detect": "dnn_detect:DnnDetectFilter",
    "dnn_classify": "dnn_classify:DnnClassifyFilter",
    "showinfo": "showinfo:ShowInfoFilter",
    "drawbox": "overlay_bboxes:DrawBoxFilter",
    "drawtext": "overlay_bboxes:DrawTextFilter",
    "metadata_jsonl": "metadata_jsonl:MetadataJsonlFilter",
    "track": "track:TrackFilter",
    "zone": "zone:ZoneFilter",
    "line": "line:LineFilter",
    "events": "events:EventsFilter",
    "drawzones": "drawzones:DrawZonesFilter",
    "drawobjects": "drawobjects:DrawObjectsFilter",
}

_loaded: dict[str, type[Filter]] = {}


def register_filter(name: str, target: str) -> None:
    """Add a lazily imported filter to the table; a name may be registered once."""
    if name in KNOWN_FILTERS:
        raise InvalidArgumentError(f"filter '{name}' is already registered")
    KNOWN_FILTERS[name] = target


def filter_class(cls: type[Filter]) -> type[Filter]:
    """Decorator for filters defined outside the table (tests, plugins): registers the class."""
    if cls.name in KNOWN_FILTERS or cls.name in _loaded:
        raise InvalidArgumentError(f"filter '{cls.name}' is already registered")
    _loaded[cls.name] = cls
    KNOWN_FILTERS[cls.name] = f"<registered {cls.__module__}.{cls.__qualname__}>"
    return cls


def unregister_filter(name: str) -> None:
    """Remove a filter registered with :func:`filter_class` (tests)."""
    _loaded.pop(name, None)
    KNOWN_FILTERS.pop(name, None)


def is_avdnn_filter(name: str) -> bool:
    return name in KNOWN_FILTERS


def list_filters() -> list[str]:
    return sorted(KNOWN_FILTERS)


def get_filter(name: str) -> type[Filter]:
    """The filter class for ``name``; KeyError when avdnn does not have it."""
    cls = _loaded.get(name)
    if cls is None:
        target = KNOWN_FILTERS[name]
        module, _, attr = target.partition(":")
        cls = getattr(importlib.import_module(f"avdnn.filters.{module}"), attr)
        _loaded[name] = cls
    return cls
