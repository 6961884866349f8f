"""The SDK and the official openai client against ``transformers serve`` (issue 17 item 16): chat, stream
with metrics, async, batch, fallback from a dead primary, error mapping; the same calls compared."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import (
    AsyncClient,
    Client,
    Fallback,
    QuotaUnavailableError,
    UnprocessableEntityError,
)

from .conftest import RealServer

pytestmark = pytest.mark.realserver

MSG: list[Any] = [{"role": "user", "content": "Hello there"}]
MAX_TOKENS = 6  # greedy decoding (the saved generation config does not sample): the same text every call


_OPENAI_CLIENTS: list[Any] = []


def _openai(server: RealServer) -> Any:
    import openai

    client = openai.OpenAI(api_key="EMPTY", base_url=server.url, max_retries=0, timeout=120)
    _OPENAI_CLIENTS.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_openai_clients() -> Iterator[None]:
    """Each test's openai clients are closed after it (left to the garbage collector, a pooled socket to the
    server is a ResourceWarning at the end of the session)."""
    yield
    while _OPENAI_CLIENTS:
        _OPENAI_CLIENTS.pop().close()


def _sdk(server: RealServer, **kw: Any) -> Client:
    kw.setdefault("max_retries", 0)
    return Client(api_key="EMPTY", base_url=server.url, timeout=120, **kw)


def _openai_stream_text(server: RealServer) -> str:
    stream = _openai(server).chat.completions.create(model=server.model, messages=MSG, max_tokens=MAX_TOKENS,
                                                     stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def test_stream_with_metrics_matches_openai(real_server: RealServer) -> None:
    with _sdk(real_server) as client:
        stream = client.chat.completions.create(model=real_server.model, messages=MSG, max_tokens=MAX_TOKENS,
                                                stream=True)
        with stream:
            pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
            final = stream.get_final_completion()
        metrics = stream.metrics
    text = "".join(pieces)
    assert text and final.choices[0].message.content == text
    assert final.choices[0].finish_reason in ("stop", "length")
    assert final.model.startswith(real_server.model)
    assert stream.request_id  # transformers serve sends x-request-id
    assert metrics.ttft_s is not None and 0 < metrics.ttft_s <= metrics.total_s  # type: ignore[operator]
    assert metrics.chunks >= 3 and metrics.completion_tokens >= 1
    assert text == _openai_stream_text(real_server)


def test_plain_chat_matches_openai_stream(real_server: RealServer) -> None:
    # transformers serve 4.x answers even stream=false with SSE: the SDK folds it into one completion,
    # where the openai client hands back the raw event text as a str.
    with _sdk(real_server) as client:
        reply = client.chat.completions.create(model=real_server.model, messages=MSG, max_tokens=MAX_TOKENS)
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == _openai_stream_text(real_server)
    raw = _openai(real_server).chat.completions.create(model=real_server.model, messages=MSG,
                                                       max_tokens=MAX_TOKENS)
    if isinstance(raw, str):
        assert raw.lstrip().startswith("data:")
    else:  # a server that answers JSON: the parsed replies agree
        assert raw.choices[0].message.content == reply.choices[0].message.content


def test_models_list_matches_openai(real_server: RealServer) -> None:
    with _sdk(real_server) as client:
        ours = [m.id for m in client.models.list()]
    theirs = [m.id for m in _openai(real_server).models.list()]
    assert ours == theirs and len(ours) >= 1


def test_async_stream_and_chat(real_server: RealServer) -> None:
    async def main() -> tuple[str, str]:
        async with AsyncClient(api_key="EMPTY", base_url=real_server.url, timeout=120, max_retries=0) as client:
            stream = await client.chat.completions.create(model=real_server.model, messages=MSG,
                                                          max_tokens=MAX_TOKENS, stream=True)
            async with stream:
                final = await stream.get_final_completion()
            reply = await client.chat.completions.create(model=real_server.model, messages=MSG,
                                                         max_tokens=MAX_TOKENS)
            return final.choices[0].message.content or "", reply.choices[0].message.content or ""

    streamed, plain = asyncio.run(main())
    expected = _openai_stream_text(real_server)
    assert streamed == plain == expected


def test_batch_keeps_order_without_quota_endpoint(real_server: RealServer) -> None:
    prompts = ["Hello there", "The quick brown fox", "Batch inference keeps order"]
    with _sdk(real_server) as client:
        with pytest.raises(QuotaUnavailableError, match="no quota endpoint"):
            client.quota.retrieve()
        results = client.chat.completions.batch(prompts, model=real_server.model, max_tokens=MAX_TOKENS,
                                                concurrency=2)
        singles = [client.chat.completions.create(model=real_server.model, max_tokens=MAX_TOKENS,
                                                  messages=[{"role": "user", "content": p}])
                   for p in prompts]
    got = [r.choices[0].message.content for r in results.responses]
    assert got == [s.choices[0].message.content for s in singles]
    assert [r.index for r in results] == [0, 1, 2]


def test_fallback_from_dead_primary(real_server: RealServer) -> None:
    with socket.socket() as s:  # a port nobody listens on: the primary is down
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    client = Client(api_key="EMPTY", base_url=dead, max_retries=1, initial_retry_delay=0, timeout=120,
                    fallbacks=[Fallback(base_url=real_server.url, name="transformers-serve",
                                        models={"deepseek-v3.2": real_server.model})])
    with client:
        reply = client.chat.completions.create(model="deepseek-v3.2", messages=MSG, max_tokens=MAX_TOKENS)
        with client.chat.completions.create(model="deepseek-v3.2", messages=MSG, max_tokens=MAX_TOKENS,
                                            stream=True) as stream:
            streamed = stream.get_final_completion()
        stats = client.stats()
    assert reply.served_by == "transformers-serve" == streamed.served_by
    assert reply.choices[0].message.content == streamed.choices[0].message.content == _openai_stream_text(
        real_server)
    assert stats["endpoints"]["primary"]["failures"] == 2 and stats["fallback_served"] == 2


def test_4xx_error_mapping_matches_openai(real_server: RealServer) -> None:
    import openai

    retries: list[int] = []
    client = _sdk(real_server, max_retries=2, on_retry=lambda n, e, d: retries.append(n))
    with client, pytest.raises(UnprocessableEntityError) as info:
        client.chat.completions.create(model=real_server.model, messages=MSG, max_tokens=MAX_TOKENS,
                                       extra_body={"bogus_key": 1})
    err = info.value
    assert retries == []  # a 4xx is never retried
    assert err.status_code == 422 and err.body == {"detail": "Unexpected keys in the request: {'bogus_key'}"}
    assert "HTTP 422 Unprocessable Entity: Unexpected keys in the request: {'bogus_key'}" in str(err)
    assert err.request_id
    with pytest.raises(openai.UnprocessableEntityError) as theirs:
        _openai(real_server).chat.completions.create(model=real_server.model, messages=MSG,
                                                     max_tokens=MAX_TOKENS, extra_body={"bogus_key": 1})
    assert theirs.value.status_code == err.status_code and theirs.value.body == err.body
