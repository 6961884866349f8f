"""A stream whose whole body comes in one read: its first chunk is timed when it was decoded, not when the
stream is handed over (by then the read has also decoded ``[DONE]`` and ended the stream). Before, the first
chunk came out later than the end, and the SDK dropped ``time_per_output_chunk`` as a negative amount."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

pytest.importorskip("opentelemetry.sdk")

from holysheep import AsyncClient, Client

from ..core.conftest import BASE, KEY
from ..streaming.conftest import chunk, sse
from .conftest import MESSAGES, MODEL, Recorder
from .otel_util import instrumented

BODY = sse(chunk(role="assistant", content=""), *(chunk(w) for w in "abcd"), chunk(finish="stop"), "[DONE]")


class TickingClock:
    """Each reading is 0.0625 s after the one before: the later something is stamped, the larger its time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.0625
        return self.now


def _events(recorder: Recorder) -> tuple[float, float]:
    (first,) = recorder.of("on_stream_first_chunk")
    (end,) = recorder.of("on_stream_end")
    return first.elapsed_s, end.elapsed_s


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_first_chunk_of_a_stream_read_in_one_piece_comes_before_its_end(kind: str) -> None:
    recorder = Recorder()
    clock = TickingClock()
    with respx.mock:
        respx.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=BODY))
        if kind == "sync":
            with Client(api_key=KEY, hooks=[recorder]) as client:
                client._use_clock(clock)
                with client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as stream:
                    texts = [c.choices[0].delta.content for c in stream if c.choices]
        else:
            async def main() -> list[Any]:
                async with AsyncClient(api_key=KEY, hooks=[recorder], http_client=httpx.AsyncClient()) as client:
                    client._use_clock(clock)
                    stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
                    async with stream:
                        return [c.choices[0].delta.content async for c in stream if c.choices]
            texts = asyncio.run(main())
    assert texts == ["", "a", "b", "c", "d", None]
    first, end = _events(recorder)
    assert 0 < first < end
    assert recorder.of("on_stream_end")[0].chunks == 6


@pytest.fixture
def one_write_server() -> Iterator[str]:
    """A server on 127.0.0.1 that answers every request with the whole stream in one write."""
    loop = asyncio.new_event_loop()
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: " + str(len(BODY)).encode()
            + b"\r\n\r\n")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in request.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(head + BODY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        async def stop() -> None:
            server.close()
            await server.wait_closed()
        asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_time_per_output_chunk_is_recorded_on_the_default_async_transport(
        one_write_server: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with AsyncClient(api_key=KEY, base_url=one_write_server) as client:
            for _ in range(3):
                stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
                async with stream:
                    assert [c async for c in stream][-1].choices[0].finish_reason == "stop"

    with caplog.at_level(logging.WARNING), instrumented() as t:
        asyncio.run(main())
    assert not [r for r in caplog.records if "non-negative" in r.getMessage()]
    (per_chunk,) = t.points("gen_ai.client.operation.time_per_output_chunk")
    (first,) = t.points("gen_ai.client.operation.time_to_first_chunk")
    assert (per_chunk.count, first.count) == (9, 3) and per_chunk.min >= 0  # 3 gaps between 4 content chunks, 3 streams
    spans = [s for s in t.spans() if s.name == f"chat {MODEL}"]
    assert len(spans) == 3
