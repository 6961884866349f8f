"""``with_streaming_response`` with ``stream=True`` whose raw body the caller reads (``read()``/``iter_lines()``)
instead of the events, under the instrumentor, against a FakeServer on 127.0.0.1, on sync httpx, async aiohttp
(the default) and async httpx: the call's one span ends at the end of the body with the usage the bytes
carried, or ``closed_early`` when the ``with`` block is left part way or unread, or with the typed error a
connection cut raised to the caller."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import StatusCode

from holysheep import APIConnectionError, AsyncClient, Client
from holysheep.testing import FakeServer, Fault

from .conftest import MODEL
from .otel_util import Telemetry, instrumented

WORDS = [{"role": "user", "content": "one two three four"}]  # the FakeServer echoes it


def _lines(server: FakeServer) -> list[str]:
    """What the server sends: its own SSE body, read with httpx (no SDK in between)."""
    import httpx

    body = {"model": MODEL, "messages": WORDS, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{server.url}/chat/completions", json=body,
                      headers={"authorization": f"Bearer {server.api_key}"}) as response:
        return list(response.iter_lines())


def _same(lines: list[str]) -> list[str]:
    # an id and a time stamp per request
    return [re.sub(r'"created":\d+', '"created":0', re.sub(r"chatcmpl-[0-9a-f]+", "chatcmpl-ID", line))
            for line in lines]


def _full(t: Telemetry, lines: list[str], got: list[str]) -> None:
    assert _same(got) == _same(lines) and len(got) > 8
    usage = next(json.loads(line[6:])["usage"] for line in lines if line.startswith("data: {") and
                 json.loads(line[6:]).get("usage"))
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.UNSET and "holysheep.stream.closed_early" not in a
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (
        usage["prompt_tokens"], usage["completion_tokens"])
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1


def _closed(t: Telemetry) -> None:
    """One span, closed early. (Its usage is what the SDK had read before the hand-over: with a fast server that
    may be the whole body already, as for a parsed stream closed after its first chunk.)"""
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert a["holysheep.stream.closed_early"] is True and span.status.status_code is StatusCode.UNSET
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1


def _create(client: Any) -> Any:
    return client.chat.completions.with_streaming_response.create(
        model=MODEL, messages=WORDS, stream=True, stream_options={"include_usage": True})


def test_sync_raw_sse_read_to_its_end_gives_the_span_its_usage(server: FakeServer) -> None:
    lines = _lines(server)
    with instrumented() as t, Client(api_key=server.api_key, base_url=server.url) as client, \
            _create(client) as response:
        got = list(response.iter_lines())
        assert len(t.spans()) == 1  # ended at the end of the body, not later
    _full(t, lines, got)


def test_sync_raw_sse_left_part_way_or_unread_ends_the_span_once(server: FakeServer) -> None:
    for how in ("part", "unread"):
        with instrumented() as t, Client(api_key=server.api_key, base_url=server.url) as client:
            with _create(client) as response:
                if how == "part":
                    assert next(response.iter_lines()).startswith("data: {")
                assert t.spans() == []
            assert response.is_closed
        _closed(t)


def test_sync_a_connection_cut_mid_raw_read_ends_the_span_with_the_error(server: FakeServer) -> None:
    server.set_faults([Fault.stream_cut(after_events=2)])  # the connection drops inside the chunked body
    got = []
    with instrumented() as t, Client(api_key=server.api_key, base_url=server.url, max_retries=0) as client, \
            _create(client) as response, pytest.raises(APIConnectionError, match="incomplete chunked read"):
        for line in response.iter_lines():  # typed, and not retried
            got.append(line)
    assert [line[:6] for line in got] == ["data: ", "", "data: ", ""]
    (span,) = t.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "APIConnectionError"
    assert len(server.requests) == 1


Body = Callable[[AsyncClient], Awaitable[Any]]


def _run_async(server: FakeServer, backend: str, body: Body) -> Any:
    async def main() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, http_backend=backend) as client:
            return await body(client)

    return asyncio.run(main())


@pytest.mark.parametrize("backend", ["aiohttp", "httpx"])
def test_async_raw_sse_read_to_its_end_gives_the_span_its_usage(server: FakeServer, backend: str) -> None:
    lines = _lines(server)

    async def body(client: AsyncClient) -> list[str]:
        async with _create(client) as response:
            return [line async for line in response.iter_lines()]

    with instrumented() as t:
        got = _run_async(server, backend, body)
    _full(t, lines, got)


@pytest.mark.parametrize("backend", ["aiohttp", "httpx"])
def test_async_raw_sse_left_part_way_or_unread_ends_the_span_once(server: FakeServer, backend: str) -> None:
    for how in ("part", "unread"):
        async def body(client: AsyncClient, how: str = how) -> None:
            async with _create(client) as response:
                if how == "part":
                    async for line in response.iter_lines():
                        assert line.startswith("data: {")
                        break
            assert response.is_closed

        with instrumented() as t:
            _run_async(server, backend, body)
        _closed(t)
