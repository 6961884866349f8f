"""Issue 45, item 11: a stream's caps count what the wire delivers, not only text. Against hostile servers on
127.0.0.1 (small caps, so each case is quick): events that each open a new empty choice, empty tool calls,
padding that brings no text, endless keep-alive events; each ends in a typed error, the connection closed and
the call not retried. Keep-alive events (``choices: []``) do not reset ``stream_idle_timeout``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from holysheep import StreamIdleTimeoutError, StreamTooLargeError
from holysheep._core import stream_bounds
from holysheep._core.stream_bounds import CHOICE_COST, MAX_CHOICES, MAX_TOOL_CALLS, TOOL_CALL_COST, wire_caps
from holysheep._core.stream_state import StreamState

from .conftest import chat
from .hostile import HostileServer, Req, head

CAP = 10_000  # max_stream_text_bytes in these tests


def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices, **extra}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def serve(events: list[bytes], pause: float = 0.0) -> HostileServer:
    """A server that writes ``events`` (then ``[DONE]``) and notes whether the client hung up first."""
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        for data in events:
            w.write(data)
            if pause:
                await w.drain()
                await asyncio.sleep(pause)
        w.write(b"data: [DONE]\n\n")
        await w.drain()
        w.close()

    return HostileServer(scenario)


def over(kind: str, srv: HostileServer, **client_kw: Any) -> StreamTooLargeError:
    with pytest.raises(StreamTooLargeError) as info:
        chat(kind, srv.url, stream=True, client_kw={"max_stream_text_bytes": CAP, **client_kw})
    assert len(srv.requests) == 1  # never retried
    return info.value


def test_events_that_each_open_a_new_choice_stop_at_the_choice_cap(kind: str) -> None:
    events = [event([{"index": i, "delta": {"content": ""}}]) for i in range(MAX_CHOICES + 50)]
    with serve(events) as srv:
        error = over(kind, srv, max_stream_text_bytes=10 << 20)  # the text cap is far: the choice cap stops it
    assert f"{MAX_CHOICES} choices" in str(error) and f"after {MAX_CHOICES + 1} chunks" in str(error)  # the 129th


def test_each_new_choice_costs_its_share_of_the_text_cap(kind: str) -> None:
    events = [event([{"index": i, "delta": {"role": "assistant"}}]) for i in range(MAX_CHOICES)]
    with serve(events) as srv:
        error = over(kind, srv)
    fits = 1 + (CAP - len("assistant")) // (CHOICE_COST + len("assistant"))  # the first choice is free
    assert "max_stream_text_bytes" in str(error) and f"after {fits + 1} chunks" in str(error)  # 38 fit, not 128


def test_empty_tool_calls_are_charged_and_capped(kind: str) -> None:
    calls = [event([{"index": 0, "delta": {"tool_calls": [{"index": i}]}}]) for i in range(200)]
    with serve(calls) as srv:
        error = over(kind, srv)
    assert f"after {CAP // TOOL_CALL_COST + 1} chunks" in str(error)  # 39 calls fit in 10,000 bytes, not 1,250


def test_tool_calls_past_the_count_cap_stop_the_stream() -> None:
    state = StreamState(0.0, max_text_bytes=1 << 30)
    payload = event([{"index": 0, "delta": {"tool_calls": [{"index": i} for i in range(MAX_TOOL_CALLS + 1)]}}])
    with pytest.raises(StreamTooLargeError, match=f"{MAX_TOOL_CALLS} tool calls"):
        state.feed(payload)


def test_padding_that_brings_no_text_stops_at_the_body_cap(kind: str) -> None:
    pad = "x" * 60_000
    events = [event([{"index": 0, "delta": {"content": "a"}}], pad=pad) for _ in range(60)]  # 3.6 MB, 60 bytes
    _, wire = wire_caps(CAP // 100)
    with serve(events) as srv:
        error = over(kind, srv, max_stream_text_bytes=CAP // 100)
    assert f"{wire} bytes of body" in str(error)


def test_events_past_the_event_cap_stop_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_bounds, "EVENT_SLACK", 50)
    state = StreamState(0.0, max_text_bytes=20)
    keep_alive = event([])
    with pytest.raises(StreamTooLargeError, match="70 SSE events"):
        for _ in range(71):
            state.feed(keep_alive)
    assert state.events == 71 and state.progress == 0


def test_keep_alive_events_are_not_progress() -> None:
    state = StreamState(0.0)
    state.feed(event([]) * 3 + event([{"index": 0, "delta": {"content": ""}}]))
    assert (state.events, state.progress) == (4, 0)
    state.feed(event([{"index": 0, "delta": {"content": "hi"}}]))
    state.feed(event([], usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}))
    assert (state.events, state.progress) == (6, 2)


def test_keep_alive_events_do_not_reset_the_idle_timeout(kind: str) -> None:
    events = [event([{"index": 0, "delta": {"role": "assistant", "content": "hi"}}])] + [event([])] * 60
    with serve(events, pause=0.05) as srv:  # 3 s of keep-alives, one each 50 ms
        with pytest.raises(StreamIdleTimeoutError) as info:
            chat(kind, srv.url, stream=True, client_kw={"stream_idle_timeout": 0.5})
        assert srv.closed_by_client.wait(5), "the SDK did not close the connection"
    assert info.value.partial_text == "hi" and len(srv.requests) == 1


@pytest.mark.parametrize("body", [b"[" + b"[]," * 400_000 + b"[]]",
                                  b'{"id": "x", "choices": [' + b"1," * 600_000 + b"1]}"])
def test_a_body_of_tiny_arrays_or_elements_is_refused_unread(body: bytes) -> None:
    from holysheep import APIResponseValidationError, APIStatusError

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        status = 400 if req.headers.get("x-status") == "400" else 200
        w.write(head(status, **{"content_length": str(len(body))}) + body)

    with HostileServer(scenario) as srv:
        with pytest.raises(APIResponseValidationError, match="JSONTooDenseError: the JSON holds"):
            chat("sync", srv.url)
        with pytest.raises(APIStatusError) as info:  # an error body: kept as text, never decoded
            chat("sync", srv.url, extra_headers={"x-status": "400"})
    assert isinstance(info.value.body, str) and len(info.value.body) <= 2000
    assert len(srv.requests) == 2


def test_keep_alive_events_do_not_reset_the_idle_timeout_of_a_raw_body() -> None:
    from .conftest import MESSAGES, make_client

    events = [event([{"index": 0, "delta": {"role": "assistant", "content": "hi"}}])] + [event([])] * 60
    with serve(events, pause=0.05) as srv, make_client("sync", srv.url, stream_idle_timeout=0.5) as client, \
            client.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES,
                                                                    stream=True) as response, \
            pytest.raises(StreamIdleTimeoutError, match=r"no progress for 0\.5 s"):
        for _ in response.iter_bytes():
            pass
