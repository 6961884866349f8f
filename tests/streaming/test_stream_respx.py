"""Streams against respx: chunks, folding, usage chunk, error events, interruptions, retries, closing."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from typing import Any

import httpx
import pytest
import respx

from holysheep import (
    APIStreamError,
    APITimeoutError,
    AsyncClient,
    AsyncStream,
    ChatCompletionChunk,
    Client,
    InternalServerError,
    Stream,
    StreamIdleTimeoutError,
    StreamInterruptedError,
)

from ..core.conftest import BASE, KEY, MESSAGES
from .conftest import BODY, WORDS, PartsStream, chunk, sse, sse_response

URL = f"{BASE}/chat/completions"


def consume(kind: str, *, final: bool = False, **create: Any) -> tuple[list[ChatCompletionChunk], Any]:
    """Stream with the sync or async client; return the chunks and (final completion or the stream)."""
    create.setdefault("model", "deepseek-v3.2")
    create.setdefault("messages", MESSAGES)
    if kind == "sync":
        with Client(api_key=KEY, initial_retry_delay=0) as client:
            stream = client.chat.completions.create(stream=True, **create)
            assert isinstance(stream, Stream)
            with stream:
                got = list(stream)
            return got, stream.get_final_completion() if final else stream

    async def main() -> tuple[list[ChatCompletionChunk], Any]:
        async with AsyncClient(api_key=KEY, initial_retry_delay=0) as client:
            stream = await client.chat.completions.create(stream=True, **create)
            assert isinstance(stream, AsyncStream)
            async with stream:
                got = [c async for c in stream]
            return got, (await stream.get_final_completion()) if final else stream

    return asyncio.run(main())


def test_stream_chunks_and_final(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(URL).mock(return_value=sse_response(BODY))
    chunks, final = consume(kind, final=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello there, friend!"
    assert len(chunks) == 7
    assert final.choices[0].message.content == "Hello there, friend!"
    assert final.choices[0].finish_reason == "stop"
    assert final.request_id == "req_s"
    assert (final.retries_taken, final.served_by) == (0, "primary")
    assert final.elapsed_s > 0  # from the request to the stream's end (exact: test_stream_clock.py)
    assert copy.deepcopy(final).request_id == pickle.loads(pickle.dumps(final)).request_id == "req_s"
    assert json.loads(route.calls.last.request.content)["stream"] is True


def test_include_usage_empty_choices_chunk(kind: str, respx_mock: respx.MockRouter) -> None:
    usage = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
             "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}}
    respx_mock.post(URL).mock(return_value=sse_response(BODY[:-len(b"data: [DONE]\n\n")], sse(usage, "[DONE]")))
    chunks, final = consume(kind, final=True, stream_options={"include_usage": True})
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert final.usage.total_tokens == 14
    assert final.choices[0].message.content == "Hello there, friend!"


def test_tool_calls_are_folded(kind: str, respx_mock: respx.MockRouter) -> None:
    tc1 = [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]
    tc2 = [{"index": 0, "function": {"arguments": '{"city": '}}]
    tc3 = [{"index": 0, "function": {"arguments": '"Paris"}'}}]
    tc4 = [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "now", "arguments": "{}"}}]
    body = sse(chunk(role="assistant"), chunk(tool_calls=tc1), chunk(tool_calls=tc2), chunk(tool_calls=tc3),
               chunk(tool_calls=tc4), chunk(finish="tool_calls"), "[DONE]")
    respx_mock.post(URL).mock(return_value=sse_response(body))
    _, final = consume(kind, final=True)
    calls = final.choices[0].message.tool_calls
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_1", "get_weather", '{"city": "Paris"}'), ("call_2", "now", "{}")]
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.choices[0].message.content is None


def test_error_event_raises_api_stream_error(kind: str, respx_mock: respx.MockRouter) -> None:
    err = {"error": {"message": "model overloaded", "type": "server_error", "code": "overloaded"}}
    respx_mock.post(URL).mock(return_value=sse_response(sse(chunk("Hel"), chunk("lo"), err)))
    with pytest.raises(APIStreamError) as info:
        consume(kind)
    e = info.value
    assert (e.type, e.code, e.partial_text) == ("server_error", "overloaded", "Hello")
    assert "model overloaded" in str(e)
    assert not hasattr(e, "status_code")


def test_midstream_reset_is_typed_with_partial_text(kind: str, respx_mock: respx.MockRouter) -> None:
    respx_mock.post(URL).mock(return_value=sse_response(
        sse(chunk("Hel"), chunk("lo")), httpx.RemoteProtocolError("peer closed connection: incomplete chunked read")))
    with pytest.raises(StreamInterruptedError) as info:
        consume(kind)
    assert info.value.partial_text == "Hello"
    assert isinstance(info.value.__cause__, httpx.RemoteProtocolError)


def test_midstream_stall_raises_idle_timeout(kind: str, respx_mock: respx.MockRouter) -> None:
    respx_mock.post(URL).mock(return_value=sse_response(sse(chunk("Hi")), httpx.ReadTimeout("timed out")))
    with pytest.raises(StreamIdleTimeoutError) as info:
        consume(kind, stream_idle_timeout=0.5)
    assert isinstance(info.value, APITimeoutError) and isinstance(info.value, StreamInterruptedError)
    assert info.value.partial_text == "Hi"
    assert "0.5 s" in str(info.value)
    sent = respx_mock.calls.last.request
    assert sent.extensions["timeout"]["read"] == 0.5


def test_eof_before_done_without_finish_is_interrupted(kind: str, respx_mock: respx.MockRouter) -> None:
    respx_mock.post(URL).mock(return_value=sse_response(sse(chunk("partial"))))
    with pytest.raises(StreamInterruptedError) as info:
        consume(kind)
    assert info.value.partial_text == "partial"


def test_failure_before_first_event_is_retried(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(URL).mock(side_effect=[
        httpx.Response(503, json={"error": {"message": "busy"}}), httpx.ConnectError("refused"),
        sse_response(BODY)])
    _, final = consume(kind, final=True)
    assert route.call_count == 3
    assert final.choices[0].message.content == "Hello there, friend!"


def test_status_error_on_stream_is_typed(kind: str, respx_mock: respx.MockRouter) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(500, json={"error": {"message": "x"}}))
    with pytest.raises(InternalServerError):
        consume(kind, max_retries=0)


def test_break_closes_the_response(respx_mock: respx.MockRouter) -> None:
    body = PartsStream(*[sse(chunk(w)) for w in WORDS], sse("[DONE]"))
    respx_mock.post(URL).mock(return_value=httpx.Response(200, stream=body))
    with Client(api_key=KEY) as client:
        with client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as stream:
            for c in stream:
                assert c.choices[0].delta.content == "Hello"
                break
        assert stream.response.is_closed and body.closed
        assert stream.metrics.chunks == 1


def test_exception_in_loop_closes_the_response(respx_mock: respx.MockRouter) -> None:
    body = PartsStream(*[sse(chunk(w)) for w in WORDS])
    respx_mock.post(URL).mock(return_value=httpx.Response(200, stream=body))
    with Client(api_key=KEY) as client:
        with pytest.raises(KeyError):  # noqa: SIM117
            with client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as stream:
                for _ in stream:
                    raise KeyError("user bug")
        assert stream.response.is_closed and body.closed


def test_async_break_closes_the_response(respx_mock: respx.MockRouter) -> None:
    body = PartsStream(*[sse(chunk(w)) for w in WORDS], sse("[DONE]"))
    respx_mock.post(URL).mock(return_value=httpx.Response(200, stream=body))

    async def main() -> None:
        async with AsyncClient(api_key=KEY) as client:
            async with await client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as s:
                async for _ in s:
                    break
            assert s.response.is_closed and body.closed

    asyncio.run(main())


def test_metrics_and_elapsed(respx_mock: respx.MockRouter) -> None:
    respx_mock.post(URL).mock(return_value=sse_response(BODY))
    _, stream = consume("sync")
    m = stream.metrics
    assert m.chunks == 7 and m.completion_tokens == 5
    assert m.ttft_s is not None and m.total_s is not None and m.total_s >= m.ttft_s
    assert m.itl_mean_s is not None and m.tokens_per_s is not None and m.tokens_per_s > 0


def test_malformed_event_is_typed(kind: str, respx_mock: respx.MockRouter) -> None:
    from holysheep import APIResponseValidationError

    respx_mock.post(URL).mock(return_value=sse_response(sse(chunk("ok ")), b'data: {"id": "x", "choi\n\n'))
    with pytest.raises(APIResponseValidationError) as info:
        consume(kind)
    assert info.value.partial_text == "ok " and info.value.status_code == 200
