"""An opt-in response cache: a repeated request is answered from a file instead of being paid again.

    from holysheep import Client

    client = Client(cache="~/.cache/holysheep/responses.db")    # or batch(..., cache=PATH), --cache PATH
    r = client.chat.completions.create(model="gpt-4.1", messages=[...])
    r.cached                                                     # True when it came from the cache

The key is the whole request that was sent (method, base URL and path, query with ``extra_query``, the
deployment/version headers of ``KEY_HEADERS``, the canonical body) and who sent it (a SHA-256 of the API key and
of any header that carries one, never the key; never a request id). A fallback's answer is kept under the
fallback. A cache file or folder that another user owns or may write is not used (one warning).
Only completions that answered are stored (no refusal, content filter or empty reply). ``SQLiteCache``
(standard-library SQLite, WAL mode) is the embedded store: processes can share one file and a killed
process loses nothing committed.
Any object with the ``CacheStore`` methods can replace it. See ``docs/spend.md``.
"""

from holysheep.cache._response import (
    CACHE_FORMAT,
    KEY_HEADERS,
    ResponseCache,
    answered,
    credential_identity,
    open_cache,
    request_key,
)
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
    "credential_identity",
    "open_cache",
    "request_key",
]
