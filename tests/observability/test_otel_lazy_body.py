"""``with_streaming_response`` without ``stream=True`` under the instrumentor (in-memory span exporter and metric
reader), against a FakeServer on 127.0.0.1, on sync httpx, async aiohttp (the default) and async httpx: the
call's one span ends when the caller has read the body (with the usage and response attributes of what was
read, and the token and cost metrics), closed it part way or unread (``holysheep.response.read``, no usage), or
the read failed (its typed error)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import SpanKind, StatusCode

from holysheep import AsyncClient, BadRequestError, Client, ResponseTooLargeError
from holysheep._core import body_report
from holysheep.integrations.otel import COST_METRIC
from holysheep.pricing._cost import completion_cost
from holysheep.testing import FakeServer, Fault

from .conftest import MODEL
from .otel_util import Telemetry, instrumented

WORDS = [{"role": "user", "content": "one two three four"}]  # the FakeServer echoes it
INPUT_TOKENS, OUTPUT_TOKENS = 5, 4  # ceil(18 characters / 4), 4 words


def _lazy(client: Any) -> Any:
    return client.chat.completions.with_streaming_response.create(model=MODEL, messages=WORDS)


def _lazy_embeddings(client: Any) -> Any:
    return client.embeddings.with_streaming_response.create(model="emb", input=["hello world", "bye"])


def _client(server: FakeServer, **kw: Any) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0, **kw)


def _async_client(server: FakeServer, backend: str, **kw: Any) -> AsyncClient:
    return AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0, http_backend=backend, **kw)


def _full_span(t: Telemetry, server: FakeServer, body: bytes, request_id: str | None) -> None:
    """Exactly one span, with what the body says, and the token and cost metrics of its usage."""
    reply = json.loads(body)
    assert reply["usage"]["prompt_tokens"] == INPUT_TOKENS and reply["usage"]["completion_tokens"] == OUTPUT_TOKENS
    (span,) = t.spans()
    assert span.name == f"chat {MODEL}" and span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "holysheep", "gen_ai.request.model": MODEL,
        "server.address": "127.0.0.1", "server.port": server.port,
        "gen_ai.response.id": reply["id"], "gen_ai.response.model": MODEL,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": INPUT_TOKENS, "gen_ai.usage.output_tokens": OUTPUT_TOKENS,
        "holysheep.request_id": request_id, "holysheep.response.read": "full",
    }
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.attributes["gen_ai.response.model"] == MODEL
    tokens = {p.attributes["gen_ai.token.type"]: (p.count, p.sum) for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": (1, INPUT_TOKENS), "output": (1, OUTPUT_TOKENS)}
    (cost,) = t.points(COST_METRIC)
    assert cost.value == pytest.approx(completion_cost(MODEL, INPUT_TOKENS, OUTPUT_TOKENS))


def _cut_span(t: Telemetry, read: str) -> None:
    """Exactly one span, ended without usage or response attributes, marked with how much was read."""
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert a["holysheep.response.read"] == read and span.status.status_code is StatusCode.UNSET
    assert not {k for k in a if k.startswith(("gen_ai.usage.", "gen_ai.response."))}
    assert "error.type" not in a and "holysheep.response.unparsed" not in a
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and "gen_ai.response.model" not in duration.attributes
    assert t.points("gen_ai.client.token.usage") == [] and t.points(COST_METRIC) == []


# ------------------------------------------------------------------------------------------------ sync httpx
def _read(r: Any) -> bytes:
    return bytes(r.read())


def _parse(r: Any) -> bytes:
    parsed = r.parse()
    assert r.parse() is parsed  # parsed once: the span's reading of it is the caller's object
    return bytes(r.read())


def _json(r: Any) -> bytes:
    return json.dumps(r.json()).encode()


def _iter_bytes(r: Any) -> bytes:
    return b"".join(r.iter_bytes(chunk_size=7))


def _iter_lines(r: Any) -> bytes:
    return "\n".join(r.iter_lines()).encode()


@pytest.mark.parametrize("read", [_read, _parse, _json, _iter_bytes, _iter_lines], ids=lambda f: f.__name__[1:])
def test_sync_a_body_read_to_its_end_gives_the_span_its_usage(server: FakeServer, read: Callable[[Any], bytes]) -> None:
    with instrumented() as t, _client(server) as client:
        with _lazy(client) as response:
            assert t.spans() == []  # open while the body is unread
            body = read(response)
            request_id = response.request_id
            assert len(t.spans()) == 1  # ended when the body ended, before the block is left
        assert response.is_closed
    _full_span(t, server, body, request_id)


def test_sync_partial_iteration_then_close_ends_the_span_once_without_usage(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        with _lazy(client) as response:
            chunks = response.iter_bytes(chunk_size=8)
            assert len(next(chunks)) == 8
            response.close()
            assert len(t.spans()) == 1
            response.close()  # idempotent; the block's exit closes it a third time
        chunks.close()
        assert len(t.spans()) == 1
    _cut_span(t, "partial")


def test_sync_a_block_left_unread_ends_the_span_once(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client, _lazy(client) as response:
        assert response.status_code == 200
    _cut_span(t, "none")


def test_sync_an_error_status_is_unchanged(server: FakeServer) -> None:
    server.set_faults([Fault.status(400, message="bad request")])
    with instrumented() as t, _client(server) as client, pytest.raises(BadRequestError), _lazy(client):
        pass
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert (a["error.type"], a["http.response.status_code"]) == ("BadRequestError", 400)
    assert "holysheep.response.read" not in a and "gen_ai.usage.input_tokens" not in a
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "BadRequestError"
    assert t.points("gen_ai.client.token.usage") == [] and t.points(COST_METRIC) == []


def test_sync_a_read_past_max_response_bytes_ends_the_span_with_its_error(server: FakeServer) -> None:
    with (instrumented() as t, _client(server, max_response_bytes=64) as client, _lazy(client) as response,
          pytest.raises(ResponseTooLargeError)):
        response.read()
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert (a["error.type"], a["holysheep.response.read"]) == ("ResponseTooLargeError", "partial")
    assert "gen_ai.usage.input_tokens" not in a and t.points("gen_ai.client.token.usage") == []


def test_an_iterated_body_past_the_copy_limit_is_not_kept_and_gives_no_usage(server: FakeServer,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(body_report, "BODY_COPY_LIMIT", 32)
    with instrumented() as t, _client(server) as client:
        with _lazy(client) as response:
            body = b"".join(response.iter_bytes(chunk_size=16))
        assert len(body) > 32
        with _lazy(client) as response:
            kept = response.read()  # read() keeps the body itself: nothing is copied, the usage is read from it
    iterated, read = t.spans()
    a = dict(iterated.attributes or {})
    assert (a["holysheep.response.read"], a["holysheep.response.unparsed"]) == ("full", "over_copy_limit")
    assert not {k for k in a if k.startswith(("gen_ai.usage.", "gen_ai.response."))}
    assert iterated.status.status_code is StatusCode.UNSET
    assert read.attributes["gen_ai.usage.output_tokens"] == OUTPUT_TOKENS
    assert read.attributes["gen_ai.response.id"] == json.loads(kept)["id"]
    tokens = {p.attributes["gen_ai.token.type"]: (p.count, p.sum) for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": (1, INPUT_TOKENS), "output": (1, OUTPUT_TOKENS)}  # the read() call only


def test_sync_embeddings_read_in_full(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client, _lazy_embeddings(client) as response:
        reply = response.parse()
    (span,) = t.spans()
    a = span.attributes
    assert span.name == "embeddings emb" and a["holysheep.response.read"] == "full"
    assert a["gen_ai.usage.input_tokens"] == reply.usage.prompt_tokens == 3 and "gen_ai.usage.output_tokens" not in a
    tokens = {p.attributes["gen_ai.token.type"]: (p.count, p.sum) for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": (1, 3)}


# ------------------------------------------------------------------------------- async: aiohttp and httpx
async def _aread(r: Any) -> bytes:
    return bytes(await r.read())


async def _aparse(r: Any) -> bytes:
    parsed = await r.parse()
    assert await r.parse() is parsed
    return bytes(await r.read())


async def _aiter_bytes(r: Any) -> bytes:
    return b"".join([chunk async for chunk in r.iter_bytes(chunk_size=7)])


async def _aiter_text(r: Any) -> bytes:
    return "".join([text async for text in r.iter_text()]).encode()


BACKENDS = ["aiohttp", "httpx"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("read", [_aread, _aparse, _aiter_bytes, _aiter_text], ids=lambda f: f.__name__[2:])
def test_async_a_body_read_to_its_end_gives_the_span_its_usage(server: FakeServer, backend: str,
                                                               read: Callable[[Any], Awaitable[bytes]]) -> None:
    async def main(t: Telemetry) -> tuple[bytes, str | None]:
        async with _async_client(server, backend) as client, _lazy(client) as r:
            assert t.spans() == []
            body = await read(r)
            assert len(t.spans()) == 1
            return body, r.request_id

    with instrumented() as t:
        body, request_id = asyncio.run(main(t))
    _full_span(t, server, body, request_id)


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_partial_iteration_then_close_ends_the_span_once_without_usage(server: FakeServer,
                                                                              backend: str) -> None:
    async def main(t: Telemetry) -> None:
        async with _async_client(server, backend) as client:
            async with _lazy(client) as r:
                chunks = r.iter_bytes(chunk_size=8)
                assert len(await chunks.__anext__()) == 8
                await r.close()
                assert len(t.spans()) == 1
                await r.aclose()
            await chunks.aclose()

    with instrumented() as t:
        asyncio.run(main(t))
    _cut_span(t, "partial")


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_a_block_left_unread_ends_the_span_once(server: FakeServer, backend: str) -> None:
    async def main() -> None:
        async with _async_client(server, backend) as client, _lazy(client) as r:
            assert r.status_code == 200

    with instrumented() as t:
        asyncio.run(main())
    _cut_span(t, "none")


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_an_error_status_is_unchanged(server: FakeServer, backend: str) -> None:
    server.set_faults([Fault.status(400, message="bad request")])

    async def main() -> None:
        async with _async_client(server, backend) as client:
            with pytest.raises(BadRequestError):
                async with _lazy(client):
                    pass

    with instrumented() as t:
        asyncio.run(main())
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert (a["error.type"], a["http.response.status_code"]) == ("BadRequestError", 400)
    assert "holysheep.response.read" not in a and t.points("gen_ai.client.token.usage") == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_a_read_past_max_response_bytes_ends_the_span_with_its_error(server: FakeServer, backend: str) -> None:
    async def main() -> None:
        async with _async_client(server, backend, max_response_bytes=64) as client, _lazy(client) as r:
            with pytest.raises(ResponseTooLargeError):
                await r.read()

    with instrumented() as t:
        asyncio.run(main())
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert (a["error.type"], a["holysheep.response.read"]) == ("ResponseTooLargeError", "partial")


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_embeddings_read_in_full(server: FakeServer, backend: str) -> None:
    async def main() -> None:
        async with _async_client(server, backend) as client, _lazy_embeddings(client) as r:
            async for _ in r.iter_bytes():
                pass

    with instrumented() as t:
        asyncio.run(main())
    (span,) = t.spans()
    assert span.name == "embeddings emb" and span.attributes["holysheep.response.read"] == "full"
    assert span.attributes["gen_ai.usage.input_tokens"] == 3
    tokens = {p.attributes["gen_ai.token.type"]: (p.count, p.sum) for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": (1, 3)}
