"""openai-python's client surface on holysheep: models.list() pages and models.retrieve, per-call options on
them, with_options/copy with api_key, base_url, http_client and default_query, client.api_key, is_closed(),
with_raw_response.parse and raw.http_response."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from holysheep import AsyncClient, Client, InvalidRequestError, NotFoundError
from holysheep.testing import FakeServer, json_reply
from holysheep.types import Model, ModelList, ParsedChatCompletion

MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]


class Person(BaseModel):
    name: str


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(reply=json_reply({"name": "Ann"})) as srv:
        yield srv


@pytest.fixture
def client(server: FakeServer) -> Iterator[Client]:
    server.reset()
    with Client(api_key=server.api_key, base_url=server.url, max_retries=0) as c:
        yield c


def test_models_list_is_a_page_with_data(client: Client, server: FakeServer) -> None:
    page = client.models.list(extra_headers={"x-trace": "1"}, extra_query={"limit": 5}, timeout=3.0)
    assert isinstance(page, ModelList) and page.object == "list"
    assert [m.id for m in page] == [m.id for m in page.data] == list(server.models)
    assert len(page) == len(server.models) and page[0] == page.data[0] and not page.has_next_page()
    assert page.request_id == page._request_id == server.requests[-1].request_id
    sent = server.requests[-1]
    assert (sent.method, sent.path, sent.query, sent.headers["x-trace"]) == ("GET", "/v1/models", "limit=5", "1")


def test_models_retrieve(client: Client, server: FakeServer) -> None:
    model = client.models.retrieve("deepseek-v3.2")
    assert isinstance(model, Model) and (model.id, model.owned_by) == ("deepseek-v3.2", "deepseek")
    with pytest.raises(NotFoundError) as info:
        client.models.retrieve("no/such model")
    assert info.value.status_code == 404 and server.requests[-1].path == "/v1/models/no%2Fsuch%20model"
    with pytest.raises(InvalidRequestError, match="unknown parameter 'bogus'"):
        client.models.retrieve("x", bogus=1)  # type: ignore[call-arg]


def test_async_models(server: FakeServer) -> None:
    async def main() -> tuple[list[str], list[str], str, int]:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as c:
            page = await c.models.list()
            streamed = [m.id async for m in c.models.list(extra_query={"x": 1})]  # openai's AsyncPaginator way
            model = await c.models.retrieve("gpt-4.1")
            raw = await c.models.with_raw_response.list()
            return [m.id for m in page], streamed, model.id, raw.status_code

    ids, streamed, one, status = asyncio.run(main())
    assert ids == streamed == list(server.models) and one == "gpt-4.1" and status == 200
    assert [r.query for r in server.requests[-4:]] == ["", "x=1", "", ""]


def test_with_options_takes_api_key_base_url_and_default_query(client: Client, server: FakeServer) -> None:
    other_key = "hs_" + "k" * 29
    server.require_auth = False
    try:
        copy = client.with_options(api_key=other_key, base_url=server.url + "/", default_query={"a": "1"})
        copy.models.list()
        again = copy.copy(default_query={"b": "2"})
        again.models.list()
        reset = again.with_options(set_default_query={"c": "3"})
        reset.models.list(extra_query={"c": "4"})
    finally:
        server.require_auth = True
    first, second, third = server.requests[-3:]
    assert first.headers["authorization"] == f"Bearer {other_key}" and first.query == "a=1"
    assert second.query == "a=1&b=2" and third.query == "c=4"  # the call's extra_query wins
    assert copy.api_key == other_key and client.api_key == server.api_key
    assert copy._backend is client._backend  # the pool is shared
    with pytest.raises(ValueError, match="mutually exclusive"):
        client.with_options(default_query={"a": 1}, set_default_query={"b": 2})


def test_default_query_on_the_client(server: FakeServer) -> None:
    with Client(api_key=server.api_key, base_url=server.url, default_query={"api-version": "2024"}) as c:
        c.chat.completions.create(model="m", messages=MESSAGES)
        assert c.default_query == {"api-version": "2024"}
    assert server.requests[-1].query == "api-version=2024"


def test_with_options_takes_an_http_client(client: Client, server: FakeServer) -> None:
    seen: list[str] = []
    with httpx.Client(event_hooks={"request": [lambda r: seen.append(str(r.url))]}) as http:
        copy = client.with_options(http_client=http)
        copy.models.list()
        assert copy._backend is not client._backend and copy.has_custom_http_client
    assert seen == [server.url + "/models"]


def test_api_key_and_is_closed(server: FakeServer) -> None:
    c = Client(api_key=server.api_key, base_url=server.url)
    assert c.api_key == server.api_key and not c.is_closed()
    c.close()
    assert c.is_closed()


def test_with_raw_response_parse(client: Client, server: FakeServer) -> None:
    raw = client.chat.completions.with_raw_response.parse(model="m", messages=MESSAGES, response_format=Person)
    assert raw.headers["x-request-id"] == server.requests[-1].request_id
    completion = raw.parse()
    assert isinstance(completion, ParsedChatCompletion)
    assert completion.choices[0].message.parsed == Person(name="Ann")
    http = raw.http_response
    assert isinstance(http, httpx.Response) and http.status_code == 200 and http.json()["object"] == "chat.completion"
    with pytest.raises(InvalidRequestError, match="one request"):
        client.chat.completions.with_raw_response.parse(model="m", messages=MESSAGES, response_format=Person,
                                                        max_repairs=1)
