"""A TLS server on 127.0.0.1 that speaks HTTP/2 (and HTTP/1.1) by ALPN: hypercorn with a small ASGI app.

It records each request's protocol (``"2"`` or ``"1.1"``) and the client's ``(host, port)``: one port is one
TCP connection, so ``connections`` counts them. ``statuses`` answers the next requests with those error
statuses first (a retry test); ``gate`` holds requests until that many are in flight; ``delay`` waits before
each answer; a ``"stream": true`` body gets SSE chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trustme

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Seen:
    http_version: str
    client: tuple[str, int]
    path: str
    body: dict[str, Any]


def completion(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-h2", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-h2", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class H2Server:
    """``with H2Server(ca) as server:`` serves ``https://127.0.0.1:{server.port}/v1``."""

    def __init__(self, ca: trustme.CA, certfile: str, *, http2: bool = True, delay: float = 0.0) -> None:
        self.certfile = certfile
        ca.issue_cert("127.0.0.1", "localhost", "api.test").private_key_and_cert_chain_pem.write_to_path(certfile)
        self.http2 = http2
        self.delay = delay
        self.statuses: list[int] = []
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self.gate = 0
        """Hold every request until this many are in flight together (at most 5 s): proves they overlap."""
        self._gate_open: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(512)
        self.port: int = self._sock.getsockname()[1]

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}/v1"

    @property
    def connections(self) -> int:
        return len({s.client for s in self.seen})

    @property
    def protocols(self) -> set[str]:
        return {s.http_version for s in self.seen}

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = json.loads(raw) if raw else {}
        client = scope["client"]
        self.seen.append(Seen(scope["http_version"], (client[0], client[1]), scope["path"], body))
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.gate:
                if self._gate_open is None:
                    self._gate_open = asyncio.Event()
                if self.in_flight >= self.gate:
                    self._gate_open.set()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._gate_open.wait(), 5)
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.statuses:
                status = self.statuses.pop(0)
                error = {"error": {"message": f"scripted {status}", "type": "server_error", "code": None}}
                await self._reply(send, status, json.dumps(error).encode())
            elif body.get("stream"):
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"text/event-stream")]})
                for piece in (chunk({"role": "assistant", "content": "one"}), chunk({"content": " two"}),
                              chunk({}, "stop"), b"data: [DONE]\n\n"):
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            else:
                await self._reply(send, 200, json.dumps(completion(f"via HTTP/{scope['http_version']}")).encode())
        finally:
            self.in_flight -= 1

    @staticmethod
    async def _reply(send: Send, status: int, payload: bytes) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    def __enter__(self) -> H2Server:
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        config = Config()
        config.bind = [f"fd://{os.dup(self._sock.fileno())}"]  # hypercorn closes the fd it is given
        config.certfile = config.keyfile = self.certfile
        config.alpn_protocols = ["h2", "http/1.1"] if self.http2 else ["http/1.1"]
        config.accesslog = config.errorlog = None
        config.h2_max_concurrent_streams = 1000
        config.keep_alive_max_requests = 100_000
        ready = threading.Event()

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            self._stop = asyncio.Event()
            loop.call_soon(ready.set)
            loop.run_until_complete(serve(self.app, config, shutdown_trigger=self._stop.wait))  # type: ignore[arg-type]
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()
