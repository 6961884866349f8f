"""Run one chat call on each transport (sync httpx, async httpx, async aiohttp) against a test server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep import AsyncClient, Client

KEY = "hs_Zq7SecretTestKey0123456789WXYZ"
MESSAGES = [{"role": "user", "content": "Hi"}]
TRANSPORTS = ["sync", "httpx", "aiohttp"]


def make_client(kind: str, base_url: str, **kw: Any) -> Any:
    kw.setdefault("api_key", KEY)
    kw.setdefault("max_retries", 0)
    if kind == "sync":
        return Client(base_url=base_url, **kw)
    return AsyncClient(base_url=base_url, http_backend="httpx" if kind == "httpx" else "aiohttp", **kw)


def chat(kind: str, base_url: str, *, stream: bool = False, client_kw: dict[str, Any] | None = None,
         **params: Any) -> Any:
    """One create() (and, for a stream, reading it to the end); returns the result or raises."""
    params.setdefault("model", "m")
    params.setdefault("messages", MESSAGES)
    if kind == "sync":
        with make_client(kind, base_url, **(client_kw or {})) as client:
            result = client.chat.completions.create(stream=stream, **params)
            if stream:
                with result:
                    return list(result)
            return result

    async def go() -> Any:
        async with make_client(kind, base_url, **(client_kw or {})) as client:
            result = await client.chat.completions.create(stream=stream, **params)
            if stream:
                async with result:
                    return [c async for c in result]
            return result

    return asyncio.run(go())


@pytest.fixture(params=TRANSPORTS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
