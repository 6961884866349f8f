"""The SDK's own httpx clients, built from a client's `NetworkSettings`: its TLS context, and each request routed
to a proxy (or none) by `proxy_for`, the same function the aiohttp backend asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from holysheep._core.network import NetworkSettings, proxy_for
from holysheep._transports.tls import ssl_context

__all__ = ["AsyncRoutedTransport", "RoutedTransport", "async_transport", "sync_transport"]


class RoutedTransport(httpx.BaseTransport):
    """Sends each request through the transport for its proxy (one per proxy URL, created on first use)."""

    def __init__(self, network: NetworkSettings, make: Callable[[str | None], httpx.BaseTransport]) -> None:
        self._network = network
        self._make = make
        self.transports: dict[str | None, httpx.BaseTransport] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        proxy = proxy_for(self._network, request.url)
        transport = self.transports.get(proxy)
        if transport is None:
            transport = self.transports[proxy] = self._make(proxy)
        return transport.handle_request(request)

    def close(self) -> None:
        for transport in self.transports.values():
            transport.close()


class AsyncRoutedTransport(httpx.AsyncBaseTransport):
    """`RoutedTransport` for httpx's async client."""

    def __init__(self, network: NetworkSettings, make: Callable[[str | None], httpx.AsyncBaseTransport]) -> None:
        self._network = network
        self._make = make
        self.transports: dict[str | None, httpx.AsyncBaseTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        proxy = proxy_for(self._network, request.url)
        transport = self.transports.get(proxy)
        if transport is None:
            transport = self.transports[proxy] = self._make(proxy)
        return await transport.handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self.transports.values():
            await transport.aclose()


def sync_transport(network: NetworkSettings, limits: httpx.Limits) -> httpx.BaseTransport:
    """The transport of the SDK's own sync pool: deadline-aware reads, the client's TLS context, its proxies."""
    from holysheep._transports.deadline_transport import make_transport

    ctx = ssl_context(network)
    http2 = network.http2
    if not network.uses_proxy:  # the usual case: no routing step per request
        return make_transport(limits, verify=ctx, http2=http2)
    return RoutedTransport(network, lambda proxy: make_transport(limits, verify=ctx, proxy=proxy, http2=http2))


def async_transport(network: NetworkSettings, limits: httpx.Limits) -> httpx.AsyncBaseTransport:
    """The transport of one shard of the SDK's own async httpx pool."""
    ctx = ssl_context(network)

    def make(proxy: str | None) -> httpx.AsyncBaseTransport:
        kwargs: dict[str, Any] = {"limits": limits, "verify": ctx, "http2": network.http2}
        if proxy is not None:
            kwargs["proxy"] = httpx.Proxy(proxy)
        return httpx.AsyncHTTPTransport(**kwargs)

    if not network.uses_proxy:
        return make(None)
    return AsyncRoutedTransport(network, make)
