"""The one module that touches private attributes of httpx, httpcore and aiohttp (issue 46): every attribute
it relies on is there in the installed releases, and a missing one is named with its library and version."""

from __future__ import annotations

import asyncio

import aiohttp
import httpcore
import httpx
import pytest

from holysheep._transports import _private_access
from holysheep._transports._private_access import (
    aiohttp_acquired,
    aiohttp_close_now,
    aiohttp_raise_limit,
    httpx_pools,
    pool_ssl_context,
    problems,
    set_network_backend,
)
from holysheep._transports.deadline_transport import DeadlineNetworkBackend


def test_every_private_attribute_is_there_in_the_installed_releases() -> None:
    found = problems()
    assert found == [], "the installed releases changed what holysheep relies on:\n" + "\n".join(found)


def test_a_missing_attribute_is_named_with_its_library_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    monkeypatch.setattr(_private_access, "_pool", lambda transport: None)
    found = problems()
    version = metadata.version("httpx")
    assert f"httpx {version}: HTTPTransport._pool (an httpcore pool) is gone; holysheep's " \
           "_transports/_private_access.py needs a new way to do this" in found
    assert any(p.startswith(f"httpcore {metadata.version('httpcore')}: ") for p in found)


def test_the_sync_pool_reads_through_the_deadline_backend() -> None:
    transport = httpx.HTTPTransport()
    backend = DeadlineNetworkBackend()
    assert set_network_backend(transport, backend)
    client = httpx.Client(transport=transport)
    try:
        (pool,) = httpx_pools(client)
        assert isinstance(pool, httpcore.ConnectionPool)
        assert pool_ssl_context(pool) is not None
    finally:
        client.close()
    assert not set_network_backend(object(), backend)  # nothing to set: False, no AttributeError


def test_an_open_aiohttp_pool_takes_a_higher_limit_and_counts_its_connections() -> None:
    async def go() -> tuple[int, int]:
        connector = aiohttp.TCPConnector(limit=3)
        try:
            assert aiohttp_raise_limit(connector, 50)
            return connector.limit, aiohttp_acquired(connector)
        finally:
            await connector.close()

    assert asyncio.run(go()) == (50, 0)


def test_a_connector_is_closed_without_a_loop() -> None:
    async def make() -> aiohttp.TCPConnector:
        return aiohttp.TCPConnector()

    loop = asyncio.new_event_loop()
    try:
        connector = loop.run_until_complete(make())
        aiohttp_close_now(connector)
        assert connector.closed
    finally:
        loop.close()
