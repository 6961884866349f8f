"""``with_raw_response`` / ``with_streaming_response`` on chat completions, models and quota, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from holysheep import AsyncClient, ChatCompletion, Client
from holysheep.testing import FakeServer

MESSAGES = [{"role": "user", "content": "Hi there"}]


@pytest.fixture
def server() -> Any:
    with FakeServer() as s:
        yield s


def test_sync_raw_chat(server: FakeServer) -> None:
    server.set_faults(["503"])
    with Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
        raw = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
        completion = raw.parse()
    assert raw.status_code == 200
    assert raw.headers["x-request-id"] == server.requests[-1].request_id
    assert isinstance(raw.http_request, httpx.Request)
    assert raw.http_request.url == httpx.URL(server.url + "/chat/completions")
    assert raw.http_request.headers["authorization"] != f"Bearer {server.api_key}"  # masked
    assert raw.retries_taken == 1
    assert raw.elapsed.total_seconds() >= 0
    assert isinstance(completion, ChatCompletion) and completion.choices[0].message.content
    assert raw.parse() is completion
    assert raw.json()["object"] == "chat.completion" and raw.text.startswith("{") and raw.content


def test_sync_raw_models_and_quota_and_stream(server: FakeServer) -> None:
    with Client(api_key=server.api_key, base_url=server.url) as client:
        models = client.models.with_raw_response.list()
        quota = client.quota.with_raw_response.retrieve()
        streamed = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, stream=True)
        with streamed.parse() as stream:
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert models.status_code == 200 and [m.id for m in models.parse()]
    assert quota.parse().remaining is not None
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert text


def test_sync_streaming_response(server: FakeServer) -> None:
    with Client(api_key=server.api_key, base_url=server.url) as client:
        with client.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES) as response:
            assert response.status_code == 200
            assert response.parse().choices[0].message.content
        with client.models.with_streaming_response.list() as response:
            assert response.parse()


def test_async_raw_and_streaming(server: FakeServer) -> None:
    async def main() -> None:
        for backend in ("aiohttp", "httpx"):
            async with AsyncClient(api_key=server.api_key, base_url=server.url, http_backend=backend) as client:
                raw = await client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
                assert raw.status_code == 200 and raw.parse().choices[0].message.content
                assert raw.headers["x-request-id"]
                models = await client.models.with_raw_response.list()
                assert models.parse()
                quota = await client.quota.with_raw_response.retrieve()
                assert quota.status_code == 200
                async with client.chat.completions.with_streaming_response.create(
                        model="m", messages=MESSAGES, stream=True) as response:
                    assert response.status_code == 200
                    async with await response.parse() as stream:
                        assert [c async for c in stream]

    asyncio.run(main())
