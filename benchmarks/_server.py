"""A minimal, fast HTTP/1.1 server for benchmarks: canned chat JSON or a 22-event SSE stream.

Run as a subprocess (``python benchmarks/_server.py PORT_FILE [latency_ms] [reply_words] [processes]``): one
process pinned to the last core so the client's CPU time is measured alone, or several sharing the port
(SO_REUSEPORT) for benchmarks where one server process would be the bottleneck (`inflight.py`). Keep-alive; no
parsing beyond what is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time

WORDS = ("The quick brown fox jumps over the lazy dog while the sheep count the stars at night. " * 20).split()
REPLY_WORDS = int(sys.argv[3]) if len(sys.argv) > 3 else 330  # ~350 tokens by default
COMPLETION = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "deepseek-v3.2",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": " ".join(WORDS[:REPLY_WORDS])},
                 "finish_reason": "stop", "logprobs": None}],
    "usage": {"prompt_tokens": 20, "completion_tokens": REPLY_WORDS + 20, "total_tokens": REPLY_WORDS + 40},
    "system_fingerprint": "fp_bench",
}).encode()


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000,
            "model": "deepseek-v3.2", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


EVENTS = [_chunk({"role": "assistant", "content": ""})]
EVENTS += [_chunk({"content": w + " "}) for w in WORDS[:19]]
EVENTS += [_chunk({}, "stop"), b"data: [DONE]\n\n"]
assert len(EVENTS) == 22
SSE_BODY = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in EVENTS) + b"0\r\n\r\n"

JSON_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: req_bench\r\n"
             b"content-length: %d\r\n\r\n" % len(COMPLETION))
SSE_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: req_bench\r\n"
            b"transfer-encoding: chunked\r\n\r\n")
MODELS = json.dumps({"object": "list", "data": [{"id": "deepseek-v3.2", "object": "model"}]}).encode()
MODELS_RESP = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(MODELS)
               + MODELS)


class _Protocol(asyncio.Protocol):
    """One keep-alive connection. A Protocol (not streams) keeps the server's CPU per request low, so the
    server is never what limits a client benchmark."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end]
            lower = head.lower()
            idx = lower.find(b"content-length:")
            length = int(lower[idx + 15:lower.find(b"\r\n", idx) if lower.find(b"\r\n", idx) > 0 else None]) \
                if idx >= 0 else 0
            total = end + 4 + length
            if len(self.buf) < total:
                return
            body = self.buf[end + 4:total]
            self.buf = self.buf[total:]
            if head.startswith(b"GET"):
                reply = MODELS_RESP
            elif b'"stream":true' in body or b'"stream": true' in body:
                reply = SSE_HEAD + SSE_BODY
            else:
                reply = JSON_HEAD + COMPLETION
            if self.latency:
                self.loop.call_later(self.latency, self._send, reply)
            else:
                self._send(reply)

    def _send(self, reply: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def _main(port_file: str | None, latency: float, port: int = 0) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Protocol(latency), "127.0.0.1", port, backlog=4096,
                                      reuse_port=port != 0 or PROCS > 1)
    if port_file is not None:
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.sockets[0].getsockname()[1]))
        os.replace(port_file + ".tmp", port_file)
    parent = os.getppid()
    async with server:
        if port_file is not None:
            await server.serve_forever()
        while os.getppid() == parent:  # a forked helper: ends with the first process
            await asyncio.sleep(0.5)


PROCS = int(sys.argv[4]) if len(sys.argv) > 4 else 1
"""Server processes (argv[4], default 1): more than one share the port (SO_REUSEPORT), each on its own core
where there are enough, so that the server is not what limits a client benchmark of thousands in flight."""


if __name__ == "__main__":
    latency_s = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0
    if PROCS <= 1:
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
        asyncio.run(_main(sys.argv[1], latency_s))
    else:
        import socket

        probe = socket.socket()
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        probe.bind(("127.0.0.1", 0))
        chosen = probe.getsockname()[1]
        for _ in range(PROCS - 1):
            if os.fork() == 0:
                asyncio.run(_main(None, latency_s, chosen))
                os._exit(0)
        probe.close()
        time.sleep(0.5)  # the port file (the client's go) once the forked servers listen too
        asyncio.run(_main(sys.argv[1], latency_s, chosen))
