"""The one place that touches private attributes of httpx, httpcore and aiohttp: each where no public API does the job.

A minor release of these libraries may rename any of them. Every access here is guarded (a missing attribute
degrades to what the function's docstring says, never an ``AttributeError`` on the request path), and
``problems()`` lists the attributes the installed releases lack, by library and version:
``tests/network/test_private_access.py`` fails with that list, and ``.ci/run`` runs it on the newest releases
and on the declared floors. ``tests/engine/test_no_private_access.py`` fails when any other module touches a
private attribute of these libraries.

Each attribute, and why no public API does the job:

- httpx ``HTTPTransport._pool`` / ``AsyncHTTPTransport._pool``: httpx takes no ``network_backend=`` and shows
  no pool; the sync deadline backend is set on it, busy connections and the TLS context are read from it.
- httpcore ``ConnectionPool._network_backend``: ``network_backend=`` is a constructor argument only, and
  httpx builds the pool.
- httpcore ``ConnectionPool._ssl_context``: the TLS context a caller's ``http_client`` verifies with (the
  warning for ``verify=False``).
- httpx ``Client._transport`` / ``Client._mounts``: a caller's ``http_client`` shows neither.
- aiohttp ``BaseConnector._limit``: read-only once the connector exists; a batch raises it on an open pool.
- aiohttp ``BaseConnector._close()``: the public ``close()`` is a coroutine, and a garbage-collected client
  has no loop to await it on.
- aiohttp ``BaseConnector._acquired``: how many connections are checked out (``in_use``: the leak checks).
"""

from __future__ import annotations

import asyncio
import contextlib
from importlib import metadata
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import httpcore

__all__ = ["aiohttp_acquired", "aiohttp_close_now", "aiohttp_raise_limit", "httpx_pools", "pool_ssl_context",
           "problems", "set_network_backend"]


class _Connector(Protocol):
    _limit: int


def _pool(transport: object) -> object | None:
    return getattr(transport, "_pool", None)


def set_network_backend(transport: object, backend: httpcore.NetworkBackend) -> bool:
    """Make the httpcore pool under an ``httpx.HTTPTransport`` open its connections through ``backend``; False
    (nothing changed) when the attributes are not there."""
    import httpcore  # loaded already: the transport was built

    pool = _pool(transport)
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        return False
    pool._network_backend = backend
    return True


def httpx_pools(http_client: object) -> list[object]:
    """The httpcore pools of an httpx client: its transport's (each proxy's, for a ``RoutedTransport``) and those
    of the transports in its ``mounts``. Empty when they cannot be found."""
    transports = [getattr(http_client, "_transport", None)]
    transports += list((getattr(http_client, "_mounts", None) or {}).values())
    pools = []
    for transport in transports:
        routed = getattr(transport, "transports", None)  # holysheep's RoutedTransport: one transport per proxy
        for one in routed.values() if isinstance(routed, dict) else (transport,):
            pool = _pool(one)
            if pool is not None:
                pools.append(pool)
    return pools


def pool_ssl_context(pool: object) -> object | None:
    """The ``ssl.SSLContext`` an httpcore pool connects with (None when not found)."""
    return getattr(pool, "_ssl_context", None)


def aiohttp_raise_limit(connector: _Connector, n: int) -> bool:
    """Raise an open aiohttp connector's connection limit to ``n`` (it reads it on every acquire); False when the
    attribute is not there."""
    if not isinstance(getattr(connector, "_limit", None), int):
        return False
    connector._limit = n
    return True


def aiohttp_close_now(connector: object) -> None:
    """Close an aiohttp connector's transports synchronously (from a finalizer: no loop to await ``close()``)."""
    close = getattr(connector, "_close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


def aiohttp_acquired(connector: object) -> int:
    """How many connections an aiohttp connector has checked out (0 when it cannot tell)."""
    acquired = getattr(connector, "_acquired", ())
    try:
        return len(acquired)
    except TypeError:
        return 0


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def problems() -> list[str]:
    """The private attributes above that the installed releases lack, each naming the library and its version
    (empty when all are there)."""
    import httpcore
    import httpx

    found: list[str] = []

    def check(ok: bool, library: str, what: str) -> None:
        if not ok:
            found.append(f"{library} {_version(library)}: {what} is gone; holysheep's "
                         f"_transports/_private_access.py needs a new way to do this")

    for transport in (httpx.HTTPTransport(), httpx.AsyncHTTPTransport()):
        pool = _pool(transport)
        kind = type(transport).__name__
        check(isinstance(pool, (httpcore.ConnectionPool, httpcore.AsyncConnectionPool)), "httpx",
              f"{kind}._pool (an httpcore pool)")
        check(hasattr(pool, "_network_backend"), "httpcore", f"{type(pool).__name__}._network_backend")
        check(pool_ssl_context(pool) is not None, "httpcore", f"{type(pool).__name__}._ssl_context")
    client = httpx.Client(mounts={"http://x.invalid": httpx.HTTPTransport()})
    try:
        check(getattr(client, "_transport", None) is not None, "httpx", "Client._transport")
        check(len(httpx_pools(client)) == 2, "httpx", "Client._mounts")
    finally:
        client.close()
    limit, acquired, close = _aiohttp_attributes()
    check(limit == 7, "aiohttp", "BaseConnector._limit")
    check(acquired, "aiohttp", "BaseConnector._acquired")
    check(close, "aiohttp", "BaseConnector._close()")
    return found


def _aiohttp_attributes() -> tuple[object, bool, bool]:
    """A connector's ``_limit`` (built with ``limit=7``), whether it has ``_acquired`` and a callable ``_close``."""
    import aiohttp

    async def read() -> tuple[object, bool, bool]:
        connector = aiohttp.TCPConnector(limit=7)  # aiohttp builds a connector inside a running loop
        try:
            return (getattr(connector, "_limit", None), hasattr(connector, "_acquired"),
                    callable(getattr(connector, "_close", None)))
        finally:
            await connector.close()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(read())
    finally:
        loop.close()
