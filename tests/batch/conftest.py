"""Fixtures for the batch tests: a FakeServer per test and clients pointed at it."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer

MODEL = "gpt-4.1"


def async_client(server: FakeServer, **kwargs: Any) -> AsyncClient:
    """An AsyncClient for ``server`` (aiohttp backend when this checkout has it)."""
    if "http_backend" in inspect.signature(AsyncClient.__init__).parameters:
        kwargs.setdefault("http_backend", "aiohttp")
    return AsyncClient(api_key=kwargs.pop("api_key", server.api_key), base_url=server.url, **kwargs)


def sync_client(server: FakeServer, **kwargs: Any) -> Client:
    return Client(api_key=kwargs.pop("api_key", server.api_key), base_url=server.url, **kwargs)


def chat_requests(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(latency=0.01) as srv:
        yield srv
