"""The hook events' times on an injected clock (``client._use_clock``): exact ``elapsed_s`` for each attempt's
outcome, a stream's first chunk and end, a fallback, and a tool call; the OpenTelemetry duration, time to first
chunk and time per output chunk are those exact numbers. respx answers on the client's clock (each reply
advances it by the server's time), so nothing here depends on how fast the machine is."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import respx

from holysheep import AsyncClient, Client, Fallback, StreamMetrics
from holysheep.testing import FakeServer, Script

from ..core.conftest import BASE, COMPLETION, KEY
from ..streaming.conftest import FakeClock, chunk, clocked_reply, sse
from .conftest import MESSAGES, Recorder

URL = f"{BASE}/chat/completions"
FALLBACK = "https://fallback.example/v1"

# A stream whose server answers 0.25 s after the request: role-only chunk 0.125 s later, the first word 0.125 s
# after that, four more words 0.0625 s apart, the finish chunk and [DONE] (1.0 s after the attempt started).
SCHEDULE: list[bytes | float | Exception] = [
    0.125, sse(chunk(role="assistant", content="")), 0.125, sse(chunk("a")),
    *[x for w in "bcde" for x in (0.0625, sse(chunk(w)))],
    0.0625, sse(chunk(finish="stop")), 0.1875, sse("[DONE]"),
]


def after(clock: FakeClock, seconds: float, response: httpx.Response) -> Any:
    """A respx side effect: the server takes ``seconds`` (on ``clock``) to answer ``response``."""

    def reply(request: httpx.Request) -> httpx.Response:
        clock.advance(seconds)
        return response

    return reply


def busy(clock: FakeClock, seconds: float) -> Any:
    return after(clock, seconds, httpx.Response(500, json={"error": {"message": "busy"}}))


def call(kind: str, clock: FakeClock, recorder: Recorder, *, stream: bool = False, **client_kw: Any) -> Any:
    """One create (a stream is read to its end) on a client of ``kind`` running on ``clock``."""
    client_kw = {"api_key": KEY, "initial_retry_delay": 0, "hooks": [recorder], **client_kw}
    if kind == "sync":
        with Client(**client_kw) as client:
            client._use_clock(clock)
            result = client.chat.completions.create(model="m", messages=MESSAGES, stream=stream)
            if stream:
                with result:
                    list(result)
            return result

    async def main() -> Any:
        async with AsyncClient(**client_kw) as client:
            client._use_clock(clock)
            result = await client.chat.completions.create(model="m", messages=MESSAGES, stream=stream)
            if stream:
                async with result:
                    [c async for c in result]
            return result

    return asyncio.run(main())


def test_each_outcome_carries_the_exact_time_since_the_first_attempt(kind: str, respx_mock: respx.MockRouter,
                                                                      recorder: Recorder) -> None:
    """A 500 after 0.25 s, then a 200 after 0.5 s: the retry at 0.25, the success at 0.75; the response's own
    ``elapsed_s`` is its attempt's (0.5)."""
    clock = FakeClock()
    respx_mock.post(URL).mock(side_effect=[busy(clock, 0.25), after(clock, 0.5, httpx.Response(200, json=COMPLETION))])
    resp = call(kind, clock, recorder)
    outcomes = [(e.outcome, e.attempt, e.elapsed_s) for e in recorder.of("on_response")]
    assert outcomes == [("retry", 1, 0.25), ("success", 2, 0.75)]
    assert resp.elapsed_s == 0.5
    assert recorder.events[0][1].ctx.started_at == 0.0


def test_a_streams_first_chunk_and_end_times_are_exact(kind: str, respx_mock: respx.MockRouter,
                                                       recorder: Recorder) -> None:
    """A 500 after 0.25 s, then the stream: its first chunk (the role chunk) at 0.625, [DONE] at 1.25 from the
    call's start; its metrics run from the attempt that served (0.25)."""
    clock = FakeClock()
    respx_mock.post(URL).mock(side_effect=[busy(clock, 0.25), clocked_reply(clock, 0.25, *SCHEDULE)])
    stream = call(kind, clock, recorder, stream=True)
    assert recorder.names() == ["on_request", "on_response", "on_request", "on_response", "on_stream_first_chunk",
                                "on_stream_end"]
    retry, success = recorder.of("on_response")
    (first,), (end,) = recorder.of("on_stream_first_chunk"), recorder.of("on_stream_end")
    assert (retry.elapsed_s, success.elapsed_s, first.elapsed_s, end.elapsed_s) == (0.25, 0.625, 0.625, 1.25)
    expected = StreamMetrics(ttft_s=0.5, itl_mean_s=0.0625, itl_p50_s=0.0625, itl_p95_s=0.0625, chunks=7,
                             completion_tokens=5, total_s=1.0, tokens_per_s=5.0, time_to_first_reasoning_s=None,
                             time_to_first_content_s=0.5)
    assert end.metrics == stream.metrics == expected


def test_a_fallback_runs_on_the_same_clock(respx_mock: respx.MockRouter, recorder: Recorder) -> None:
    """The primary fails after 0.25 s (no retries), the fallback answers 0.5 s later: one clock for the call."""
    clock = FakeClock()
    respx_mock.post(URL).mock(side_effect=busy(clock, 0.25))
    respx_mock.post(f"{FALLBACK}/chat/completions").mock(
        side_effect=after(clock, 0.5, httpx.Response(200, json=COMPLETION)))
    resp = call("sync", clock, recorder, max_retries=0, fallbacks=[Fallback(FALLBACK, name="local")])
    outcomes = [(e.outcome, e.served_by, e.elapsed_s) for e in recorder.of("on_response")]
    assert outcomes == [("fallback", "primary", 0.25), ("success", "local", 0.75)]
    assert (resp.served_by, resp.elapsed_s) == ("local", 0.5)


class ToolRecorder(Recorder):
    def on_tool_start(self, event: Any) -> None:
        self.events.append(("on_tool_start", event))

    def on_tool_end(self, event: Any) -> None:
        self.events.append(("on_tool_end", event))


def test_a_tool_calls_elapsed_is_the_tool_runners_clock(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool takes 0.75 s on the tool runner's clock: ``ToolEvent.elapsed_s`` and the record's
    ``duration_s`` are both exactly that."""
    from holysheep._engine import tool_calls

    clock = FakeClock()
    monkeypatch.setattr(tool_calls, "clock", clock)

    def slow(city: str) -> str:
        """The weather.

        Args:
            city: The city.
        """
        clock.advance(0.75)
        return f"sunny in {city}"

    recorder = ToolRecorder()
    script = Script([{"match": "w", "replies": [{"tool_calls": [{"name": "slow", "arguments": {"city": "Oslo"}}]},
                                                "done"]}])
    with FakeServer(reply=script) as server:
        kw: dict[str, Any] = {"api_key": server.api_key, "base_url": server.url, "hooks": [recorder]}
        args: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "w"}], "tools": [slow]}
        if kind == "sync":
            with Client(**kw) as client:
                result = client.chat.completions.run_tools(**args)
        else:
            async def main() -> Any:
                async with AsyncClient(**kw) as client:
                    return await client.chat.completions.run_tools(**args)

            result = asyncio.run(main())
    (end,) = recorder.of("on_tool_end")
    assert (end.name, end.result, end.elapsed_s) == ("slow", "sunny in Oslo", 0.75)
    assert result.tool_calls[0].duration_s == 0.75


def test_otel_durations_are_the_exact_clock_times(respx_mock: respx.MockRouter, recorder: Recorder) -> None:
    """With the instrumentor: a call's duration, a stream's time to first chunk and time per output chunk are
    the hook times above, to the bit."""
    pytest.importorskip("opentelemetry.sdk")
    from .otel_util import instrumented

    clock = FakeClock()
    respx_mock.post(URL).mock(side_effect=[after(clock, 0.5, httpx.Response(200, json=COMPLETION)),
                                           busy(clock, 0.25), clocked_reply(clock, 0.25, *SCHEDULE)])
    with instrumented() as t:
        call("sync", clock, recorder)
        start = clock.now
        call("sync", clock, recorder, stream=True)
    (duration,) = t.points("gen_ai.client.operation.duration")  # both calls have the same attributes
    assert start == 0.5 and (duration.count, duration.min, duration.max, duration.sum) == (2, 0.5, 1.25, 1.75)
    (ttfc,) = t.points("gen_ai.client.operation.time_to_first_chunk")
    (tpoc,) = t.points("gen_ai.client.operation.time_per_output_chunk")
    assert (ttfc.count, ttfc.sum) == (1, 0.625)
    # one value per output chunk after the first: "b" to "e", each 0.0625 after the one before
    assert (tpoc.count, tpoc.sum, tpoc.min, tpoc.max) == (4, 0.25, 0.0625, 0.0625)
