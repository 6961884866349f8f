"""Helpers for streaming tests: SSE bodies and a byte stream that can fail mid-way."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from .._fakes import FakeClock as FakeClock  # (re-exported: the streaming and observability tests import it here)


def chunk(content: str | None = None, *, role: str | None = None, finish: str | None = None,
          tool_calls: list[dict[str, Any]] | None = None, index: int = 0) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v3.2",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def sse(*events: dict[str, Any] | str) -> bytes:
    out = []
    for e in events:
        out.append(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n")
    return "".join(out).encode()


WORDS = ["Hello", " there", ", ", "friend", "!"]
BODY = sse(chunk(role="assistant", content=""), *[chunk(w) for w in WORDS], chunk(finish="stop"), "[DONE]")


class PartsStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Yields ``parts``; an Exception instance among them is raised at that point."""

    def __init__(self, *parts: bytes | Exception) -> None:
        self.parts = parts
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for p in self.parts:
            if isinstance(p, Exception):
                raise p
            yield p

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for p in self.parts:
            if isinstance(p, Exception):
                raise p
            yield p

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def sse_response(*parts: bytes | Exception, status: int = 200) -> httpx.Response:
    return httpx.Response(status, headers={"content-type": "text/event-stream", "x-request-id": "req_s"},
                          stream=PartsStream(*parts))


class ClockedParts(PartsStream):
    """``PartsStream`` whose float parts advance ``clock`` by that many seconds: the server's time to send the
    next part, as the client's clock sees it."""

    def __init__(self, clock: FakeClock, *parts: bytes | float | Exception) -> None:
        super().__init__(*(p for p in parts if not isinstance(p, float)))
        self.clock = clock
        self.timed = parts

    def __iter__(self) -> Iterator[bytes]:
        for p in self.timed:
            if isinstance(p, float):
                self.clock.advance(p)
            elif isinstance(p, Exception):
                raise p
            else:
                yield p

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for p in self.timed:
            if isinstance(p, float):
                self.clock.advance(p)
            elif isinstance(p, Exception):
                raise p
            else:
                yield p


def clocked_reply(clock: FakeClock, headers_after: float, *parts: bytes | float | Exception,
                  status: int = 200) -> Any:
    """A respx side effect: the server takes ``headers_after`` seconds (on ``clock``) to answer, then streams
    ``parts`` (floats are the gaps between them)."""

    def reply(request: httpx.Request) -> httpx.Response:
        clock.advance(headers_after)
        return httpx.Response(status, headers={"content-type": "text/event-stream", "x-request-id": "req_s"},
                              stream=ClockedParts(clock, *parts))

    return reply
