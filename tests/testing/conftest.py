"""Fixtures for the FakeServer tests: the plugin's fixtures (also available once the plugin is installed)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from holysheep.testing import FakeServer
from holysheep.testing.pytest_plugin import (  # noqa: F401
    holysheep_mock,
    holysheep_server,
    pytest_configure,
)


def client_for(server: FakeServer, **kwargs: object) -> httpx.Client:
    """An httpx client with the server's base URL, key and a short timeout."""
    kwargs.setdefault("timeout", 5.0)
    headers = {"Authorization": f"Bearer {server.api_key}"}
    return httpx.Client(base_url=server.url, headers=headers, **kwargs)  # type: ignore[arg-type]


class RecordedSleep:
    """``FakeServer(sleep=RecordedSleep())``: each delay the server waits, in order, and slept for real (so
    wall-clock lower bounds hold too)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(seconds)


def chat_body(content: str = "hello big world", **extra: object) -> dict[str, object]:
    return {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": content}], **extra}


@pytest.fixture
def server():
    with FakeServer() as s:
        yield s
