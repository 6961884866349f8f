"""``with_streaming_response`` on a non-stream call, against real servers on 127.0.0.1, on every transport (sync
httpx, async httpx, async aiohttp): the body is read only when asked, an unread body's connection is closed on
exit, ``parse()`` gives what ``create()`` gives, statuses are decided (retried or raised) before the response is
handed over, and the size and time bounds hold while the caller reads."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from holysheep import (
    APIResponseValidationError,
    APITimeoutError,
    BadRequestError,
    ChatCompletion,
    ResponseConsumedError,
    ResponseTooLargeError,
)

from .conftest import KEY, MESSAGES, make_client
from .hostile import HostileServer, Req, fixed, head, write_forever
from .test_secrets import assert_clean

COMPLETION = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "héllo ✓"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()


async def until(event: threading.Event, seconds: float = 10.0) -> None:
    """Wait (in the server's loop) until the test sets ``event``."""
    end = time.monotonic() + seconds
    while not event.is_set():
        if time.monotonic() > end:
            raise TimeoutError("the test never released the server")
        await asyncio.sleep(0.002)


def run(kind: str, url: str, body: Any, **client_kw: Any) -> Any:
    """Run ``body(client, is_async)`` with a client of ``kind``; the sync client's calls simply block (the server
    runs in its own thread), so one test body serves all three transports."""
    async def go() -> Any:
        client = make_client(kind, url, **client_kw)
        if kind == "sync":
            with client:
                return await body(client, False)
        async with client:
            return await body(client, True)

    return asyncio.run(go())


async def aw(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@contextlib.asynccontextmanager
async def opened(manager: Any, is_async: bool) -> AsyncIterator[Any]:
    if is_async:
        async with manager as response:
            yield response
    else:
        with manager as response:
            yield response


async def pieces(iterator: Iterator[Any] | AsyncIterator[Any]) -> AsyncIterator[Any]:
    if hasattr(iterator, "__anext__"):
        async for item in iterator:
            yield item
    else:
        for item in iterator:
            yield item


def streaming(client: Any, **kw: Any) -> Any:
    return client.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES, **kw)


def test_the_body_is_read_only_when_asked_and_streams_as_it_arrives(kind: str) -> None:
    first, second = b'{"id": "chatcmpl-1", ', b'"object": "chat.completion"}'
    send_first, send_second = threading.Event(), threading.Event()
    sent: list[bytes] = []

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: req-lazy\r\n"
                f"content-length: {len(first + second)}\r\n\r\n".encode())
        await w.drain()
        await until(send_first)  # the body is held until the test asks for it
        sent.append(first)  # noted before the write: the client may read it before drain() returns here
        w.write(first)
        await w.drain()
        await until(send_second)
        sent.append(second)
        w.write(second)
        await w.drain()

    async def body(client: Any, is_async: bool) -> None:
        # with a 5 s timeout, an SDK that read the body up front would time out here instead of returning
        async with opened(streaming(client), is_async) as response:
            assert sent == []  # create() returned with the status and headers only
            assert response.status_code == 200 and response.headers["x-request-id"] == "req-lazy"
            assert not response.is_closed
            send_first.set()
            chunks = pieces(response.iter_bytes())
            got = b""
            while len(got) < len(first):
                got += await chunks.__anext__()
            assert got == first and sent == [first]  # the first part came before the second was sent
            send_second.set()
            rest = [piece async for piece in chunks]
            assert b"".join(rest) == second
            assert response.is_closed  # read to its end: the connection went back
            with pytest.raises(ResponseConsumedError):  # iterated bodies are not kept
                await aw(response.read())

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, timeout=5)
        assert len(srv.requests) == 1


def test_leaving_the_block_unread_closes_the_connection(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(x_request_id="req-unread"))  # no length: the body runs until one side closes
        await write_forever(w, b" " * 1024, pause=0.005)

    async def body(client: Any, is_async: bool) -> None:
        for _ in range(3):
            async with opened(streaming(client), is_async) as response:
                assert response.status_code == 200
            assert response.is_closed
        assert client._backend.in_use() == 0  # nothing checked out of the pool

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body)
        assert srv.closed_by_client.wait(5), "the SDK did not close the connection"
        assert len(srv.requests) == 3


def test_parse_gives_what_create_gives_and_read_keeps_the_body(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, COMPLETION, x_request_id="req-same"))

    async def body(client: Any, is_async: bool) -> None:
        plain = await aw(client.chat.completions.create(model="m", messages=MESSAGES))
        async with opened(streaming(client), is_async) as response:
            parsed = await aw(response.parse())
            assert await aw(response.parse()) is parsed  # parsed once
            assert await aw(response.read()) == COMPLETION  # kept after parse()
            assert await aw(response.json()) == json.loads(COMPLETION)
            assert await aw(response.text()) == COMPLETION.decode()
            assert b"".join([p async for p in pieces(response.iter_bytes(chunk_size=7))]) == COMPLETION
        assert isinstance(parsed, ChatCompletion)
        assert parsed.model_dump() == plain.model_dump()
        assert parsed.request_id == plain.request_id == "req-same"
        assert parsed.choices[0].message.content == "héllo ✓" and parsed.usage is not None
        assert parsed.usage.total_tokens == 5

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body)
        assert len(srv.requests) == 2


def test_iter_lines_and_text_match_openai(kind: str) -> None:
    text = "first line\r\nsecond é line\rthird\n\nlast ✓ without end"
    raw = text.encode()
    writes = [raw[:11], raw[11:20], raw[20:22], raw[22:]]  # "\r\n" and "é" split across writes

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/plain; charset=utf-8"))
        for piece in writes:
            w.write(piece)
            await w.drain()
            await asyncio.sleep(0.01)
        w.close()

    with HostileServer(scenario) as srv:
        with openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0) as oa:
            with oa.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES) as response:
                expected_lines = list(response.iter_lines())
            with oa.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES) as response:
                expected_text = "".join(response.iter_text())

        async def body(client: Any, is_async: bool) -> None:
            async with opened(streaming(client), is_async) as response:
                assert [line async for line in pieces(response.iter_lines())] == expected_lines
            async with opened(streaming(client), is_async) as response:
                assert "".join([t async for t in pieces(response.iter_text())]) == expected_text

        run(kind, srv.url, body)
    assert expected_lines == ["first line", "second é line", "third", "", "last ✓ without end"]
    assert expected_text == text


def test_a_status_is_retried_or_raised_before_the_response_is_handed_over(kind: str) -> None:
    statuses = iter([500, 200, 400])

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        status = next(statuses)
        if status == 200:
            w.write(fixed(200, COMPLETION))
        else:
            w.write(fixed(status, json.dumps({"error": {"message": f"boom {status}", "type": "x"}}).encode()))

    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            assert response.status_code == 200 and response.retries_taken == 1  # the 500 was retried first
            assert (await aw(response.parse())).choices[0].message.content == "héllo ✓"
        entered = False
        with pytest.raises(BadRequestError, match="boom 400"):
            async with opened(streaming(client), is_async):
                entered = True
        assert not entered  # raised on entry, as a typed error, like create()

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, max_retries=1, initial_retry_delay=0)
        assert len(srv.requests) == 3


def test_a_200_without_an_answer_is_an_error_on_parse(kind: str) -> None:
    empty = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []}).encode()

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, empty))

    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            with pytest.raises(APIResponseValidationError, match="carries no answer") as info:
                await aw(response.parse())
            assert "not retried" in str(info.value) and info.value.status_code == 200
            assert await aw(response.read()) == empty

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, max_retries=2)
        assert len(srv.requests) == 1  # handed over: not retried


def test_max_response_bytes_applies_when_the_caller_reads(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head() + b'{"pad": "')
        await write_forever(w, b" " * 65536)

    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            with pytest.raises(ResponseTooLargeError, match="larger than 1048576 bytes") as info:
                await aw(response.read())
            assert info.value.limit == 1 << 20
        seen = 0
        async with opened(streaming(client), is_async) as response:
            with pytest.raises(ResponseTooLargeError):
                async for piece in pieces(response.iter_bytes()):
                    seen += len(piece)
        assert 0 < seen <= 1 << 20
        assert client._backend.in_use() == 0

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, max_response_bytes=1 << 20)
        assert srv.closed_by_client.wait(5)
        assert len(srv.requests) == 2  # never retried


def test_the_deadline_applies_to_the_server_not_to_the_caller(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        if req.path.endswith("/models"):  # a body sent at once: the caller may take its time to read it
            w.write(fixed(200, b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'))
            return
        w.write(head() + b"{")
        await write_forever(w, b" ", pause=0.02)  # a trickle: every read gets a byte, the body never ends

    async def body(client: Any, is_async: bool) -> None:
        async with opened(client.models.with_streaming_response.list(), is_async) as response:
            time.sleep(1.5)  # longer than the timeout, spent by the caller: not counted
            assert [m.id for m in await aw(response.parse())] == ["m"]
        started = time.monotonic()
        async with opened(streaming(client), is_async) as response:
            with pytest.raises(APITimeoutError, match=r"its 1 s deadline") as info:
                await aw(response.read())
        assert time.monotonic() - started < 5
        assert_clean(info.value)
        assert info.value.request is not None and info.value.request.headers["authorization"] == "Bearer hs_...WXYZ"

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body, timeout=1)
        assert srv.closed_by_client.wait(5)
        assert len(srv.requests) == 2  # the timeout while reading was not retried


def test_no_key_in_the_response_or_its_repr(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, COMPLETION))

    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            shown = [repr(response), str(response), repr(vars(response)), repr(dict(response.http_request.headers))]
            assert response.http_request.headers["authorization"] == "Bearer hs_...WXYZ"
        for text in shown:
            assert KEY not in text and KEY[3:15] not in text

    with HostileServer(scenario) as srv:
        run(kind, srv.url, body)
