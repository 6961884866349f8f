"""A 200 stream that closes before its first event lost nothing: it is retried like a connection error and
may go to a fallback (issue 17 item 7). Checked against a real asyncio server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import pytest

from holysheep import (
    APIConnectionError,
    AsyncClient,
    Client,
    Fallback,
    StreamInterruptedError,
)
from holysheep.testing import FakeServer

pytestmark = pytest.mark.integration

MSG = [{"role": "user", "content": "hello there"}]
_CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
          "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}]}


class EmptyStreamServer:
    """Answers each POST with ``200 text/event-stream``; the first ``empty`` of them close with no body
    (as llama.cpp does for a prompt longer than the context), the rest send one chunk (or, with
    ``cut_after_one``, one chunk and then close without finishing)."""

    def __init__(self, empty: int, *, cut_after_one: bool = False) -> None:
        self.empty = empty
        self.cut_after_one = cut_after_one
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._server = server
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            self.requests += 1
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
            if self.requests > self.empty:
                writer.write(b"data: " + json.dumps(_CHUNK).encode() + b"\n\n")
                if not self.cut_after_one:
                    done = dict(_CHUNK, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])
                    writer.write(b"data: " + json.dumps(done).encode() + b"\n\ndata: [DONE]\n\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> EmptyStreamServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


@pytest.fixture
def flaky() -> Iterator[EmptyStreamServer]:
    with EmptyStreamServer(empty=1) as s:
        yield s


def test_sync_empty_stream_is_retried(flaky: EmptyStreamServer) -> None:
    client = Client(api_key="EMPTY", base_url=flaky.url, max_retries=2, initial_retry_delay=0)
    with client, client.chat.completions.create(model="m", messages=MSG, stream=True) as stream:  # type: ignore[arg-type]
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "hi" and flaky.requests == 2 and stream.retries_taken == 1


@pytest.mark.parametrize("backend", ["httpx", "aiohttp"])
async def test_async_empty_stream_is_retried(flaky: EmptyStreamServer, backend: str) -> None:
    async with AsyncClient(api_key="EMPTY", base_url=flaky.url, max_retries=2, initial_retry_delay=0,
                           http_backend=backend) as client:  # type: ignore[arg-type]
        stream = await client.chat.completions.create(model="m", messages=MSG, stream=True)  # type: ignore[arg-type]
        async with stream:
            final = await stream.get_final_completion()
    assert final.choices[0].message.content == "hi" and flaky.requests == 2 and stream.retries_taken == 1


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_always_empty_stream_fails_as_connection_error_saying_nothing_arrived(kind: str) -> None:
    with EmptyStreamServer(empty=10**6) as server:
        kwargs = {"api_key": "EMPTY", "base_url": server.url, "max_retries": 2, "initial_retry_delay": 0}
        if kind == "sync":
            with Client(**kwargs) as client, pytest.raises(APIConnectionError) as info:  # type: ignore[arg-type]
                client.chat.completions.create(model="m", messages=MSG, stream=True)  # type: ignore[arg-type]
        else:
            async def main() -> None:
                async with AsyncClient(**kwargs) as client:  # type: ignore[arg-type]
                    await client.chat.completions.create(model="m", messages=MSG, stream=True)  # type: ignore[arg-type]

            with pytest.raises(APIConnectionError) as info:
                asyncio.run(main())
        assert server.requests == 3
    err = info.value
    assert not isinstance(err, StreamInterruptedError)
    assert "closed the stream before its first event (EOF): nothing arrived" in str(err)
    assert "part of the output had already arrived" not in str(err)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_empty_stream_goes_to_the_fallback(kind: str) -> None:
    with EmptyStreamServer(empty=10**6) as primary, FakeServer() as backup:
        kwargs = {"api_key": "EMPTY", "base_url": primary.url, "max_retries": 1, "initial_retry_delay": 0,
                  "fallbacks": [Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")]}
        if kind == "sync":
            with Client(**kwargs) as client:  # type: ignore[arg-type]
                with client.chat.completions.create(model="m", messages=MSG, stream=True) as s:  # type: ignore[arg-type]
                    final = s.get_final_completion()
                stats = client.stats()
        else:
            async def main() -> tuple[object, dict[str, object]]:
                async with AsyncClient(**kwargs) as client:  # type: ignore[arg-type]
                    s = await client.chat.completions.create(model="m", messages=MSG, stream=True)  # type: ignore[arg-type]
                    async with s:
                        return await s.get_final_completion(), client.stats()

            final, stats = asyncio.run(main())  # type: ignore[assignment]
        assert primary.requests == 2 and len(backup.requests) == 1
    assert final.choices[0].message.content == "hello there"  # type: ignore[attr-defined]
    assert final.served_by == "backup"  # type: ignore[attr-defined]
    rows = stats["endpoints"]
    assert rows["primary"] == {"requests": 1, "successes": 0, "failures": 1}  # type: ignore[index]
    assert stats["fallback_served"] == 1


def test_stream_cut_after_first_event_is_still_interrupted_not_retried() -> None:
    with EmptyStreamServer(empty=0, cut_after_one=True) as server:
        with Client(api_key="EMPTY", base_url=server.url, max_retries=2, initial_retry_delay=0) as client:
            stream = client.chat.completions.create(model="m", messages=MSG, stream=True)  # type: ignore[arg-type]
            with stream, pytest.raises(StreamInterruptedError) as info:
                for _ in stream:
                    pass
        assert server.requests == 1
    assert info.value.partial_text == "hi" and "after 1 chunks" in str(info.value)
