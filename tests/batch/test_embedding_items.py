"""The batch and JSONL runner take embedding items and OpenAI Batch lines with ``url: /v1/embeddings``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from holysheep import AsyncClient, Client, InvalidRequestError
from holysheep.batch import run_jsonl
from holysheep.testing import FakeServer
from holysheep.testing._embeddings import embedding_vector


def test_batch_mixes_embedding_and_chat_items() -> None:
    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch([
            {"custom_id": "e1", "input": ["alpha", "beta"]},
            {"custom_id": "b1", "method": "POST", "url": "/v1/embeddings",
             "body": {"model": "emb", "input": "gamma", "dimensions": 4}},
            {"custom_id": "c1", "messages": [{"role": "user", "content": "hi"}]},
            {"custom_id": "bad", "method": "POST", "url": "/v1/embeddings", "body": {"model": "emb"}},
        ], model="emb")
        paths = sorted(r.path for r in server.requests if r.method == "POST")
    e1, b1, c1, bad = results
    assert [d.embedding for d in e1.response.data] == [embedding_vector("alpha"), embedding_vector("beta")]
    assert b1.response.data[0].embedding == embedding_vector("gamma", 4)
    assert c1.response.choices[0].message.content
    assert isinstance(bad.error, InvalidRequestError)
    assert paths == ["/v1/chat/completions", "/v1/embeddings", "/v1/embeddings"]
    assert results.stats.prompt_tokens >= 3


def test_async_batch_embeddings() -> None:
    async def main(server: FakeServer) -> list[object]:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            results = await client.chat.completions.batch([{"input": f"text {i}"} for i in range(5)], model="emb")
        return [r.response.data[0].embedding for r in results]

    with FakeServer() as server:
        vectors = asyncio.run(main(server))
    assert vectors == [embedding_vector(f"text {i}") for i in range(5)]


def test_jsonl_with_openai_embedding_lines(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/embeddings",
                                       "body": {"model": "emb", "input": f"doc {i}"}}) + "\n" for i in range(3)))
    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        report = run_jsonl(client, src, dst)
    assert report.succeeded == 3
    lines = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [line["custom_id"] for line in lines] == ["r0", "r1", "r2"]
    assert lines[1]["response"]["data"][0]["embedding"] == embedding_vector("doc 1")
