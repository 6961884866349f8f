"""An opt-in response cache: a repeated request is answered from a file instead of being paid again.

    from holysheep import Client

    client = Client(cache="~/.cache/holysheep/responses.db")    # or batch(..., cache=PATH), --cache PATH
    r = client.chat.completions.create(model="gpt-4.1", messages=[...])
    r.cached                                                     # True when it came from the cache

The key is the whole request that was sent (method, base URL and path, query with ``extra_query``, the
deployment/version headers of ``KEY_HEADERS``, the canonical body; never the API key or a request id).
Only completions that answered are stored (no refusal, content filter or empty reply). ``SQLiteCache``
(standard-library SQLite, WAL mode) is the embedded store: processes can share one file and a killed
process loses nothing committed.
Any object with the ``CacheStore`` methods can replace it. See ``docs/spend.md``.
"""

from holysheep.cache._response import CACHE_FORMAT, KEY_HEADERS, ResponseCache, answered, open_cache, request_key
from holysheep.cache._sqlite import SQLiteCache
from holysheep.cache._store import CacheStats, CacheStore, MemoryCache

__all__ = [
    "CACHE_FORMAT",
    "KEY_HEADERS",
    "CacheStats",
    "CacheStore",
    "MemoryCache",
    "ResponseCache",
    "SQLiteCache",
    "answered",
    "open_cache",
    "request_key",
]
