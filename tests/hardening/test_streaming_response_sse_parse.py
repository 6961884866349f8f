"""``with_streaming_response`` with ``stream=True``: ``parse()`` after the raw body was read, against real servers on
127.0.0.1 on every transport (sync httpx, async httpx, async aiohttp), compared with openai-python's own client on
the same server. A body ``read()`` whole is kept, and the stream gives the events decoded from it (the same chunks
openai-python gives; the hooks heard one ``on_stream_end`` during the read, and no more); a raw body iterated (not
kept), to its end or part way, is a `ResponseConsumedError` on ``parse()`` that says what to do."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from holysheep import (
    APIStreamError,
    AsyncStream,
    Hooks,
    ResponseConsumedError,
    Stream,
    StreamInterruptedError,
)

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, head
from .test_streaming_response import aw, opened, pieces, run
from .test_streaming_response_sse import BODY, _event, sse, sse_stream


def _dumped(chunks: list[Any]) -> list[dict[str, Any]]:
    return [c.model_dump(exclude_none=True) for c in chunks]


def openai_parsed_after_read() -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """openai-python on the same server: read() then parse(); parse() then read(), then the stream; and what a
    second pass over the stream gives."""
    with HostileServer(sse) as srv, openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0) as oa:
        create = oa.chat.completions.with_streaming_response.create
        with create(model="m", messages=MESSAGES, stream=True) as response:
            assert response.read() == BODY
            stream = response.parse()
            first = _dumped(list(stream))
            again = len(list(response.parse()))
        with create(model="m", messages=MESSAGES, stream=True) as response:
            stream = response.parse()
            response.read()
            second = _dumped(list(stream))
    assert first == second
    return first, second, again


class Recorder(Hooks):
    def __init__(self) -> None:
        self.ends: list[Any] = []
        self.firsts = 0

    def on_stream_first_chunk(self, event: Any) -> None:
        self.firsts += 1

    def on_stream_end(self, event: Any) -> None:
        self.ends.append(event)


def test_parse_after_read_gives_the_events_of_the_kept_body_as_openai_does(kind: str) -> None:
    expected, _, again = openai_parsed_after_read()
    assert len(expected) == 4 and again == 0
    recorder = Recorder()
    got: dict[str, Any] = {}

    async def body(client: Any, is_async: bool) -> None:
        cls = AsyncStream if is_async else Stream
        async with opened(sse_stream(client), is_async) as response:
            assert await aw(response.read()) == BODY
            assert len(recorder.ends) == 1  # the read heard the end
            stream = await aw(response.parse())
            assert isinstance(stream, cls) and await aw(response.parse(to=cls)) is stream
            got["read_parse"] = _dumped([c async for c in pieces(stream)])
            assert [c async for c in pieces(await aw(response.parse()))] == []  # one pass, as openai's
            assert stream.text == "h\u00e9llo \u2713 world"
            metrics = stream.metrics  # the stream's state timed the bytes as they arrived (during the read)
            assert metrics.ttft_s is not None and metrics.total_s is not None and metrics.completion_tokens == 2
            final = await aw(stream.get_final_completion())
            assert final.choices[0].message.content == "h\u00e9llo \u2713 world"
            assert final.usage is not None and final.usage.total_tokens == 5
            assert await aw(response.read()) == BODY  # still kept for the raw methods
        async with opened(sse_stream(client), is_async) as response:  # parse() first, then read(): the same
            stream = await aw(response.parse())
            assert await aw(response.text()) == BODY.decode()
            got["parse_read"] = _dumped([c async for c in pieces(stream)])
        assert client._backend.in_use() == 0

    with HostileServer(sse) as srv:
        run(kind, srv.url, body, hooks=[recorder])
        assert len(srv.requests) == 2
    assert got["read_parse"] == expected and got["parse_read"] == expected
    assert len(recorder.ends) == 2 and recorder.firsts == 2  # one on_stream_end a stream: the replay adds none
    for end in recorder.ends:
        assert end.error is None and not end.closed and end.chunks == 4
        assert end.usage is not None and end.usage.total_tokens == 5 and end.text == "h\u00e9llo \u2713 world"


def test_a_raw_body_iterated_is_not_kept_so_parse_says_so(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:  # to its end
            assert b"".join([p async for p in pieces(response.iter_bytes())]) == BODY
            with pytest.raises(ResponseConsumedError, match=r"not kept.*Call read\(\) first"):
                await aw(response.parse())
        async with opened(sse_stream(client), is_async) as response:  # part way
            lines = pieces(response.iter_lines())
            assert await lines.__anext__() == ": keep-alive"
            with pytest.raises(ResponseConsumedError, match="part way"):
                await aw(response.parse())
            with pytest.raises(ResponseConsumedError):  # nor can read() keep what was handed out
                await aw(response.read())
        assert client._backend.in_use() == 0

    with HostileServer(sse) as srv:
        run(kind, srv.url, body)


def test_the_kept_body_raises_what_the_stream_would(kind: str) -> None:
    recorder = Recorder()
    cut = _event("partial")
    error = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    bodies = iter([b"", error])

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + cut)
        await w.drain()
        await asyncio.sleep(0.05)
        w.write(next(bodies))
        await w.drain()
        w.close()

    async def body(client: Any, is_async: bool) -> None:
        async with opened(sse_stream(client), is_async) as response:  # cut off: the events, then the error
            assert await aw(response.read()) == cut
            stream = pieces(await aw(response.parse()))
            assert (await stream.__anext__()).choices[0].delta.content == "partial"
            with pytest.raises(StreamInterruptedError, match="cut off") as info:
                await stream.__anext__()
            assert info.value.partial_text == "partial"
        async with opened(sse_stream(client), is_async) as response:  # an error event
            assert await aw(response.read()) == cut + error
            stream = pieces(await aw(response.parse()))
            assert (await stream.__anext__()).choices[0].delta.content == "partial"
            with pytest.raises(APIStreamError, match="overloaded"):
                await stream.__anext__()

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, hooks=[recorder])
    first, second = recorder.ends  # heard during the reads, once each
    assert isinstance(first.error, StreamInterruptedError) and "overloaded" in str(second.error)
