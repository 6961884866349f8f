"""``ResponseCache``: chat completions kept by the whole request that was sent, over any ``CacheStore``.

The key is a SHA-256 of the canonical request: the method, the base URL (without credentials) and path,
the query (the base URL's own, such as Azure's ``?api-version=``, merged with the call's ``extra_query``),
the headers that select a deployment or version (``KEY_HEADERS``, from ``default_headers`` and
``extra_headers``), and the JSON body with sorted keys, so the model, the messages and every parameter
count, and the order in which they were given does not. No other header is part of it: neither the API
key nor a request id or idempotency key. Only completions that answered are stored (``answered``), as the
JSON of the completion (never a header).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from holysheep._core.config import _KEY_HEADERS as CREDENTIAL_HEADERS
from holysheep._core.log import get_logger
from holysheep._core.wire import CHAT, WireFormat, wire_for_path, wire_of, wire_of_response
from holysheep._egress import scrub
from holysheep._exceptions import InvalidRequestError
from holysheep.cache._sqlite import SQLiteCache
from holysheep.cache._store import CacheStats, CacheStore, MemoryCache

if TYPE_CHECKING:
    from holysheep._core.call import Call
    from holysheep._core.config import ClientConfig
    from holysheep._core.request import RequestSpec

__all__ = ["CACHE_FORMAT", "KEY_HEADERS", "CacheLike", "ResponseCache", "answered", "credential_identity", "open_cache",
           "request_key"]

CACHE_FORMAT = "holysheep-cache-3"
"""Part of every key: a change in what is stored changes every key (old entries become misses)."""

logger = get_logger("holysheep.cache")

KEY_HEADERS = ("api-version", "x-api-version", "azureml-model-deployment", "openai-organization", "openai-project",
               "openai-beta", "anthropic-version", "anthropic-beta")
"""The request headers that select a deployment, an account or an API version: part of the cache key."""

CacheLike = Any
"""What ``cache=`` accepts: a path (str or ``os.PathLike``), a ``CacheStore`` or a ``ResponseCache``."""


class _Unkeyable(Exception):
    pass


def _default(value: object) -> object:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise _Unkeyable(type(value).__name__)


def _clean_base(base_url: str) -> tuple[str, list[tuple[str, str]]]:
    """The base URL without user info (a key there must not reach the cache), query or trailing slash; and
    its query's pairs."""
    if not base_url:
        return "", []
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", "")), parse_qsl(parts.query, True)


def credential_identity(api_key: str | None, headers: Mapping[str, str | None] | None = None) -> str:
    """Who asks, as part of the cache key: a SHA-256 of the API key and of every header that carries one
    (``Authorization``, ``api-key``, ``x-api-key``, ``Proxy-Authorization``), never the key itself; ``""``
    when the request carries none. Another key (another tenant, or a key that replaced a revoked one) never
    gets the answer this key was given."""
    parts = [f"{name.lower()}={value}" for name, value in (headers or {}).items()
             if value and name.lower() in CREDENTIAL_HEADERS]
    if api_key:
        parts.append(f"api_key={api_key}")
    if not parts:
        return ""
    return hashlib.sha256("\0".join(sorted(parts)).encode("utf-8")).hexdigest()


def request_key(body: Mapping[str, object], *, path: str = "chat/completions", base_url: str = "",
                method: str = "POST", query: Mapping[str, object] | None = None,
                headers: Mapping[str, str | None] | None = None, credential: str = "") -> str | None:
    """The cache key of a request: SHA-256 hex of its canonical form (``method``, ``base_url`` and ``path``, the
    base URL's query merged with ``query`` (a call's ``extra_query``), the ``KEY_HEADERS`` among ``headers``,
    ``credential`` (`credential_identity`: who asks), the body); None when the body holds a value that has no
    canonical JSON form (such a request is neither looked up nor stored)."""
    base, pairs = _clean_base(base_url)
    merged = dict(pairs)
    for name, value in (query or {}).items():  # as the URL is built: extra_query replaces the base URL's
        merged[str(name)] = value if isinstance(value, str) else json.dumps(value, default=str)
    chosen = {k.lower(): v for k, v in (headers or {}).items() if k.lower() in KEY_HEADERS and v is not None}
    try:
        canonical = json.dumps({"format": CACHE_FORMAT, "method": method.upper(), "base_url": base,
                                "path": path.strip("/"), "query": sorted(merged.items()), "headers": chosen,
                                "credential": credential, "body": body}, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False, default=_default, allow_nan=False)
    except (_Unkeyable, ValueError, TypeError):
        return None
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def answered(response: object) -> bool:
    """True when a reply is an answer worth replaying (its wire format decides: for a completion, every choice
    has text or tool calls, no refusal, and was not stopped by a content filter). Only such replies are stored."""
    wire = wire_of_response(response)
    return wire is not None and wire.answered(response)


class ResponseCache:
    """Looks completions up by request and stores successful ones; counts hits, misses and savings.

    ``hits`` / ``misses`` / ``saved_usd`` count this object's lookups (the saving is each hit's cost
    at catalog prices). ``close()`` adds the hits to the store's persistent counters and closes it.
    """

    def __init__(self, store: CacheStore) -> None:
        self.store = store
        self.hits = 0
        self.misses = 0
        self.saved_usd = 0.0
        self.off: str | None = None
        """Why the cache stopped (its store failed: a full disk, a read-only, damaged or locked file); None
        while it works. Once off, every lookup is a miss and nothing is stored: calls go on uncached."""
        self._flushed = (0, 0.0)
        self._lock = threading.Lock()

    def _failed(self, doing: str, exc: BaseException, where: str | None = None) -> None:
        """The store failed: turn the cache off, with one warning (the first failure) saying why."""
        with self._lock:
            if self.off is not None:
                return
            self.off = f"{doing}: {type(exc).__name__}: {exc}"
        where = where or getattr(self.store, "path", None) or type(self.store).__name__
        logger.warning("response cache %s: %s failed (%s: %s). The cache is off for the rest of this run and calls "
                       "go on uncached; check the file (a full disk, a read-only or damaged file, or a lock "
                       "another program holds).", where, doing, type(exc).__name__, exc)

    def key(self, body: Mapping[str, object], *, path: str = "chat/completions", base_url: str = "",
            method: str = "POST", query: Mapping[str, object] | None = None,
            headers: Mapping[str, str | None] | None = None, credential: str = "") -> str | None:
        """The key of a request (see ``request_key``); None when it cannot be cached."""
        identity = (wire_for_path(path) or CHAT).cache_identity(body)
        if identity is None:
            return None
        return request_key(identity, path=path, base_url=base_url, method=method, query=query, headers=headers,
                           credential=credential)

    def key_for(self, spec: RequestSpec, config: ClientConfig) -> str | None:
        """The key of ``spec`` sent with ``config`` (the endpoint it goes to: its base URL and key): its query and
        headers are the call's ``extra_query`` and the client's ``default_headers`` with the call's
        ``extra_headers`` (a None value removes one); who asks is `credential_identity` of its key and headers."""
        headers: dict[str, str | None] = {}
        for given in (config.default_headers, spec.options.extra_headers or {}):
            headers.update((name.lower(), value) for name, value in given.items())
        return self.key(spec.body or {}, path=spec.path, base_url=str(config.base_url), method=spec.method,
                        query=spec.options.extra_query, headers=headers,
                        credential=credential_identity(config.api_key.reveal(), headers))

    def answer_key(self, key: str | None, call: Call | None) -> str | None:
        """The key an answer is stored under: ``key`` (its lookup's) when the primary endpoint answered; when a
        fallback did, the key of the request as that fallback got it (its base URL, key and model), so its
        answer is never served as the primary's."""
        if key is None or call is None or call.served_by == "primary":
            return key
        return self.key_for(call.spec, call.config)

    def get(self, key: str, *, clock: Callable[[], float] = time.perf_counter, wire: WireFormat = CHAT) -> object:
        """The stored reply for ``key``, parsed by ``wire`` (marked ``cached``; its ``elapsed_s`` is the lookup's
        time on ``clock``, monotonic seconds), or None (counted as a miss)."""
        start = clock()
        try:
            raw = self.store.get(key) if self.off is None else None
        except Exception as exc:  # the cache is optional: a failing store is a miss, and then off
            self._failed("reading", exc)
            raw = None
        if raw is None:
            self.misses += 1
            return None
        try:
            response = wire.parse_stored(raw)
        except ValueError:  # written by another version, or damaged: a miss (the next success replaces it)
            self.misses += 1
            return None
        wire.mark_cached(response, clock() - start)
        cost = wire.cost(response)
        with self._lock:
            self.hits += 1
            self.saved_usd += cost or 0.0
        return response

    def lookup(self, spec: RequestSpec, config: ClientConfig) -> tuple[str | None, object]:
        """A client call's key and its stored reply, timed on the call's clock (``config.clock``).

        The key is None for what is never cached (a stream, a format the cache does not keep (embeddings), a
        path its format does not own, a body with no canonical form); the reply is None on a miss. What
        ``Client`` and ``AsyncClient`` ask first.
        """
        wire = wire_of(spec)
        if spec.stream or not wire.cacheable or spec.path != wire.path:
            return None, None
        key = self.key_for(spec, config)
        return key, (self.get(key, clock=config.clock, wire=wire) if key is not None else None)

    def save(self, key: str, result: object, call: Call | None = None) -> None:
        """Store a call's ``result`` under ``key`` when it is a reply of a format the cache keeps (else nothing);
        under the fallback's own key when ``call`` (the call that answered) went to a fallback (`answer_key`)."""
        wire = wire_of_response(result)
        if wire is not None and wire.cacheable:
            stored = self.answer_key(key, call)
            if stored is not None:
                self.put(stored, result)

    def put(self, key: str, response: object) -> None:
        """Store a reply that answered (``answered``: no refusal, content filter or empty reply), as the JSON of
        the reply only; a cached one is not stored again. A store that fails (a full disk, a locked or read-only
        file) turns the cache off with one warning, never raises: the call has its answer."""
        wire = wire_of_response(response)
        if wire is None or wire.served_by(response) == "cache" or self.off is not None or not wire.answered(response):
            return
        row = scrub(wire.dump(response))  # the egress scrubber: no key reaches a cache row
        try:
            self.store.put(key, row.encode("utf-8"), model=scrub(wire.model_of(response)),
                           cost_usd=wire.cost(response))
        except Exception as exc:
            self._failed("storing a response", exc)

    def stats(self) -> CacheStats:
        """The store's figures."""
        return self.store.stats()

    def flush(self) -> None:
        """Add the hits since the last flush to the store's counters."""
        with self._lock:
            hits, saved = self.hits - self._flushed[0], self.saved_usd - self._flushed[1]
            self._flushed = (self.hits, self.saved_usd)
        if hits and self.off is None:
            try:
                self.store.record_hits(hits, saved)
            except Exception as exc:
                self._failed("counting hits", exc)

    def close(self) -> None:
        """Flush the hit counters and close the store; never raises for a failing store (one warning)."""
        self.flush()
        try:
            self.store.close()
        except Exception as exc:
            self._failed("closing it", exc)

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({self.store!r}, hits={self.hits}, misses={self.misses})"


def shared_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the cache file at ``path`` could answer with what another user put there: the file (or its ``-wal``,
    ``-shm`` or ``-journal``, which SQLite reads with it) or its folder belongs to another user or can be written
    by others. The checks of the rate-limit folder (``private_state``); None when only this user can write it."""
    from holysheep._private_state import file_problem, folder_problem

    file = Path(path).expanduser()
    if file.is_dir():
        return None  # (SQLiteCache refuses a folder with its own message)
    folder = Path(os.path.realpath(file.parent))
    if folder.exists():
        problem = folder_problem(folder)
        if problem is not None:
            return f"its folder {folder} {problem}"
    for name in (file, *(file.with_name(file.name + end) for end in ("-wal", "-shm", "-journal"))):
        problem = file_problem(name)
        if problem is not None:
            return f"{name} {problem}"
    return None


def _refused(where: str, problem: str) -> ResponseCache:
    """A cache that is off from the start (every lookup a miss, nothing stored), with one warning saying why."""
    off = ResponseCache(MemoryCache())
    off.off = f"refused: {problem}"
    logger.warning("response cache %s: not used, because %s: another user could plant answers in it (or read "
                   "them). Calls go on uncached. Use a cache file in a folder only you can write (chmod 700 the "
                   "folder, chmod 600 the file), or name another file for cache= (--cache).", where, problem)
    return off


def open_cache(cache: CacheLike, *, ttl_s: float | None = None, max_entries: int | None = None,
               max_bytes: int | None = None) -> ResponseCache:
    """A ``ResponseCache`` for what ``cache=`` was given: a path opens (or creates) a ``SQLiteCache``
    with the given limits; a store is wrapped; a ``ResponseCache`` is returned as it is. A cache file that
    another user owns or may write, or one in such a folder (`shared_problem`), is not used: one warning, and
    calls go on uncached."""
    if isinstance(cache, ResponseCache):
        return cache
    if isinstance(cache, (str, os.PathLike, SQLiteCache)):
        where = os.fspath(cache.path if isinstance(cache, SQLiteCache) else cache)
        problem = shared_problem(where)
        if problem is not None:
            return _refused(where, problem)
    if isinstance(cache, (str, os.PathLike)):
        try:
            return ResponseCache(SQLiteCache(cache, ttl_s=ttl_s, max_entries=max_entries, max_bytes=max_bytes))
        except (sqlite3.Error, OSError) as exc:  # damaged, locked, read-only: go on without (a garbage file and bad
            off = ResponseCache(MemoryCache())  # arguments raise CacheFileError / InvalidRequestError above)
            off._failed("opening it", exc, where=os.fspath(cache))
            return off
    if isinstance(cache, CacheStore):
        return ResponseCache(cache)
    raise InvalidRequestError(f"cache must be a file path, a CacheStore or a ResponseCache, got "
                              f"{type(cache).__name__}.", field="cache")
