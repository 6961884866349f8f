"""Stream metrics on an injected clock: exact TTFT, time to first reasoning/content, inter-token latency, total
and throughput. The server's schedule is written on the client's clock (``client._use_clock``): each float in
the body is the time the server takes before its next part, so the metrics are exact numbers, not bands."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import respx

from holysheep import AsyncClient, Client, StreamInterruptedError, StreamMetrics

from ..core.conftest import BASE, KEY, MESSAGES
from .conftest import FakeClock, chunk, clocked_reply, sse

URL = f"{BASE}/chat/completions"
WORDS = ["Hello", " there", ", ", "friend", "!"]

# The server answers 0.25 s after the request, sends a role-only chunk (no output) 0.125 s later, then the five
# words with the gaps below, the finish chunk and [DONE]. On the client's clock (the attempt starts at 0.0):
#   headers 0.25, role 0.375, words 0.5 / 0.5625 / 0.625 / 0.75 / 0.8125, finish 0.875, [DONE] 1.0
GAPS = [0.0625, 0.0625, 0.125, 0.0625]
SCHEDULE: list[bytes | float | Exception] = [
    0.125, sse(chunk(role="assistant", content="")),
    0.125, sse(chunk(WORDS[0])),
    GAPS[0], sse(chunk(WORDS[1])),
    GAPS[1], sse(chunk(WORDS[2])),
    GAPS[2], sse(chunk(WORDS[3])),
    GAPS[3], sse(chunk(WORDS[4])),
    0.0625, sse(chunk(finish="stop")),
    0.125, sse("[DONE]"),
]
EXPECTED = StreamMetrics(
    ttft_s=0.5, itl_mean_s=0.078125, itl_p50_s=0.0625, itl_p95_s=0.0625 + 0.0625 * (0.95 * 3 - 2),
    chunks=7, completion_tokens=5, total_s=1.0, tokens_per_s=5.0,
    time_to_first_reasoning_s=None, time_to_first_content_s=0.5,
)


def stream_on_clock(kind: str, clock: FakeClock, seen: list[Any] | None = None, **create: Any
                    ) -> tuple[str, Any, Any]:
    """Stream with a client of ``kind`` on ``clock``: (text, stream, final completion); ``seen`` gets the stream
    as soon as it is handed out (for a stream that fails)."""
    seen = [] if seen is None else seen
    create.setdefault("model", "deepseek-v3.2")
    create.setdefault("messages", MESSAGES)
    if kind == "sync":
        with Client(api_key=KEY, initial_retry_delay=0) as client:
            client._use_clock(clock)
            with client.chat.completions.create(stream=True, **create) as stream:
                seen.append(stream)
                text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            return text, stream, stream.get_final_completion()

    async def main() -> tuple[str, Any, Any]:
        async with AsyncClient(api_key=KEY, initial_retry_delay=0) as client:
            client._use_clock(clock)
            async with await client.chat.completions.create(stream=True, **create) as stream:
                seen.append(stream)
                text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            return text, stream, await stream.get_final_completion()

    return asyncio.run(main())


def test_metrics_are_exact_on_the_clients_clock(kind: str, respx_mock: respx.MockRouter) -> None:
    clock = FakeClock()
    respx_mock.post(URL).mock(side_effect=clocked_reply(clock, 0.25, *SCHEDULE))
    text, stream, final = stream_on_clock(kind, clock)
    assert text == "Hello there, friend!"
    assert stream.metrics == EXPECTED
    assert final.elapsed_s == 1.0  # request -> [DONE]


def test_a_retried_stream_measures_from_the_attempt_that_served(kind: str, respx_mock: respx.MockRouter) -> None:
    """The first attempt fails after 0.5 s; the metrics run from the second attempt's start (t=0.5)."""
    clock = FakeClock()

    def fail(request: httpx.Request) -> httpx.Response:
        clock.advance(0.5)
        return httpx.Response(500, json={"error": {"message": "busy"}})

    respx_mock.post(URL).mock(side_effect=[fail, clocked_reply(clock, 0.25, *SCHEDULE)])
    _, stream, final = stream_on_clock(kind, clock)
    assert stream.retries_taken == 1
    assert stream.metrics == EXPECTED
    assert final.elapsed_s == 1.0
    assert clock.now == 1.5


def test_usage_tokens_set_the_throughput(kind: str, respx_mock: respx.MockRouter) -> None:
    """``completion_tokens`` comes from the usage chunk when the server sends one: 10 tokens over 1.25 s."""
    clock = FakeClock()
    usage = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
             "usage": {"prompt_tokens": 3, "completion_tokens": 10, "total_tokens": 13}}
    respx_mock.post(URL).mock(side_effect=clocked_reply(clock, 0.25, *SCHEDULE[:-2], 0.375, sse(usage, "[DONE]")))
    _, stream, _ = stream_on_clock(kind, clock, stream_options={"include_usage": True})
    m = stream.metrics
    assert (m.completion_tokens, m.total_s, m.tokens_per_s, m.chunks) == (10, 1.25, 8.0, 8)
    assert (m.ttft_s, m.itl_mean_s) == (0.5, 0.078125)


def test_a_stream_cut_mid_way_ends_its_clock_at_the_cut(kind: str, respx_mock: respx.MockRouter) -> None:
    """Three words, then the connection drops 0.25 s later: total_s ends at the failure (0.875)."""
    clock = FakeClock()
    cut = [*SCHEDULE[:8], 0.25, httpx.ReadError("connection reset")]
    respx_mock.post(URL).mock(side_effect=clocked_reply(clock, 0.25, *cut))
    seen: list[Any] = []
    with pytest.raises(StreamInterruptedError) as info:
        stream_on_clock(kind, clock, seen)
    assert info.value.partial_text == "Hello there, "
    assert seen[0].metrics == StreamMetrics(
        ttft_s=0.5, itl_mean_s=0.0625, itl_p50_s=0.0625, itl_p95_s=0.0625, chunks=4, completion_tokens=3,
        total_s=0.875, tokens_per_s=3 / 0.875, time_to_first_reasoning_s=None, time_to_first_content_s=0.5)


def test_reasoning_then_content_on_the_clients_clock(kind: str, respx_mock: respx.MockRouter) -> None:
    """Reasoning at 0.5 and 0.625, the answer at 1.0: time to first reasoning 0.5, to first content 1.0."""
    clock = FakeClock()

    def think(text: str) -> dict[str, Any]:
        body = chunk()
        body["choices"][0]["delta"]["reasoning_content"] = text
        return body

    respx_mock.post(URL).mock(side_effect=clocked_reply(
        clock, 0.25, 0.25, sse(think("Let me ")), 0.125, sse(think("think.")), 0.375, sse(chunk("Four.")),
        0.25, sse(chunk(finish="stop"), "[DONE]")))
    text, stream, final = stream_on_clock(kind, clock)
    assert text == "Four." and final.choices[0].message.reasoning_content == "Let me think."
    assert stream.metrics == StreamMetrics(
        ttft_s=0.5, itl_mean_s=0.25, itl_p50_s=0.25, itl_p95_s=0.125 + 0.25 * 0.95,
        chunks=4, completion_tokens=3, total_s=1.25, tokens_per_s=3 / 1.25,
        time_to_first_reasoning_s=0.5, time_to_first_content_s=1.0)


def test_with_options_keeps_the_clock(respx_mock: respx.MockRouter) -> None:
    clock = FakeClock()
    respx_mock.post(URL).mock(side_effect=clocked_reply(clock, 0.25, *SCHEDULE))
    with Client(api_key=KEY) as client:
        client._use_clock(clock)
        copy = client.with_options(max_retries=0)
        assert copy.config.clock is clock
        with copy.chat.completions.create(model="m", messages=MESSAGES, stream=True) as stream:
            list(stream)
    assert stream.metrics == EXPECTED
