"""The client's limits against the test server (`holysheep.testing.FakeServer`), on each client's default
transport: httpx for `Client`, aiohttp for `AsyncClient`."""

from __future__ import annotations

import asyncio

import pytest

from holysheep import AsyncClient, Client, SpendCapError
from holysheep.testing import FakeServer

KEY = "hs_TestKey0123456789abcdefWXYZ"
PRICES = {"m": (1.0, 2.0)}
MESSAGES = [{"role": "user", "content": "Say hi"}]


def test_spend_and_announced_limits_on_each_default_transport(kind: str) -> None:
    """Each reply's usage counts at the client's prices; a request past the cap never reaches the server; the
    server's ``x-ratelimit-*`` headers (6000 a minute) make the key's shared bucket at 98 a second."""
    from holysheep._engine.key_limits import KEY_LIMITS

    with FakeServer(api_key=KEY, rpm_limit=6000) as server:
        if kind == "sync":
            with Client(api_key=KEY, base_url=server.url, max_cost_usd=0.001, prices=PRICES) as client:
                reply = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=5)
                with pytest.raises(SpendCapError):
                    client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=1000)
                spent, key = client.spent_usd, client._limits_key
        else:
            async def main() -> tuple[object, float | None, str]:
                async with AsyncClient(api_key=KEY, base_url=server.url, max_cost_usd=0.001,
                                       prices=PRICES) as client:
                    assert client._backend.__class__.__name__ == "AiohttpBackend"
                    reply = await client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=5)
                    with pytest.raises(SpendCapError):
                        await client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=1000)
                    return reply, client.spent_usd, client._limits_key

            reply, spent, key = asyncio.run(main())
        usage = reply.usage  # type: ignore[attr-defined]
        assert spent == (usage.prompt_tokens * 1.0 + usage.completion_tokens * 2.0) / 1e6
        assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 1
    bucket = KEY_LIMITS.peek(f"{key}|model=m", "requests")
    assert bucket is not None and bucket.target == 6000 / 60 * 0.98
