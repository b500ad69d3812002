"""A dict bounded by recency: what per-object tables keyed by track id use on a 24/7 input.

A tracker hands out a new id for every object it ever sees, so a table keyed by track id
grows for as long as the input runs unless something retires its old keys. Trackers forget a
lost track after a few seconds (``lost_track_buffer``), so the least recently used keys of a
table holding thousands are objects long gone: :class:`LruDict` drops them (and hands each to
``on_evict``, where the table's owner folds it into its totals or writes it out).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

__all__ = ["LruDict"]


class LruDict(Generic[K, V]):
    """At most ``limit`` entries; reading (:meth:`get`) or writing a key makes it the most recent,
    and the least recent goes (to ``on_evict(key, value)``) when a new key would exceed the limit."""

    def __init__(self, limit: int, on_evict: Callable[[K, V], None] | None = None) -> None:
        if limit < 1:
            raise ValueError(f"limit {limit}: at least one entry")
        self.limit = limit
        self._on_evict = on_evict
        self._items: OrderedDict[K, V] = OrderedDict()
        #: entries dropped for the bound so far
        self.evicted = 0

    def get(self, key: K, default: V | None = None) -> V | None:
        if key not in self._items:
            return default
        self._items.move_to_end(key)
        return self._items[key]

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self.evict_oldest()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def oldest(self) -> tuple[K, V] | None:
        """The least recently used entry (None when empty), left in place."""
        for key, value in self._items.items():
            return key, value
        return None

    def evict_oldest(self) -> None:
        """Drop the least recently used entry (handed to ``on_evict``)."""
        key, value = self._items.popitem(last=False)
        self.evicted += 1
        if self._on_evict is not None:
            self._on_evict(key, value)

    def values(self) -> list[V]:
        return list(self._items.values())
