"""Integration: the clients against a real HTTP server on 127.0.0.1 that the test starts and stops."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from holysheep import AsyncClient, AuthenticationError, Client, RateLimitError

from .conftest import COMPLETION, KEY, MESSAGES


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.server.log.append((self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
        script = self.server.script
        status, headers, payload = script.pop(0) if script else (200, {}, COMPLETION)
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in {"content-type": "application/json", "x-request-id": "req_local", **headers}.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    log: list[tuple[str, dict[str, str], Any]]
    script: list[tuple[int, dict[str, str], Any]]


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.log, srv.script = [], []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def _url(srv: _Server) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/v1"


def _pool_busy(client: Client | AsyncClient) -> int:
    busy: int = client._backend.in_use()
    return busy


def test_json_401_and_429_sync(server: _Server) -> None:
    with Client(api_key=KEY, base_url=_url(server), initial_retry_delay=0) as client:
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
        assert resp.choices[0].message.content == "Hello!" and resp.request_id == "req_local"
        assert server.log[-1][0] == "/v1/chat/completions"
        assert server.log[-1][1]["authorization"] == f"Bearer {KEY}"

        server.log.clear()
        server.script[:] = [(401, {}, {"error": {"message": "bad key", "type": "invalid_api_key"}})]
        with pytest.raises(AuthenticationError) as info:
            client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
        assert info.value.status_code == 401 and len(server.log) == 1

        server.log.clear()
        server.script[:] = [(429, {"retry-after": "0.05"}, {"error": {"message": "slow down"}}),
                            (429, {"retry-after": "0.05"}, {"error": {"message": "slow down"}})]
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
        assert resp.retries_taken == 2 and len(server.log) == 3
        assert [h["x-holysheep-retry-count"] for _, h, _ in server.log] == ["0", "1", "2"]
        assert len({h["idempotency-key"] for _, h, _ in server.log}) == 1

        server.script[:] = [(429, {"retry-after": "0"}, {"error": {}})] * 3
        with pytest.raises(RateLimitError):
            client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
        assert _pool_busy(client) == 0


def test_json_401_and_429_async(server: _Server) -> None:
    async def main() -> None:
        async with AsyncClient(api_key=KEY, base_url=_url(server), initial_retry_delay=0) as client:
            resp = await client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
            assert resp.usage is not None and resp.usage.total_tokens == 7
            server.script[:] = [(401, {}, {"error": {"message": "bad key"}})]
            server.log.clear()
            with pytest.raises(AuthenticationError):
                await client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
            assert len(server.log) == 1
            server.script[:] = [(429, {"retry-after-ms": "20"}, {"error": {}}), (500, {}, {"error": {}})]
            resp = await client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES)
            assert resp.retries_taken == 2
            assert _pool_busy(client) == 0

    asyncio.run(main())
