"""The backend seam: how a shell sends one attempt of a ``Call``, over httpx or aiohttp.

A backend's ``send(call)`` begins the call's next attempt and returns a fully read response (or, when
``call.lazy_body`` and the status is 2xx, one whose body is an unread byte stream: a stream, or
``with_streaming_response``), or raises an ``httpx.RequestError`` that carries the attempt's request. Error
responses are always read in full. The shells never branch on transport.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar, Union

import httpx

from holysheep._core.call import Call, Outcome, RawResponse
from holysheep._core.config import DEFAULT_LIMITS
from holysheep._core.network import DEFAULT_NETWORK, NetworkSettings
from holysheep._exceptions import ClientClosedError
from holysheep._transports._private_access import httpx_pools
from holysheep._transports.body import read_body, read_body_async
from holysheep._transports.deadlines import Deadline
from holysheep._transports.redirects import check_redirect, check_redirect_async
from holysheep._transports.sync_deadline import attempt_deadline

__all__ = ["AsyncBackend", "AsyncHttpxBackend", "LazyPool", "Response", "SyncBackend", "SyncHttpxBackend",
           "attempt_outcome"]

Response = Union[httpx.Response, RawResponse]
_P = TypeVar("_P")
SHARD_CONNECTIONS = 4
"""Connections per httpx async pool: httpcore checks every idle connection of its pool several times
per request, so the SDK's own async httpx path spreads requests over many small pools (which share one
TLS context). Measured at 64 in flight (valgrind instructions per request): one pool of 1000 22.9M,
shards of 16 8.6M, of 8 5.3M, of 4 3.6M, of 2 3.0M."""
H2_SHARD_STREAMS = 100
"""Requests in flight per shard with ``http2=True``: one HTTP/2 connection carries them all (httpcore opens
at most 100 streams on a connection and queues the rest, so a shard holds no more). Its pool may still
open up to this many connections when the server answers ALPN with HTTP/1.1."""


class LazyPool(Generic[_P]):
    """An HTTP client created on first use (building one loads TLS certificates: tens of ms), once: threads
    that ask at the same time (a sync client's batch) get the same client, never one each with the extra left
    unclosed."""

    __slots__ = ("_factory", "_lock", "_value")

    def __init__(self, value: _P | None, factory: Callable[[], _P]) -> None:
        self._value = value
        self._factory = factory
        self._lock = threading.Lock()

    @property
    def created(self) -> bool:
        return self._value is not None

    def get(self) -> _P:
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._factory()
        return value


class SyncBackend(Protocol):
    def send(self, call: Call) -> Response: ...
    def close(self) -> None: ...


class AsyncBackend(Protocol):
    def send(self, call: Call) -> Awaitable[Response]: ...
    async def aclose(self) -> None: ...


def attempt_outcome(call: Call, response: Response | None, exc: httpx.RequestError | None) -> Outcome:
    """The call's decision on what one attempt produced (a response, or a transport error)."""
    if exc is not None:
        try:
            request: httpx.Request | None = exc.request
        except RuntimeError:
            request = None
        return call.on_transport_error(exc, request or call.httpx_request())
    assert response is not None
    return call.on_response(response)


def _httpx_busy(http: httpx.Client | httpx.AsyncClient) -> int:
    import httpcore  # loaded by httpx with its first pool: `Client()` alone does not load it

    total = 0
    for pool in httpx_pools(http):  # httpcore's public `connections`, of pools httpx does not show
        if isinstance(pool, (httpcore.ConnectionPool, httpcore.AsyncConnectionPool)):
            total += sum(1 for c in pool.connections if not (c.is_idle() or c.is_closed()))
    return total


def _request(call: Call, http: httpx.Client | httpx.AsyncClient, custom: bool) -> httpx.Request:
    return call.next_request(http if custom else None)


class SyncHttpxBackend:
    """Sends with an ``httpx.Client`` (the SDK's own, created lazily, or the caller's ``http_client``)."""

    def __init__(self, http_client: httpx.Client | None, timeout: httpx.Timeout,
                 network: NetworkSettings = DEFAULT_NETWORK) -> None:
        self.custom = http_client is not None  # then its build_request applies its defaults
        self.pool: LazyPool[httpx.Client] = LazyPool(http_client, lambda: self._new_pool(timeout, network))
        self.closed = False

    @staticmethod
    def _new_pool(timeout: httpx.Timeout, network: NetworkSettings) -> httpx.Client:
        from holysheep._transports.routing import sync_transport

        return httpx.Client(timeout=timeout, transport=sync_transport(network, DEFAULT_LIMITS), trust_env=False,
                            follow_redirects=True, event_hooks={"response": [check_redirect]})

    def send(self, call: Call) -> Response:
        """Send one attempt; bodies (all but a 2xx ``lazy_body``) are read within ``max_response_bytes`` and the
        attempt's deadline."""
        if self.closed:
            raise ClientClosedError
        http = self.pool.get()
        request = _request(call, http, self.custom)
        deadline = Deadline(call.deadline_s)
        with attempt_deadline(call.deadline_s):  # the SDK's own pool: headers too (a caller's: the body only)
            try:
                response = http.send(request, stream=True)
            except ssl.SSLError as exc:  # httpx lets a TLS alert after the handshake through unwrapped
                raise httpx.ConnectError(str(exc), request=request) from exc
        if not call.lazy_body or response.status_code >= 400:
            response = read_body(response, call.config.max_response_bytes, deadline)  # bounded; closes it
        return response

    def in_use(self) -> int:
        """Connections checked out (not idle, not closed): 0 once every response is released."""
        return _httpx_busy(self.pool.get()) if self.pool.created else 0

    def close(self) -> None:
        self.closed = True
        if self.pool.created:
            self.pool.get().close()


class AsyncHttpxBackend:
    """Sends with httpx's async client. The caller's ``http_client`` is used as it is; the SDK's own
    pool is sharded into clients of at most ``SHARD_CONNECTIONS`` connections, each request going to
    the least busy shard (a new shard opens when all are full), so CPU per request stays flat at
    high concurrency."""

    def __init__(self, http_client: httpx.AsyncClient | None, timeout: httpx.Timeout, *,
                 max_connections: int = DEFAULT_LIMITS.max_connections or 1000,
                 network: NetworkSettings = DEFAULT_NETWORK) -> None:
        self.custom = http_client is not None
        self._timeout = timeout
        self._network = network
        self._per_shard = H2_SHARD_STREAMS if network.http2 else SHARD_CONNECTIONS
        self._max_shards = max(1, -(-max_connections // self._per_shard))
        self.shards: list[httpx.AsyncClient] = [http_client] if http_client is not None else []
        self._busy: list[int] = [0] * len(self.shards)
        self.closed = False

    def ensure_connections(self, n: int) -> None:
        """Let the SDK's sharded pool hold at least ``n`` connections; never lowers it (a caller's
        ``http_client`` keeps its own limits)."""
        self._max_shards = max(self._max_shards, -(-n // self._per_shard))

    def _new_shard(self) -> httpx.AsyncClient:
        from holysheep._transports.routing import async_transport  # its TLS context is built once per client

        limits = httpx.Limits(max_connections=self._per_shard, max_keepalive_connections=self._per_shard)
        return httpx.AsyncClient(timeout=self._timeout, transport=async_transport(self._network, limits),
                                 trust_env=False, follow_redirects=True,
                                 event_hooks={"response": [check_redirect_async]})

    @property
    def first(self) -> httpx.AsyncClient:
        if not self.shards:
            self.shards.append(self._new_shard())
            self._busy.append(0)
        return self.shards[0]

    def _pick(self) -> int:
        busy = self._busy
        if not busy or (min(busy) >= self._per_shard and len(busy) < self._max_shards and not self.custom):
            self.shards.append(self._new_shard() if busy or not self.custom else self.shards[0])
            busy.append(0)
            return len(busy) - 1
        return busy.index(min(busy))

    async def send(self, call: Call) -> Response:
        if self.closed:
            raise ClientClosedError
        i = self._pick()
        http = self.shards[i]
        busy = self._busy  # this list: aclose() starts new ones, and an attempt in flight must not touch those
        busy[i] += 1
        try:
            request = _request(call, http, self.custom)
            try:
                response = await http.send(request, stream=True)
            except ssl.SSLError as exc:  # httpx lets a TLS alert after the handshake through unwrapped
                raise httpx.ConnectError(str(exc), request=request) from exc
            if not call.lazy_body or response.status_code >= 400:
                response = await read_body_async(response, call.config.max_response_bytes)  # bounded; closes it
            return response
        finally:
            busy[i] -= 1

    def in_use(self) -> int:
        """Connections checked out across the shards."""
        return sum(_httpx_busy(http) for http in self.shards)

    async def aclose(self) -> None:
        self.closed = True
        shards, self.shards, self._busy = self.shards, [], []
        for http in shards:
            await http.aclose()
