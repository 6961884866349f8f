"""Traces join: the GenAI span is the current span while its request is sent, so the propagated
``traceparent`` carries its id and HTTP-client spans nest under it, on sync httpx, async httpx and aiohttp,
for a create and a stream (FakeServer on 127.0.0.1 records the headers)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer, Fault

from .otel_util import Telemetry, instrumented

MESSAGES = [{"role": "user", "content": "hi"}]
TRANSPORTS = ["sync-httpx", "async-httpx", "aiohttp"]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(reply="a b c") as s:
        yield s


def _ids(header: str) -> tuple[int, int]:
    version, trace_id, span_id, flags = header.split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    return int(trace_id, 16), int(span_id, 16)


def _call(server: FakeServer, transport: str, stream: bool, t: Telemetry, seen: list[Any]) -> None:
    """One call inside a caller's span; ``seen`` gets the current span at each HTTP send (httpx event hook)."""
    tracer = t.tracer_provider.get_tracer("app")

    def record(request: httpx.Request) -> None:
        seen.append(trace.get_current_span())

    async def arecord(request: httpx.Request) -> None:
        record(request)

    kw: dict[str, Any] = {"api_key": server.api_key, "base_url": server.url, "initial_retry_delay": 0}
    with tracer.start_as_current_span("caller"):
        if transport == "sync-httpx":
            with httpx.Client(event_hooks={"request": [record]}) as http_client, \
                    Client(**kw, http_client=http_client) as client:  # the caller's http_client is the caller's
                if stream:
                    assert "".join(c.choices[0].delta.content or "" for c in
                                   client.chat.completions.create(model="m", messages=MESSAGES, stream=True)) == "a b c"
                else:
                    client.chat.completions.create(model="m", messages=MESSAGES)
            return

        async def main() -> None:
            http_client = None if transport == "aiohttp" else httpx.AsyncClient(event_hooks={"request": [arecord]})
            extra: dict[str, Any] = {"http_backend": "aiohttp"} if http_client is None else {"http_client": http_client}
            async with contextlib.AsyncExitStack() as stack:
                if http_client is not None:
                    await stack.enter_async_context(http_client)  # closed by its owner, the caller
                client = await stack.enter_async_context(AsyncClient(**kw, **extra))
                if stream:
                    text = [c.choices[0].delta.content or "" async for c in
                            await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)]
                    assert "".join(text) == "a b c"
                else:
                    await client.chat.completions.create(model="m", messages=MESSAGES)

        asyncio.run(main())


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_traceparent_is_the_genai_span_and_http_spans_nest_under_it(server: FakeServer, transport: str,
                                                                    stream: bool) -> None:
    seen: list[Any] = []
    with instrumented() as t:
        _call(server, transport, stream, t, seen)
    genai, caller = t.spans()
    assert (genai.name, caller.name) == ("chat m", "caller")
    assert genai.parent is not None and genai.parent.span_id == caller.context.span_id  # joins the caller's trace
    (request,) = server.requests
    assert _ids(request.headers["traceparent"]) == (genai.context.trace_id, genai.context.span_id)
    if transport != "aiohttp":  # what an HTTP-client instrumentation sees as its parent
        assert [s.get_span_context().span_id for s in seen] == [genai.context.span_id]
    assert trace.get_current_span() is trace.INVALID_SPAN  # left current nowhere after the call


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_attempt_carries_the_same_span(server: FakeServer, transport: str) -> None:
    server.set_faults([Fault.status(429, retry_after=0)])
    with instrumented() as t:
        _call(server, transport, False, t, [])
    genai, _ = t.spans()
    assert [r.status for r in server.requests] == [429, 200]
    expected = (genai.context.trace_id, genai.context.span_id)
    assert [_ids(r.headers["traceparent"]) for r in server.requests] == [expected, expected]
    assert [e.name for e in genai.events] == ["holysheep.retry"]


def test_without_instrumentation_no_traceparent_is_sent(server: FakeServer) -> None:
    with Client(api_key=server.api_key, base_url=server.url) as client:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert "traceparent" not in server.requests[0].headers


def test_a_hook_cannot_replace_the_sdk_headers(server: FakeServer) -> None:
    refused: list[str] = []

    class SetsHeaders:
        def on_request(self, event: Any) -> None:
            event.set_header("X-Trace-Extra", "1")
            for name in ("Authorization", "idempotency-key", "x-holysheep-retry-count"):
                with pytest.raises(ValueError, match="the SDK writes it"):
                    event.set_header(name, "forged")
                refused.append(name)

    with Client(api_key=server.api_key, base_url=server.url, hooks=[SetsHeaders()]) as client:
        client.chat.completions.create(model="m", messages=MESSAGES)
    headers = server.requests[0].headers
    assert headers["x-trace-extra"] == "1" and headers["authorization"] == f"Bearer {server.api_key}"
    assert len(refused) == 3
