"""Size caps and time bounds against hostile servers on 127.0.0.1, on every transport."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import zlib

import pytest

from holysheep import APITimeoutError, ResponseTooLargeError, StreamIdleTimeoutError

from .conftest import chat
from .hostile import HostileServer, Req, fixed, head, write_forever

CHUNK = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]})
COMPLETION = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                      "finish_reason": "stop"}]}).encode()


def gzip_zeros(n: int) -> bytes:
    comp = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1 << 20)
    parts = [comp.compress(block) for _ in range(n >> 20)]
    return b"".join(parts) + comp.flush()


# --- SSE: a line with no end, an event too big, comments that must not reset the idle clock -----------


def test_endless_sse_line_is_too_large_and_closes_the_connection(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + b"data: ")
        await write_forever(w, b"x" * 65536)

    with HostileServer(scenario) as srv:
        started = time.monotonic()
        with pytest.raises(ResponseTooLargeError) as info:
            chat(kind, srv.url, stream=True, client_kw={"max_sse_event_bytes": 1 << 20})
        assert info.value.limit == 1 << 20
        assert "max_sse_event_bytes" in str(info.value)
        assert srv.closed_by_client.wait(5), "the SDK did not close the connection"
        assert time.monotonic() - started < 10
        assert len(srv.requests) == 1  # not retried


def test_sse_event_of_many_lines_is_capped(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        await write_forever(w, b"data: " + b"y" * 1000 + b"\n")

    with HostileServer(scenario) as srv:
        with pytest.raises(ResponseTooLargeError, match="event is larger than 262144"):
            chat(kind, srv.url, stream=True, client_kw={"max_sse_event_bytes": 1 << 18})
        assert srv.closed_by_client.wait(5)


def test_gzip_sse_bomb_is_capped(kind: str) -> None:
    body = gzip.compress(b"data: " + b"z" * (64 << 20), compresslevel=1)  # 64 MiB line, ~100 KB on the wire

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream", content_encoding="gzip") + body)

    with HostileServer(scenario) as srv, pytest.raises(ResponseTooLargeError):
        chat(kind, srv.url, stream=True, client_kw={"max_sse_event_bytes": 1 << 20})


def test_comment_lines_do_not_reset_stream_idle_timeout(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + f"data: {CHUNK}\n\n".encode())
        await write_forever(w, b": keep-alive\n\n", pause=0.1)

    with HostileServer(scenario) as srv:
        started = time.monotonic()
        with pytest.raises(StreamIdleTimeoutError, match="no event for 1 s"):
            chat(kind, srv.url, stream=True, stream_idle_timeout=1)
        assert time.monotonic() - started < 5
        assert srv.closed_by_client.wait(5)


# --- non-stream bodies: max_response_bytes after decompression --------------------------------------


def test_large_json_body_is_refused_while_reading(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head() + b'{"pad": "')
        await write_forever(w, b" " * 65536)

    with HostileServer(scenario) as srv:
        with pytest.raises(ResponseTooLargeError, match="larger than 1048576 bytes") as info:
            chat(kind, srv.url, client_kw={"max_response_bytes": 1 << 20})
        assert info.value.limit == 1 << 20
        assert srv.closed_by_client.wait(5)
        assert len(srv.requests) == 1


@pytest.mark.parametrize("status", [200, 500])
def test_gzip_bomb_body_is_refused(kind: str, status: int) -> None:
    bomb = gzip_zeros(32 << 20)

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(status, bomb, content_encoding="gzip"))

    with HostileServer(scenario) as srv, pytest.raises(ResponseTooLargeError):
        chat(kind, srv.url, client_kw={"max_response_bytes": 4 << 20})


def test_gzip_body_under_the_limit_is_decoded(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, gzip.compress(COMPLETION), content_encoding="gzip"))

    with HostileServer(scenario) as srv:
        result = chat(kind, srv.url)
    assert result.choices[0].message.content == "ok"


# --- time: a per-attempt deadline, whatever the server trickles --------------------------------------


def test_trickled_body_is_cut_at_the_attempt_deadline(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head())
        await write_forever(w, b" ", pause=0.25)  # a byte every 0.25 s: no read ever times out

    with HostileServer(scenario) as srv:
        started = time.monotonic()
        with pytest.raises(APITimeoutError, match="deadline"):
            chat(kind, srv.url, client_kw={"timeout": 1.5})
        elapsed = time.monotonic() - started
    assert elapsed < 3.0, elapsed


def test_trickled_headers_are_cut_at_the_attempt_deadline(kind: str) -> None:
    """Every transport, the sync one included: its own pool reads through a deadline-aware socket backend."""
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nx-pad: " + b"a" * 100:
            w.write(bytes([byte]))
            await w.drain()
            await asyncio.sleep(0.25)

    with HostileServer(scenario) as srv:
        started = time.monotonic()
        with pytest.raises(APITimeoutError):
            chat(kind, srv.url, client_kw={"timeout": 1.5})
        elapsed = time.monotonic() - started
    assert elapsed < 3.0, elapsed


def test_normal_reply_passes(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, COMPLETION))

    with HostileServer(scenario) as srv:
        assert chat(kind, srv.url, client_kw={"timeout": 2}).choices[0].message.content == "ok"


def test_attempt_deadline_does_not_cut_a_live_stream(kind: str) -> None:
    """For a stream the deadline covers the time to the headers; events that keep coming are not cut."""
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        for _ in range(10):
            w.write(f"data: {CHUNK}\n\n".encode())
            await w.drain()
            await asyncio.sleep(0.2)
        w.write(b"data: [DONE]\n\n")

    with HostileServer(scenario) as srv:
        started = time.monotonic()
        chunks = chat(kind, srv.url, stream=True, client_kw={"timeout": 1})
        assert time.monotonic() - started > 1.5
    assert len(chunks) == 10


def test_a_server_holding_the_connection_after_done_is_not_waited_for(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + f"data: {CHUNK}\n\ndata: [DONE]\n\n".encode())
        await w.drain()
        await asyncio.sleep(30)  # the body never ends

    with HostileServer(scenario) as srv:
        started = time.monotonic()
        chunks = chat(kind, srv.url, stream=True)  # default timeout: 600 s per read
        assert time.monotonic() - started < 3
    assert len(chunks) == 1
