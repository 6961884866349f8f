"""``client.embeddings.create``: typed, sync and async, base64 decoded like openai; FakeServer serves vectors."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from typing import Any

import httpx
import pytest

from holysheep import AsyncClient, Client, InvalidRequestError, RateLimitError
from holysheep.testing import FakeServer
from holysheep.types.embeddings import CreateEmbeddingResponse

from .conftest import KEY

VECTORS = [[0.5, -0.25, 1.0], [0.125, 0.0, -1.5]]


def _reply(fmt: str) -> dict[str, Any]:
    data = []
    for i, v in enumerate(VECTORS):
        value: Any = v if fmt == "float" else base64.b64encode(struct.pack("<3f", *v)).decode()
        data.append({"object": "embedding", "index": i, "embedding": value})
    return {"object": "list", "data": data, "model": "emb", "usage": {"prompt_tokens": 4, "total_tokens": 4}}


def _client(seen: list[httpx.Request], statuses: list[int] | None = None) -> Client:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if statuses:
            return httpx.Response(statuses.pop(0), json={"error": {"message": "slow down", "type": "rate"}})
        fmt = json.loads(request.content).get("encoding_format", "float")
        return httpx.Response(200, json=_reply(fmt), headers={"x-request-id": "req_e"})

    return Client(api_key=KEY, http_client=httpx.Client(transport=httpx.MockTransport(handler)),
                  initial_retry_delay=0)


def test_default_asks_for_base64_and_decodes_to_floats() -> None:
    seen: list[httpx.Request] = []
    with _client(seen) as client:
        result = client.embeddings.create(model="emb", input=["a b", "c"])
    assert isinstance(result, CreateEmbeddingResponse)
    assert json.loads(seen[0].content) == {"model": "emb", "input": ["a b", "c"], "encoding_format": "base64"}
    assert seen[0].url.path == "/v1/embeddings"
    assert [d.embedding for d in result.data] == VECTORS
    assert result.usage is not None and result.usage.prompt_tokens == 4
    assert result.request_id == "req_e"


def test_explicit_formats_and_options_are_sent_as_given() -> None:
    seen: list[httpx.Request] = []
    with _client(seen) as client:
        floats = client.embeddings.create(model="emb", input="x", encoding_format="float", dimensions=3, user="u")
        b64 = client.embeddings.create(model="emb", input=[1, 2, 3], encoding_format="base64")
    assert json.loads(seen[0].content) == {"model": "emb", "input": "x", "encoding_format": "float",
                                           "dimensions": 3, "user": "u"}
    assert [d.embedding for d in floats.data] == VECTORS
    assert isinstance(b64.data[0].embedding, str)  # asked for base64: kept as the string


def test_retries_and_key_hygiene_like_chat() -> None:
    seen: list[httpx.Request] = []
    with _client(seen, statuses=[429, 429]) as client:
        result = client.embeddings.create(model="emb", input="x")
    assert result.retries_taken == 2 and len(seen) == 3
    with _client(seen, statuses=[429, 429, 429]) as client, pytest.raises(RateLimitError) as info:
        client.embeddings.create(model="emb", input="x")
    assert KEY not in str(info.value) and KEY not in repr(info.value.request.headers if info.value.request else "")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"input": ""}, "input"), ({"input": []}, "input"), ({"input": ["a", ""]}, "input[1]"),
    ({"input": [1, "a"]}, "input"), ({"input": [[1], []]}, "input[1]"), ({"input": 3}, "input"),
    ({"input": "x", "dimensions": 0}, "dimensions"), ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "x", "user": 1}, "user"), ({"input": "x", "model": ""}, "model"),
])
def test_bad_arguments_before_io(kwargs: dict[str, Any], field: str) -> None:
    seen: list[httpx.Request] = []
    with _client(seen) as client, pytest.raises(InvalidRequestError) as info:
        client.embeddings.create(**{"model": "emb", **kwargs})
    assert info.value.field == field
    assert seen == []


def test_async_embeddings_against_fake_server() -> None:
    async def main(server: FakeServer) -> tuple[Any, Any]:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            one = await client.embeddings.create(model="emb", input=["hello world", "bye"])
            again = await client.embeddings.create(model="emb", input="hello world", dimensions=8,
                                                   encoding_format="float")
        return one, again

    with FakeServer() as server:
        one, again = asyncio.run(main(server))
        with Client(api_key=server.api_key, base_url=server.url) as client:
            sync = client.embeddings.create(model="emb", input=["hello world", "bye"])
    assert len(one.data) == 2 and len(one.data[0].embedding) == 16
    assert [d.embedding for d in one.data] == [d.embedding for d in sync.data]  # deterministic
    assert len(again.data[0].embedding) == 8
    assert one.usage.prompt_tokens == 3
    norm = sum(v * v for v in one.data[0].embedding)
    assert abs(norm - 1.0) < 1e-5


def test_generic_post_and_get() -> None:
    from pydantic import BaseModel

    class Rerank(BaseModel):
        results: list[int]

    with FakeServer() as server:
        server.on("POST", "/rerank", lambda rec: {"results": [len(rec.body["documents"])]})
        with Client(api_key=server.api_key, base_url=server.url) as client:
            typed = client.post("/rerank", body={"documents": ["a", "b"]}, cast_to=Rerank)
            raw = client.post("rerank", body={"documents": ["a"]})
            models = client.get("/models")
    assert typed == Rerank(results=[2])
    assert raw == {"results": [1]}
    assert isinstance(models, dict) and models["object"] == "list"
    assert server.requests[0].headers["authorization"] == f"Bearer {server.api_key}"
