"""Helpers for the tool-calling tests: run ``run_tools`` on the sync Client or the AsyncClient against a
FakeServer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer


def run_tools(kind: str, server: FakeServer, **kwargs: Any) -> Any:
    """``client.chat.completions.run_tools(**kwargs)`` on a fresh client of ``kind`` (``sync``/``async``)."""
    kwargs.setdefault("model", "gpt-4.1")
    if kind == "sync":
        with Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
            return client.chat.completions.run_tools(**kwargs)

    async def go() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
            return await client.chat.completions.run_tools(**kwargs)

    return asyncio.run(go())


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}
