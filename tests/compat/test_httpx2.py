"""httpx2 objects where openai-python 3.x code passes them: ``http_client=httpx2.Client()`` / ``AsyncClient()``,
``timeout=httpx2.Timeout(...)`` (client and call), and ``post``/``get`` with ``cast_to=httpx.Response`` or
``httpx2.Response`` returning the response itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

from holysheep import APIConnectionError, AsyncClient, Client, InvalidRequestError, NotFoundError
from holysheep.testing import FakeServer

MESSAGES: list[Any] = [{"role": "user", "content": "hi there"}]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def test_sync_http_client_sends_through_httpx2(server: FakeServer) -> None:
    seen: list[str] = []
    with httpx2.Client(headers={"x-team": "a"}, event_hooks={"request": [lambda r: seen.append(r.url.path)]}) as http, \
            Client(api_key=server.api_key, base_url=server.url, http_client=http) as client:
        reply = client.chat.completions.create(model="m", messages=MESSAGES)
        with client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as stream:
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert client.has_custom_http_client
    assert (reply.choices[0].message.content, text) == ("hi there", "hi there")
    assert seen == ["/v1/chat/completions"] * 2  # both went through the caller's httpx2 client
    sent = server.requests[-1]
    assert sent.headers["x-team"] == "a" and sent.headers["user-agent"].startswith("holysheep-python/")
    assert reply.request_id == server.requests[-2].request_id


def test_async_http_client_sends_through_httpx2(server: FakeServer) -> None:
    seen: list[str] = []

    async def hook(request: Any) -> None:
        seen.append(request.method)

    async def main() -> tuple[str, str]:
        async with httpx2.AsyncClient(event_hooks={"request": [hook]}) as http, \
                AsyncClient(api_key=server.api_key, base_url=server.url, http_client=http) as client:
            reply = await client.chat.completions.create(model="m", messages=MESSAGES)
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            return reply.choices[0].message.content or "", text

    assert asyncio.run(main()) == ("hi there", "hi there")
    assert seen == ["POST", "POST"]


def test_httpx2_transport_errors_are_typed() -> None:
    with httpx2.Client() as http, Client(api_key="k" * 20, base_url="http://127.0.0.1:9/v1", http_client=http,
                                         max_retries=0) as client, pytest.raises(APIConnectionError) as info:
        client.models.list()
    assert "Connection refused" in str(info.value) or "connect" in str(info.value).lower()


def test_a_wrong_http_client_type_is_refused_before_io() -> None:
    http = httpx2.Client()  # a sync client for the async client
    with pytest.raises(InvalidRequestError, match="httpx2's AsyncClient"):
        AsyncClient(api_key="k" * 20, base_url="http://127.0.0.1:9/v1", http_client=http)  # type: ignore[arg-type]
    http.close()


def test_timeout_takes_httpx2_timeout(server: FakeServer) -> None:
    with Client(api_key=server.api_key, base_url=server.url, timeout=httpx2.Timeout(7.0, connect=2.0)) as client:
        assert client.timeout == httpx.Timeout(7.0, connect=2.0)
        client.chat.completions.create(model="m", messages=MESSAGES, timeout=httpx2.Timeout(3.0))
        assert client.with_options(timeout=httpx2.Timeout(4.0)).timeout == httpx.Timeout(4.0)
    with pytest.raises(InvalidRequestError, match=r"timeout\.read must be > 0"):
        Client(api_key=server.api_key, base_url=server.url, timeout=httpx2.Timeout(5.0, read=0))


@pytest.mark.parametrize("cls", [httpx.Response, httpx2.Response], ids=["httpx", "httpx2"])
def test_post_and_get_cast_to_response(server: FakeServer, cls: type) -> None:
    with Client(api_key=server.api_key, base_url=server.url) as client:
        posted = client.post("/chat/completions", body={"model": "m", "messages": MESSAGES}, cast_to=cls)
        listed = client.get("/models", cast_to=cls)
        with pytest.raises(NotFoundError):
            client.get("/no-such-endpoint", cast_to=cls)
    assert type(posted) is cls and type(listed) is cls
    assert posted.status_code == 200 and posted.json()["choices"][0]["message"]["content"] == "hi there"
    assert posted.headers["x-request-id"].startswith("req_") and listed.json()["object"] == "list"
    assert posted.request.method == "POST" and str(posted.request.url) == server.url + "/chat/completions"


def test_async_get_cast_to_httpx2_response(server: FakeServer) -> None:
    async def main() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            return await client.get("/models", cast_to=httpx2.Response)

    response = asyncio.run(main())
    assert isinstance(response, httpx2.Response) and response.json()["data"][0]["object"] == "model"


def test_an_unverified_httpx2_client_warns() -> None:
    with httpx2.Client(verify=False) as http, pytest.warns(UserWarning, match="does not verify TLS certificates"):
        Client(api_key="k" * 20, base_url="http://127.0.0.1:9/v1", http_client=http).close()
