"""The store interface of the response cache, its figures, and an in-memory store.

A store maps a key (a hex digest of the canonical request) to the bytes of one response. The SQLite
store (``SQLiteCache``) is the embedded default; anything with these methods can take its place
(Redis, a shared database, ...).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["CacheStats", "CacheStore", "MemoryCache"]


@dataclass
class CacheStats:
    """What a cache holds and what it saved.

    ``entries`` / ``bytes``: stored responses and the size of their bodies; ``stored_cost_usd``: what
    the stored responses cost when they were fetched (priced from their usage; unpriced models add
    nothing); ``hits`` / ``saved_usd``: lookups answered from the cache and what those requests would
    have cost, over every process that closed its cache cleanly; ``by_model``: entries per model.
    """

    path: str | None = None
    entries: int = 0
    bytes: int = 0
    stored_cost_usd: float = 0.0
    hits: int = 0
    saved_usd: float = 0.0
    oldest: float | None = None
    newest: float | None = None
    ttl_s: float | None = None
    max_entries: int | None = None
    max_bytes: int | None = None
    by_model: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-serialisable dict."""
        return asdict(self)


@runtime_checkable
class CacheStore(Protocol):
    """What the response cache needs from a store. Keys are hex digests; values the JSON body of one
    successful response (never a header, never a key). ``put`` must be atomic: after it returns the
    entry is committed (a crash of the process loses nothing put before it)."""

    def get(self, key: str) -> bytes | None:
        """The stored value, or None (absent or expired)."""
        ...

    def put(self, key: str, value: bytes, *, model: str = "", cost_usd: float | None = None) -> None:
        """Store ``value`` under ``key`` (replacing what was there), then enforce the size limits."""
        ...

    def record_hits(self, hits: int, saved_usd: float) -> None:
        """Add to the persistent hit counters (called on close; may be a no-op)."""
        ...

    def stats(self) -> CacheStats:
        """What the store holds."""
        ...

    def clear(self) -> int:
        """Remove every entry; how many there were."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


class MemoryCache:
    """A ``CacheStore`` in this process's memory (for tests, or a cache that need not outlive the
    process). ``max_entries`` drops the least recently stored entries; ``ttl_s`` hides older ones."""

    def __init__(self, *, ttl_s: float | None = None, max_entries: int | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._data: OrderedDict[str, tuple[float, str, float | None, bytes]] = OrderedDict()
        self._ttl, self._max, self._clock = ttl_s, max_entries, clock
        self._lock = threading.Lock()
        self._hits, self._saved = 0, 0.0

    def get(self, key: str) -> bytes | None:
        """The stored value, or None."""
        entry = self._data.get(key)
        if entry is None or (self._ttl is not None and entry[0] <= self._clock() - self._ttl):
            return None
        return entry[3]

    def put(self, key: str, value: bytes, *, model: str = "", cost_usd: float | None = None) -> None:
        """Store ``value`` under ``key``."""
        with self._lock:
            self._data.pop(key, None)
            self._data[key] = (self._clock(), model, cost_usd, bytes(value))
            while self._max is not None and len(self._data) > self._max:
                self._data.popitem(last=False)

    def record_hits(self, hits: int, saved_usd: float) -> None:
        """Add to the hit counters."""
        with self._lock:
            self._hits += hits
            self._saved += saved_usd

    def stats(self) -> CacheStats:
        """What the store holds."""
        with self._lock:
            values = list(self._data.values())
        by_model: dict[str, int] = {}
        for _, model, _, _ in values:
            by_model[model] = by_model.get(model, 0) + 1
        return CacheStats(None, len(values), sum(len(v[3]) for v in values), sum(v[2] or 0.0 for v in values),
                          self._hits, self._saved, min((v[0] for v in values), default=None),
                          max((v[0] for v in values), default=None), self._ttl, self._max, None, by_model)

    def clear(self) -> int:
        """Remove every entry."""
        with self._lock:
            n = len(self._data)
            self._data.clear()
        return n

    def close(self) -> None:
        """Nothing to release."""
