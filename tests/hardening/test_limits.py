"""Size caps and time bounds against hostile servers on 127.0.0.1, on every transport."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import zlib

import pytest

from holysheep import APITimeoutError, ResponseTooLargeError, StreamIdleTimeoutError

from .conftest import chat
from .hostile import HostileServer, Req, fixed, head, write_forever

CHUNK = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]})
DEADLINE = r"the attempt took longer than its 1\.5 s deadline"
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
        # hang guard: 16x the cap, then the body ends (a client that missed the cap would fail otherwise)
        await write_forever(w, b"x" * 65536, limit=16 << 20)

    with HostileServer(scenario) as srv:
        with pytest.raises(ResponseTooLargeError) as info:
            chat(kind, srv.url, stream=True, client_kw={"max_sse_event_bytes": 1 << 20})
        assert info.value.limit == 1 << 20
        assert "max_sse_event_bytes" in str(info.value)
        assert srv.closed_by_client.wait(5), "the SDK did not close the connection"
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
        # hang guard: comments for 10 s (10x the idle limit), then the body ends without [DONE]: a client whose
        # idle clock the comments reset would raise StreamInterruptedError after 10 s, not the idle timeout
        await write_forever(w, b": keep-alive\n\n", pause=0.1, limit=100 * len(b": keep-alive\n\n"))

    with HostileServer(scenario) as srv:
        with pytest.raises(StreamIdleTimeoutError, match="no progress for 1 s"):
            chat(kind, srv.url, stream=True, stream_idle_timeout=1)
        assert srv.closed_by_client.wait(5)
        assert len(srv.requests) == 1


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
        # a byte every 0.25 s: no read ever times out. Hang guard: 60 bytes (15 s, 10x the deadline), then the
        # body ends: a client without the deadline gets a body of spaces (a JSON error), not a timeout
        await write_forever(w, b" ", pause=0.25, limit=60)

    with HostileServer(scenario) as srv:
        with pytest.raises(APITimeoutError, match=DEADLINE):
            chat(kind, srv.url, client_kw={"timeout": 1.5})
        assert srv.closed_by_client.wait(5), "the SDK did not close the connection"
        assert len(srv.requests) == 1


def test_trickled_headers_are_cut_at_the_attempt_deadline(kind: str) -> None:
    """Every transport, the sync one included: its own pool reads through a deadline-aware socket backend."""
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        # a byte every 0.25 s. Hang guard: 60 bytes (15 s, 10x the deadline), then the connection closes with
        # the head unfinished: a client without the deadline gets a connection error, not a timeout
        for byte in (b"HTTP/1.1 200 OK\r\nx-pad: " + b"a" * 100)[:60]:
            w.write(bytes([byte]))
            await w.drain()
            await asyncio.sleep(0.25)

    # the sync transport's deadline-aware socket shortens the socket timeout to the deadline: a plain "timed out"
    with HostileServer(scenario) as srv:
        with pytest.raises(APITimeoutError, match="Request timed out" if kind == "sync" else DEADLINE):
            chat(kind, srv.url, client_kw={"timeout": 1.5})
        assert len(srv.requests) == 1


def test_normal_reply_passes(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, COMPLETION))

    with HostileServer(scenario) as srv:
        assert chat(kind, srv.url, client_kw={"timeout": 2}).choices[0].message.content == "ok"


def test_attempt_deadline_does_not_cut_a_live_stream(kind: str) -> None:
    """For a stream the deadline covers the time to the headers; events that keep coming are not cut: the
    server writes 5 events, then comment lines every 0.2 s (well inside the 1 s read timeout) until the 1 s
    deadline has passed on its own clock (1.5 s), then 5 more events and [DONE]: all 10 arrive."""
    written = []

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        w.write(head(content_type="text/event-stream"))
        for i in range(10):
            if i == 5:
                while loop.time() - start < 1.5:  # past the deadline before the second half
                    w.write(b": keep-alive\n\n")
                    await w.drain()
                    await asyncio.sleep(0.2)
            w.write(f"data: {CHUNK}\n\n".encode())
            await w.drain()
            written.append(loop.time() - start)
        w.write(b"data: [DONE]\n\n")

    with HostileServer(scenario) as srv:
        chunks = chat(kind, srv.url, stream=True, client_kw={"timeout": 1})
    assert len(chunks) == 10 and len(srv.requests) == 1
    assert len(written) == 10 and all(t >= 1.5 for t in written[5:])  # half of them sent after the deadline


def test_a_server_holding_the_connection_after_done_is_not_waited_for(kind: str) -> None:
    """After [DONE] the client returns while the server still holds the body open (it holds it until the test
    lets go, or 30 s as a hang guard): the result came back without waiting for the end of the body."""
    let_go, gave_up = threading.Event(), threading.Event()

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + f"data: {CHUNK}\n\ndata: [DONE]\n\n".encode())
        await w.drain()
        for _ in range(300):  # the body does not end until the test lets go
            if let_go.is_set():
                return
            await asyncio.sleep(0.1)
        gave_up.set()

    with HostileServer(scenario) as srv:
        chunks = chat(kind, srv.url, stream=True)  # default timeout: 600 s per read
        held = not gave_up.is_set()  # the body was still open when the client returned
        let_go.set()
    assert held, "the client waited for the end of the body after [DONE]"
    assert len(chunks) == 1 and len(srv.requests) == 1
