"""Every batch option is checked before any request: a typed InvalidRequestError and nothing sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep import AsyncClient, Client, InvalidRequestError
from holysheep.testing import FakeServer

BAD: list[tuple[Any, dict[str, Any], str]] = [
    (["a"], {"read_ahead": -1}, "read_ahead"),
    (["a"], {"read_ahead": 0}, "read_ahead"),
    (["a"], {"on_result": "x"}, "on_result"),
    (["a"], {"on_progress": 3}, "on_progress"),
    (["a"], {"concurrency": 0}, "concurrency"),
    (["a"], {"concurrency": True}, "concurrency"),
    (["a"], {"rpm": -5}, "rpm"),
    (["a"], {"tpm": "fast"}, "tpm"),
    (["a"], {"max_retries": -1}, "max_retries"),
    (["a"], {"retry_budget": -0.1}, "retry_budget"),
    (["a"], {"outage_failure_ratio": 1.5}, "outage_failure_ratio"),
    (["a"], {"outage_window": 0}, "outage_window"),
    (["a"], {"adaptive": "yes"}, "adaptive"),
    ("Hello world", {}, "requests"),
    ({"messages": [{"role": "user", "content": "hi"}]}, {}, "requests"),
    (42, {}, "requests"),
]


@pytest.mark.parametrize("requests, options, field", BAD)
def test_sync_batch_refuses_bad_options_before_sending(requests: Any, options: dict[str, Any], field: str) -> None:
    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        with pytest.raises(InvalidRequestError) as info:
            client.chat.completions.batch(requests, model="m", **options)
        assert info.value.field == field and field in str(info.value)
        assert server.requests == []


@pytest.mark.parametrize("requests, options, field", BAD)
def test_async_batch_and_batch_iter_refuse_bad_options_at_the_call(requests: Any, options: dict[str, Any],
                                                                   field: str) -> None:
    with FakeServer() as server:
        async def main() -> None:
            async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                with pytest.raises(InvalidRequestError) as info:
                    await client.chat.completions.batch(requests, model="m", **options)
                assert info.value.field == field
                with pytest.raises(InvalidRequestError):
                    client.chat.completions.batch_iter(requests, model="m", **options)  # at the call, not later

        asyncio.run(main())
        assert server.requests == []
