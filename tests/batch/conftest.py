"""Fixtures for the batch tests: a FakeServer per test and clients pointed at it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer

MODEL = "gpt-4.1"


@pytest.fixture(autouse=True, params=["default", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every batch test runs on the default transport (aiohttp) and on httpx: for the AsyncClient and for
    the AsyncClient the sync client's batch clones."""
    if request.param == "httpx":
        monkeypatch.setattr(AsyncClient, "_http_backends", ("httpx", "aiohttp"))  # the first is the default
        fn = AsyncClient.from_config.__func__  # type: ignore[attr-defined]
        monkeypatch.setattr(fn, "__kwdefaults__", {**(fn.__kwdefaults__ or {}), "http_backend": "httpx"})
    return str(request.param)


def async_client(server: FakeServer, **kwargs: Any) -> AsyncClient:
    """An AsyncClient for ``server`` on the transport this test run is parametrized with."""
    return AsyncClient(api_key=kwargs.pop("api_key", server.api_key), base_url=server.url, **kwargs)


def sync_client(server: FakeServer, **kwargs: Any) -> Client:
    return Client(api_key=kwargs.pop("api_key", server.api_key), base_url=server.url, **kwargs)


def chat_requests(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(latency=0.01) as srv:
        yield srv


class FakeClock:
    """A clock that only moves when something sleeps on it (each sleep also yields to the loop once)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 9))
        self.now += seconds
        await asyncio.sleep(0)
