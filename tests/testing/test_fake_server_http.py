"""HTTP/1.1 details on raw sockets: keep-alive, pipelining, framing, bad requests, connection accounting."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from holysheep.testing import FakeServer

from .conftest import chat_body, client_for
from .rawhttp import connect, read_response, request_bytes


def test_keep_alive_serves_many_requests_on_one_connection(server: FakeServer) -> None:
    with connect(server.port) as sock, sock.makefile("rb") as f:
        for i in range(3):
            sock.sendall(request_bytes("POST", "/v1/chat/completions", server.api_key, chat_body(f"n{i}")))
            status, headers, body, complete = read_response(f)
            assert (status, complete) == (200, True)
            assert "connection" not in headers
            assert f'"content":"n{i}"'.encode() in body
    assert server.connections_total == 1
    assert len(server.requests) == 3


def test_pipelined_requests_are_answered_in_order(server: FakeServer) -> None:
    with connect(server.port) as sock, sock.makefile("rb") as f:
        requests = [
            request_bytes("POST", "/v1/chat/completions", server.api_key, chat_body(f"p{i}"))
            for i in range(4)
        ]
        sock.sendall(b"".join(requests))
        for i in range(4):
            assert f'"content":"p{i}"'.encode() in read_response(f)[2]


def test_connection_close_is_honoured(server: FakeServer) -> None:
    with connect(server.port) as sock, sock.makefile("rb") as f:
        sock.sendall(request_bytes("GET", "/v1/models", server.api_key, Connection="close"))
        status, headers, _, _ = read_response(f)
        assert (status, headers["connection"]) == (200, "close")
        assert f.read() == b""  # server closed


def test_http10_closes_by_default(server: FakeServer) -> None:
    with connect(server.port) as sock, sock.makefile("rb") as f:
        sock.sendall(f"GET /v1/models HTTP/1.0\r\nAuthorization: Bearer {server.api_key}\r\n\r\n".encode())
        assert read_response(f)[0] == 200
        assert f.read() == b""


def test_chunked_request_body_and_expect_continue(server: FakeServer) -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"chunked body"}]}'
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        f"{server.api_key}\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
    )
    with connect(server.port) as sock, sock.makefile("rb") as f:
        sock.sendall(head.encode())
        assert f.readline() == b"HTTP/1.1 100 Continue\r\n"
        assert f.readline() == b"\r\n"
        sock.sendall(b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (10, body[:10], len(body) - 10, body[10:]))
        status, _, data, _ = read_response(f)
    assert status == 200
    assert b'"content":"chunked body"' in data
    assert server.requests[0].raw_body == body


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /v1/models HTTP/1.1\r\nbad header line\r\n\r\n", 400),
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400),
        (b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"GET /v1/models HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    ],
)
def test_malformed_requests_get_an_error_and_close(server: FakeServer, raw: bytes, status: int) -> None:
    with connect(server.port) as sock, sock.makefile("rb") as f:
        sock.sendall(raw)
        got, headers, body, _ = read_response(f)
        assert (got, headers["connection"]) == (status, "close")
        assert b'"type":"invalid_request_error"' in body
        assert f.read() == b""
    assert server.wait_idle(2)


def test_client_disconnect_mid_request_is_harmless(server: FakeServer) -> None:
    with connect(server.port) as sock:
        sock.sendall(b'POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"par')
    assert server.wait_idle(2)
    with client_for(server) as c:
        assert c.get("/models").status_code == 200


def test_open_connections_return_to_zero(server: FakeServer) -> None:
    with client_for(server) as c:
        c.get("/models")
        assert server.open_connections == 1
    assert server.wait_idle(2)
    assert server.open_connections == 0


def test_stop_closes_every_open_connection() -> None:
    server = FakeServer().start()
    socks = [connect(server.port) for _ in range(5)]
    try:
        for s in socks:
            s.sendall(request_bytes("GET", "/v1/models", server.api_key))
            s.makefile("rb").close()
        deadline = time.monotonic() + 2
        while server.open_connections < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.open_connections == 5
        server.stop()
        assert server.open_connections == 0
        for s in socks:
            s.settimeout(2)
            try:
                data = s.recv(1 << 20)  # the response, then EOF
                while data:
                    data = s.recv(1 << 20)
            except ConnectionResetError:
                pass
    finally:
        server.stop()
        for s in socks:
            s.close()


async def test_in_flight_counts_concurrent_requests() -> None:
    """Held at the server, 24 concurrent requests are all in flight at once (an exact count, not a race
    against the latency); released, all 24 are answered and the count returns to 0."""
    with FakeServer() as server:
        headers = {"Authorization": f"Bearer {server.api_key}"}
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as c:
            server.hold()
            task = asyncio.gather(*(c.post("/chat/completions", json=chat_body(str(i))) for i in range(24)))
            assert await asyncio.to_thread(server.wait_in_flight, 24, 30)
            assert (server.in_flight, server.max_in_flight, len(server.requests)) == (24, 24, 24)
            assert all(r.status is None and r.finished_at is None for r in server.requests)  # none answered
            server.release()
            responses = await task
        assert [r.status_code for r in responses] == [200] * 24
        assert [r.json()["choices"][0]["message"]["content"] for r in responses] == [str(i) for i in range(24)]
        assert await asyncio.to_thread(server.wait_idle, 30)  # a request leaves in_flight once its reply is out
        assert (server.max_in_flight, server.in_flight) == (24, 0)
        server.reset()
        assert server.max_in_flight == 0


def test_hold_then_release_answers_what_was_held(server: FakeServer) -> None:
    server.hold()
    server.hold()  # idempotent
    with client_for(server, timeout=30) as c:
        done: list[int] = []
        thread = threading.Thread(target=lambda: done.append(c.get("/models").status_code))
        thread.start()
        assert server.wait_in_flight(1, 30)
        assert done == [] and server.requests[0].status is None
        server.release()
        thread.join(30)
        assert done == [200]
        assert c.get("/models").status_code == 200  # released: later requests are not held
    server.release()  # nothing held: a no-op
    assert server.wait_idle(30)
    assert server.wait_in_flight(0, 0) and not server.wait_in_flight(1, 0)


async def test_batch_shape_load_is_served_exactly() -> None:
    """Batch-shaped load (2,000 requests, a pool of 64, 50 ms latency): every request is answered with its
    own echo, exactly 64 are in flight at once (held until all 64 arrived), never more, over 64 keep-alive
    connections. How close the wall time comes to the ideal is a benchmark (benchmarks/fake_server.py)."""
    aiohttp = pytest.importorskip("aiohttp")
    n, concurrency = 2000, 64
    with FakeServer(latency=0.05) as server:
        headers = {"Authorization": f"Bearer {server.api_key}"}
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
            queue = list(range(n))
            answered: list[str] = []

            async def worker() -> None:
                while queue:
                    i = queue.pop()
                    async with session.post(server.url + "/chat/completions", json=chat_body(str(i))) as r:
                        assert r.status == 200
                        answered.append((await r.json())["choices"][0]["message"]["content"])
                        assert answered[-1] == str(i)

            server.hold()
            workers = asyncio.gather(*(worker() for _ in range(concurrency)))
            assert await asyncio.to_thread(server.wait_in_flight, concurrency, 60)
            assert (server.in_flight, len(server.requests)) == (concurrency, concurrency)
            server.release()
            await asyncio.wait_for(workers, 120)
        assert sorted(answered, key=int) == [str(i) for i in range(n)]
        assert len(server.requests) == n and all(r.status == 200 for r in server.requests)
        assert server.max_in_flight == concurrency
        assert server.connections_total == concurrency
