"""A least-recently-used cache bounded in entries, in bytes and in age: every per-agent cache of the service
uses it, since a requester chooses the agent URLs and may name a new one with every assessment.

Written here rather than taken from a library: the dependencies hold no cache with a byte budget, an age
and an eviction callback together (cachetools is not a dependency; functools.lru_cache has none of them), and
this is one small class, reused by every per-agent structure.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class _Entry(Generic[V]):
    value: V
    size: int
    expires_at: float


class BoundedCache(Generic[K, V]):
    """LRU with at most `max_entries` entries and `max_bytes` bytes (each entry's size is what the caller
    says it is), each kept at most `ttl_s` seconds after it was stored (None: no age limit). `on_evict` is
    called with every key and value that leaves, whatever the reason (capacity, age, `pop`, `clear`)."""

    def __init__(
        self,
        max_entries: int,
        *,
        max_bytes: int | None = None,
        ttl_s: float | None = None,
        on_evict: Callable[[K, V], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0 or (max_bytes is not None and max_bytes < 0) or (ttl_s is not None and ttl_s < 0):
            raise ValueError("cache bounds must not be negative")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._on_evict = on_evict
        self._clock = clock
        self._entries: OrderedDict[K, _Entry[V]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: K) -> V | None:
        """The value if present and not expired (it becomes the most recently used), else None."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() >= entry.expires_at:
            self.pop(key)
            return None
        self._entries.move_to_end(key)
        return entry.value

    def put(self, key: K, value: V, *, size: int = 0) -> None:
        """Store (replacing what `key` held), then evict the least recently used past a bound. An entry larger
        than `max_bytes` on its own is not kept, and evicts nothing."""
        self.pop(key)
        if self.max_bytes is not None and size > self.max_bytes:
            return  # would push out everything else and still not fit
        expires_at = self._clock() + self.ttl_s if self.ttl_s is not None else float("inf")
        self._entries[key] = _Entry(value, size, expires_at)
        self.bytes += size
        self._shrink()

    def pop(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self.bytes -= entry.size
        if self._on_evict is not None:
            self._on_evict(key, entry.value)
        return entry.value

    def expire(self) -> None:
        """Drop every expired entry now (they are otherwise dropped when met)."""
        now = self._clock()
        for key in [k for k, e in self._entries.items() if now >= e.expires_at]:
            self.pop(key)

    def clear(self) -> None:
        for key in list(self._entries):
            self.pop(key)

    def _shrink(self) -> None:
        self.expire()
        over_bytes = self.max_bytes is not None and self.bytes > self.max_bytes
        while self._entries and (len(self._entries) > self.max_entries or over_bytes):
            self.pop(next(iter(self._entries)))
            over_bytes = self.max_bytes is not None and self.bytes > self.max_bytes
