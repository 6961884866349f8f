"""``with_streaming_response`` with ``stream=True``, against real servers on 127.0.0.1, on every transport (sync
httpx, async httpx, async aiohttp): ``read()``/``text()``/``iter_bytes()``/``iter_text()``/``iter_lines()`` give
the server-sent events' bytes exactly as sent (and the lines openai-python gives for the same server), ``parse()``
the event stream, using one after the other raises `ResponseConsumedError` (except ``parse()`` after a whole
``read()``: test_streaming_response_sse_parse.py), the hooks hear one ``on_stream_end``,
and a hostile server costs bounded memory and time."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import openai
import pytest

from holysheep import (
    APIStreamError,
    APITimeoutError,
    AsyncStream,
    ChatCompletionChunk,
    Hooks,
    InvalidRequestError,
    ResponseConsumedError,
    ResponseTooLargeError,
    Stream,
    StreamIdleTimeoutError,
    StreamInterruptedError,
)

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, head, write_forever
from .test_streaming_response import aw, opened, pieces, run, streaming


def _event(content: str | None = None, finish: str | None = None, usage: bool = False) -> bytes:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    chunk: dict[str, Any] = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "m",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        chunk["choices"] = []
        chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"


# a comment line, CRLF endings, an empty line run, and multi-byte text split across writes
BODY = (b": keep-alive\n\n" + _event("h\u00e9llo").replace(b"\n\n", b"\r\n\r\n") + _event(" \u2713 world")
        + _event(finish="stop") + _event(usage=True) + b"data: [DONE]\n\n")
CUTS = [5, 20, 41, 42, len(BODY) - 30, len(BODY) - 3]  # 41/42: inside "é" and the CRLF, then near the end
WRITES = [BODY[a:b] for a, b in zip([0, *CUTS], [*CUTS, len(BODY)], strict=True)]


async def sse(req: Req, w: asyncio.StreamWriter) -> None:
    w.write(head(content_type="text/event-stream; charset=utf-8", x_request_id="req-sse"))
    for piece in WRITES:
        w.write(piece)
        await w.drain()
        await asyncio.sleep(0.005)
    w.close()


def sse_stream(client: Any, **kw: Any) -> Any:
    return streaming(client, stream=True, **kw)


def openai_reads() -> tuple[list[str], bytes, str]:
    """What openai-python's with_streaming_response gives for the same server: lines, bytes, text."""
    with HostileServer(sse) as srv, openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0) as oa:
        create = oa.chat.completions.with_streaming_response.create
        with create(model="m", messages=MESSAGES, stream=True) as response:
            lines = list(response.iter_lines())
        with create(model="m", messages=MESSAGES, stream=True) as response:
            data = b"".join(response.iter_bytes())
        with create(model="m", messages=MESSAGES, stream=True) as response:
            text = "".join(response.iter_text())
    return lines, data, text


def test_the_raw_body_is_what_the_server_sent_and_what_openai_gives(kind: str) -> None:
    lines, data, text = openai_reads()
    assert data == BODY and text == BODY.decode()
    assert lines[:3] == [": keep-alive", "", _event("h\u00e9llo")[:-2].decode()]
    got: dict[str, Any] = {}

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            assert response.status_code == 200 and response.request_id == "req-sse"
            got["lines"] = [line async for line in pieces(response.iter_lines())]
            assert response.is_closed
        async with opened(sse_stream(client), is_async) as response:
            got["bytes"] = b"".join([p async for p in pieces(response.iter_bytes())])
        async with opened(sse_stream(client), is_async) as response:
            got["chunks7"] = [p async for p in pieces(response.iter_bytes(chunk_size=7))]
        async with opened(sse_stream(client), is_async) as response:
            got["text"] = "".join([t async for t in pieces(response.iter_text())])
        async with opened(sse_stream(client), is_async) as response:
            got["read"] = await aw(response.read())
            assert await aw(response.read()) is got["read"]  # kept
            assert await aw(response.text()) == BODY.decode()
            assert b"".join([p async for p in pieces(response.iter_bytes())]) == BODY  # again, from the kept body

    with HostileServer(sse) as srv:
        run(kind, srv.url, body)
        assert len(srv.requests) == 5
    assert got["lines"] == lines
    assert got["bytes"] == got["read"] == BODY
    assert got["text"] == text
    assert b"".join(got["chunks7"]) == BODY and {len(c) for c in got["chunks7"][:-1]} == {7}


def test_parse_still_gives_the_stream(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            stream = await aw(response.parse())
            assert isinstance(stream, AsyncStream if is_async else Stream)
            assert await aw(response.parse(to=AsyncStream if is_async else Stream)) is stream
            chunks = [c async for c in pieces(stream)]
            assert all(isinstance(c, ChatCompletionChunk) for c in chunks)
            assert stream.text == "h\u00e9llo \u2713 world"
            with pytest.raises(InvalidRequestError, match="only be its stream class") as info:
                await aw(response.parse(to=str))
            assert "iter_lines()" in str(info.value)

    with HostileServer(sse) as srv:
        run(kind, srv.url, body)


def test_one_or_the_other_never_silently_empty(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        # events first, then the raw body
        async with opened(sse_stream(client), is_async) as response:
            stream = await aw(response.parse())
            await aw(stream.__anext__() if is_async else next(stream))
            with pytest.raises(ResponseConsumedError, match="events were iterated"):
                await aw(response.read())
            with pytest.raises(ResponseConsumedError):
                async for _ in pieces(response.iter_lines()):
                    pass
        async with opened(sse_stream(client), is_async) as response:  # to its end: never the first piece alone
            assert len([c async for c in pieces(await aw(response.parse()))]) == 4
            with pytest.raises(ResponseConsumedError, match="events were iterated"):
                await aw(response.read())
        # the raw body first (part of it), then the events
        async with opened(sse_stream(client), is_async) as response:
            lines = pieces(response.iter_lines())
            assert await lines.__anext__() == ": keep-alive"
            with pytest.raises(ResponseConsumedError, match="raw body was iterated"):
                await aw(response.parse())
        # parse() without iterating, then the raw body iterated (not kept): the stream object refuses to iterate
        async with opened(sse_stream(client), is_async) as response:
            stream = await aw(response.parse())
            assert b"".join([p async for p in pieces(response.iter_bytes())]) == BODY
            with pytest.raises(ResponseConsumedError, match="events are gone"):
                await aw(stream.__anext__() if is_async else next(stream))
            with pytest.raises(ResponseConsumedError, match="events are gone"):  # every time, not once
                await aw(stream.__anext__() if is_async else next(stream))
        # iterated raw bodies are not kept; a closed response has no body left
        async with opened(sse_stream(client), is_async) as response:
            assert b"".join([p async for p in pieces(response.iter_bytes())]) == BODY
            with pytest.raises(ResponseConsumedError):
                await aw(response.read())
        async with opened(sse_stream(client), is_async) as response:
            await aw(response.close())
            with pytest.raises(ResponseConsumedError):
                await aw(response.read())
        assert client._backend.in_use() == 0

    with HostileServer(sse) as srv:
        run(kind, srv.url, body)


class Recorder(Hooks):
    def __init__(self) -> None:
        self.ends: list[Any] = []
        self.bodies: list[Any] = []

    def on_stream_end(self, event: Any) -> None:
        self.ends.append(event)

    def on_body_end(self, event: Any) -> None:  # pragma: no cover - a stream's end is on_stream_end
        self.bodies.append(event)


def test_the_hooks_hear_one_stream_end(kind: str) -> None:
    recorder = Recorder()

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            assert await aw(response.read()) == BODY
        (end,) = recorder.ends
        assert end.error is None and not end.closed  # read to its end: what the parsed stream would report
        assert end.text == "h\u00e9llo \u2713 world" and end.usage is not None and end.usage.total_tokens == 5
        assert end.finish_reasons == ["stop"] and end.chunks == 4
        async with opened(sse_stream(client), is_async) as response:
            lines = pieces(response.iter_lines())
            assert await lines.__anext__() == ": keep-alive"
        assert len(recorder.ends) == 2 and recorder.ends[1].closed and recorder.ends[1].error is None
        assert recorder.ends[1].usage is None  # left part way: no usage guessed
        assert recorder.bodies == []

    with HostileServer(sse) as srv:
        run(kind, srv.url, body, hooks=[recorder])


def test_a_cut_or_failing_stream_is_the_hooks_error_not_the_callers(kind: str) -> None:
    recorder = Recorder()
    cut = _event("partial")
    error = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    bodies = iter([b"", error])

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + cut)
        await w.drain()
        await asyncio.sleep(0.05)  # after the hand-over (an error in the first event is raised: test below)
        w.write(next(bodies))
        await w.drain()
        w.close()

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            assert await aw(response.read()) == cut  # the bytes as sent: the cut is visible in them
        async with opened(sse_stream(client), is_async) as response:
            assert [line async for line in pieces(response.iter_lines())] == [cut[:-2].decode(), "",
                                                                            error[:-2].decode(), ""]

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, hooks=[recorder])
    first, second = recorder.ends
    assert isinstance(first.error, StreamInterruptedError) and "cut off" in str(first.error)
    assert "overloaded" in str(second.error) and not second.closed


def test_read_is_bounded_by_max_response_bytes(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        await write_forever(w, _event("x" * 1000))  # events forever: a valid, endless stream

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            with pytest.raises(ResponseTooLargeError, match="larger than 262144 bytes"):
                await aw(response.read())
            assert response.is_closed
        assert client._backend.in_use() == 0

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, max_response_bytes=1 << 18)
        assert srv.closed_by_client.wait(5)


def test_an_endless_line_is_bounded_by_max_sse_event_bytes(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + _event("hi") + b"data: ")
        await write_forever(w, b"y" * 4096)  # a line that never ends

    async def body(client: Any, is_async: bool) -> None:
        seen = 0
        async with opened(sse_stream(client), is_async) as response:
            with pytest.raises(ResponseTooLargeError):
                async for piece in pieces(response.iter_bytes()):
                    seen += len(piece)
        assert seen <= (1 << 16) + 65536  # the cap, plus at most one read (none: the cap hit before the hand-over)
        assert client._backend.in_use() == 0

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, max_sse_event_bytes=1 << 16)
        assert srv.closed_by_client.wait(5)


def test_stream_idle_timeout_counts_events_not_bytes(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + _event("hi"))
        await write_forever(w, b": padding\n", pause=0.02)  # bytes, never an event

    async def body(client: Any, is_async: bool) -> None:
        started = time.monotonic()
        async with opened(sse_stream(client, stream_idle_timeout=0.3), is_async) as response:
            with pytest.raises(StreamIdleTimeoutError, match=r"no progress for 0.3 s"):
                async for _ in pieces(response.iter_lines()):
                    pass
        assert time.monotonic() - started < 5
        assert client._backend.in_use() == 0

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body)
        assert srv.closed_by_client.wait(5)


def test_a_silent_server_is_a_timeout(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + _event("hi"))
        await w.drain()
        await asyncio.sleep(10)

    async def body(client: Any, is_async: bool) -> None:
        started = time.monotonic()
        async with opened(sse_stream(client, stream_idle_timeout=0.3), is_async) as response:
            with pytest.raises(APITimeoutError):
                await aw(response.read())
        assert time.monotonic() - started < 5

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body)


def test_an_error_in_the_first_event_is_raised(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + b'data: {"error": {"message": "no such model"}}\n\n')
        await w.drain()
        w.close()

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            with pytest.raises(APIStreamError, match="no such model"):  # as iterating parse()'s stream would
                await aw(response.read())

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body)


def test_what_is_kept_before_the_hand_over_is_bounded(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        await write_forever(w, b": padding, never an event\n" * 100)  # kept for the raw body until the first event

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:
            with pytest.raises(ResponseTooLargeError, match="larger than 65536 bytes"):
                await aw(response.read())
            assert response.is_closed
        assert client._backend.in_use() == 0

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, max_response_bytes=1 << 16)
        assert srv.closed_by_client.wait(5)
